package domain

import "time"

// Group is a named set of roles of one account. It lives in the account's
// RBAC partition beside the roles, so the authorizer reads an account's
// roles and groups with one Query and expands a membership at once: a
// member holds the roles the group lists at the time of each request.
type Group struct {
	AccountID string   `dynamodbav:"account"`
	ID        string   `dynamodbav:"id"`
	Name      string   `dynamodbav:"name"`
	Roles     []string `dynamodbav:"roles"` // ids of roles of the same account
	// Version grows by one on every change (optimistic concurrency, as for
	// roles).
	Version int       `dynamodbav:"version"`
	Created time.Time `dynamodbav:"created"`
	Updated time.Time `dynamodbav:"updated"`
}

// MaxGroupRoles bounds a group's roles: each is checked in the group's
// write transaction (100 actions at most).
const MaxGroupRoles = 50
