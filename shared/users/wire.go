// Package users serves the users function: users, their access keys, and
// the caller's own authorization (who am I, switch account, and the policy
// simulator). Its handlers are plain net/http, run as a Lambda through
// apigw.Lambda and called in-process by the local platform and the tests.
package users

import (
	"cads/shared/domain"
	"time"
)

// User is the wire shape of a user.
type User struct {
	ID    string `json:"id"`
	Href  string `json:"href"`
	Email string `json:"email"`
	// Name is absent, not "", for a user created without one: a name,
	// when there is one, is never empty (docs/api.md#creating-users).
	Name    string    `json:"name,omitempty"`
	Phone   string    `json:"phone,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func userOut(p domain.Principal) User {
	return User{ID: p.ID, Href: userHref(p.ID), Email: p.Email, Name: p.Name, Phone: p.Phone, Created: p.Created, Updated: p.Updated}
}

func userHref(id string) string { return "/v2/users/" + id }

// AccessKey is the wire shape of a key; the secret never appears in it.
type AccessKey struct {
	ID         string     `json:"id"`
	Href       string     `json:"href"`
	Type       string     `json:"type"`
	Durability string     `json:"durability"`
	Account    *string    `json:"account,omitempty"`
	Expiry     *time.Time `json:"expiry,omitempty"`
	LastUsed   *time.Time `json:"last_used,omitempty"`
	Created    time.Time  `json:"created"`
}

// AccessKeySecret is returned once, when a key is made.
type AccessKeySecret struct {
	AccessKey
	SecretKey string `json:"secret_key"`
}

func keyOut(k domain.AccessKey) AccessKey {
	out := AccessKey{ID: k.ID, Href: userHref(k.PrincipalID) + "/access-keys/" + k.ID, Type: k.Type,
		Durability: k.Durability, Expiry: k.Expiry, LastUsed: k.LastUsed, Created: k.Created}
	if k.Account != "" {
		h := accountHref(k.Account)
		out.Account = &h
	}
	return out
}

func accountHref(id string) string { return "/v2/accounts/" + id }

// Authorization is GET /v2/users/self/authorization: the current key, the
// account it is authenticated into, and, when method and path are given,
// the decision the authorizer would make for them with its explanation.
type Authorization struct {
	AccessKey
	Principal string    `json:"principal"`
	Decision  *Decision `json:"decision,omitempty"`
}

// Decision is the policy simulator's answer.
type Decision struct {
	Method     string `json:"method"`
	Path       string `json:"path"`
	Allowed    bool   `json:"allowed"`
	Role       string `json:"role,omitempty"`
	RoleName   string `json:"role_name,omitempty"`
	Permission *Grant `json:"permission,omitempty"`
	Reason     string `json:"reason"`
}

// Grant names the permission that decided a request.
type Grant struct {
	Index  int    `json:"index"`
	Method string `json:"method"`
	Spec   string `json:"spec"`
	Effect string `json:"effect"`
}
