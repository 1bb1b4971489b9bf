package domain

import "time"

// MetricPrototype is the definition of a custom metric, kept per account:
// which log type it reads, the expression computing its value, an optional
// filter and grouping. Prototypes are written whole and never changed.
type MetricPrototype struct {
	ID               string    `dynamodbav:"id"`
	Account          string    `dynamodbav:"account"`
	DefaultName      string    `dynamodbav:"default_name"`
	Display          string    `dynamodbav:"display"`
	Description      string    `dynamodbav:"description,omitempty"`
	Expression       string    `dynamodbav:"expression"`
	Filter           *string   `dynamodbav:"filter,omitempty"`
	GroupBy          string    `dynamodbav:"group_by,omitempty"`
	LogType          string    `dynamodbav:"log_type"`
	DefaultFrequency int       `dynamodbav:"default_frequency"`
	CreatedBy        string    `dynamodbav:"created_by,omitempty"`
	Created          time.Time `dynamodbav:"created"`
}
