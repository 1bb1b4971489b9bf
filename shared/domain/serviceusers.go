package domain

import (
	"strings"
	"time"
)

// ServiceUser is a principal of kind service_user: it belongs to one
// account and authenticates with access keys like a user. It is stored as
// the principal item (the authorizer reads it as a Principal) with a
// description and an entry in its account's GSI1 listing.
type ServiceUser struct {
	ID          string    `dynamodbav:"id"`
	Kind        string    `dynamodbav:"kind"`
	Email       string    `dynamodbav:"email"`
	Name        string    `dynamodbav:"name,omitempty"`
	Description string    `dynamodbav:"description,omitempty"`
	Account     string    `dynamodbav:"account"`
	Created     time.Time `dynamodbav:"created"`
	Updated     time.Time `dynamodbav:"updated"`
	// Version grows by one on every change of the item (part of its ETag);
	// 0 on one written before service users had one.
	Version int `dynamodbav:"version"`
}

// ServiceUserEmail is the generated address of a service user: it is how
// invitations name it, and the .invalid top-level domain (RFC 2606) makes
// sure no mail can ever go to it.
func ServiceUserEmail(account, id string) string {
	return id + "@service-users." + account + ".invalid"
}

// ParseServiceUserEmail is ServiceUserEmail's inverse; ok is false for any
// other address.
func ParseServiceUserEmail(email string) (account, id string, ok bool) {
	local, domain, found := strings.Cut(strings.ToLower(email), "@")
	if !found {
		return "", "", false
	}
	rest, ok1 := strings.CutPrefix(domain, "service-users.")
	acct, ok2 := strings.CutSuffix(rest, ".invalid")
	if !ok1 || !ok2 || acct == "" || local == "" || strings.Contains(acct, ".") {
		return "", "", false
	}
	return acct, local, true
}
