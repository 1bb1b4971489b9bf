package authz

import (
	"slices"
	"strconv"
	"strings"
)

// Scope says which roles apply to a request (docs/api.md#applicable-roles).
type Scope int

const (
	// ScopeAuthenticated: the request is decided in the account the key is
	// authenticated into: that account's inheritable:false roles plus its
	// ancestors' inheritable:true roles.
	ScopeAuthenticated Scope = iota
	// ScopeSubAccount: /v2/accounts/{id}/... (and PATCH/DELETE
	// /v2/accounts/{id}) where {id} is strictly below the key's account:
	// only the inheritable:true roles of {id}'s ancestors apply, not {id}'s
	// own roles (the caller is not authenticated into {id}).
	ScopeSubAccount
	// ScopeSwitch: plain GET /v2/accounts/{id}, decided as if authenticated
	// into {id} (it is the check for switching accounts: docs/api.md#switching-accounts).
	ScopeSwitch
)

func (s Scope) String() string {
	switch s {
	case ScopeAuthenticated:
		return "authenticated"
	case ScopeSubAccount:
		return "sub-account"
	case ScopeSwitch:
		return "switch"
	}
	return "Scope(" + strconv.Itoa(int(s)) + ")"
}

// ScopeError refuses a request whose target account is neither the key's
// account nor below it. It maps to a 403 whose message is Error().
type ScopeError struct {
	KeyAccount, Target string
	Reason             string
}

func (e *ScopeError) Error() string { return e.Reason }

const accountsPrefix = "/v2/accounts/"

// accountInPath returns {id} of /v2/accounts/{id} and /v2/accounts/{id}/...,
// and whether the path is exactly /v2/accounts/{id}.
func accountInPath(path string) (id string, plain bool) {
	rest, ok := strings.CutPrefix(path, accountsPrefix)
	if !ok {
		return "", false
	}
	id, _, sub := strings.Cut(rest, "/")
	return id, !sub
}

// Target tells which account a request is decided in: keyAccount for most
// paths, {id} for /v2/accounts/{id} and /v2/accounts/{id}/... (any method).
// fromPath reports that the id came from the path: the caller must then load
// that account's ancestors and call ScopeFor. The path should have passed
// CheckPath.
func Target(method, path, keyAccount string) (accountID string, fromPath bool) {
	if id, _ := accountInPath(path); id != "" {
		return id, true
	}
	return keyAccount, false
}

// ScopeFor decides the scope once the target account's ancestors are known
// (root first, excluding the account itself). Plain GET /v2/accounts/{id} is
// always ScopeSwitch. Otherwise the target must be the key's account
// (ScopeAuthenticated) or strictly below it (ScopeSubAccount); anything else
// is a *ScopeError (403). target must be what Target returned for the same
// request; a mismatch is refused rather than trusted.
func ScopeFor(method, path, keyAccount, target string, targetAncestors []string) (Scope, error) {
	want, fromPath := Target(method, path, keyAccount)
	if target != want {
		return 0, &ScopeError{KeyAccount: keyAccount, Target: target,
			Reason: "account " + quoteShort(target) + " is not the account this request addresses (" + quoteShort(want) + ")"}
	}
	if _, plain := accountInPath(path); fromPath && plain && method == "GET" {
		return ScopeSwitch, nil
	}
	switch {
	case keyAccount == "":
		return 0, &ScopeError{Target: target, Reason: msgNoAccount}
	case target == keyAccount:
		return ScopeAuthenticated, nil
	case slices.Contains(targetAncestors, keyAccount):
		return ScopeSubAccount, nil
	}
	return 0, &ScopeError{KeyAccount: keyAccount, Target: target,
		Reason: "account " + quoteShort(target) + " is neither the account this key is authenticated into (" + quoteShort(keyAccount) + ") nor one of its sub-accounts"}
}

const msgNoAccount = "this key is authenticated into no account; switch with POST /v2/users/self/authorization"

// Applicable filters the held roles (those whose invitations the principal
// accepted, directly or through a group) down to those that apply in account
// target, whose ancestors are given root first (excluding target), in scope.
// Roles of other hierarchies never apply. Duplicates (a role
// held directly and through a group) are kept once; order is preserved.
func Applicable(held []*CompiledRole, target string, ancestors []string, scope Scope) []*CompiledRole {
	out := make([]*CompiledRole, 0, len(held))
	seen := make(map[string]struct{}, len(held))
	for _, r := range held {
		if r == nil {
			continue
		}
		var ok bool
		if r.role.Inheritable {
			// Only in sub-accounts: never in its own account, even if a
			// caller wrongly lists target among its ancestors.
			ok = r.role.AccountID != target && slices.Contains(ancestors, r.role.AccountID)
		} else {
			ok = scope != ScopeSubAccount && r.role.AccountID == target
		}
		if _, dup := seen[r.href]; ok && !dup {
			seen[r.href] = struct{}{}
			out = append(out, r)
		}
	}
	return out
}
