package domain

import "time"

// PageControl is one version of a page control of an application. Ids are
// numbers (the reference document's hrefs end in digits) drawn from a
// sequence on the application item, so they are never reused.
type PageControl struct {
	App         string `dynamodbav:"app"`
	ID          int    `dynamodbav:"id"`
	Name        string `dynamodbav:"name"`
	Description string `dynamodbav:"description,omitempty"`
	Mode        string `dynamodbav:"mode,omitempty"`
	Enabled     bool   `dynamodbav:"enabled"`
	// Conditions and Actions are the validated JSON documents, kept as
	// text: their shapes belong to shared/applications.
	Conditions string    `dynamodbav:"conditions,omitempty"`
	Actions    string    `dynamodbav:"actions"`
	Version    int       `dynamodbav:"version"`
	Created    time.Time `dynamodbav:"created"` // when this version was made
}

// PageControlVersions is a page control's current version and every
// earlier one (oldest first).
type PageControlVersions struct {
	Current PageControl
	History []PageControl
}
