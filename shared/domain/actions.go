package domain

import "time"

// Action is an operation an operator may run on an application (a
// run-action task calls its URL). It lives in the application's partition.
type Action struct {
	App         string `dynamodbav:"app"`
	ID          string `dynamodbav:"id"`
	URL         string `dynamodbav:"url"`
	Name        string `dynamodbav:"name,omitempty"`
	HTTPMethod  string `dynamodbav:"http_method"`
	Description string `dynamodbav:"description,omitempty"`
	// SecretKey signs the requests of run-action. It must be readable to
	// sign, so it is stored as given (docs/tasks.md: production would
	// encrypt it with KMS); the API never returns it.
	SecretKey    string    `dynamodbav:"secret_key,omitempty"`
	Certificates string    `dynamodbav:"certificates,omitempty"`
	Version      int       `dynamodbav:"version"`
	Created      time.Time `dynamodbav:"created"`
	Updated      time.Time `dynamodbav:"updated"`
}
