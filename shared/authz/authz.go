// Package authz is the RBAC decision engine of the API: the one
// implementation of the rules of docs/api.md#access-control (the model and
// the engine are explained in docs/rbac.md).
//
// It is pure: no I/O, no AWS, no global mutable state. The Lambda authorizer
// and every function that needs a second decision call the same code, so the
// rules cannot drift apart. The caller loads the principal's held roles
// (accepted invitations, direct or through groups) and the target account's
// ancestors; this package decides.
//
// Order of checks (see Evaluate): CheckPath, SelfService, the key's account,
// ScopeFor, Applicable, Decide.
//
// Path patterns (NormalizePattern): a missing "/v2" prefix is added; "*" is
// one whole, non-empty path segment; "**" matches the rest of the path
// (nothing, or anything including "/") and therefore ends the pattern, either
// as its own segment ("/v2/applications/**") or glued to the last one
// ("/v2/applications**"). Every other character is literal. Patterns are
// compiled with github.com/gobwas/glob using '/' as the separator
// (TestGobwasAgreesWithSpec checks it against the rule). Glued "*" and "**"
// in the middle are refused: besides being outside the rule's wording, gobwas matches them by backtracking,
// which is exponential in the number of glued stars and would let one role
// slow every decision of its account.
package authz

// Permission is one entry of a role's permissions (docs/api.md#permission-patterns). It is the wire
// shape: ValidatePermissions checks and normalises it.
type Permission struct {
	Method string   `json:"method"` // GET POST PATCH PUT DELETE
	Spec   []string `json:"spec"`   // path patterns
	Effect string   `json:"effect"` // "permit" | "deny"
}

// Effects of a permission (docs/api.md#permission-patterns).
const (
	EffectPermit = "permit"
	EffectDeny   = "deny"
)

// Methods is the closed list of methods a permission may name,
// in the order used by error messages.
func Methods() []string { return []string{"GET", "POST", "PATCH", "PUT", "DELETE"} }

// methodNum maps a method to a small array index so the per-method index
// of a compiled role is an array access, not a map lookup. Methods are
// case-sensitive (RFC 9110); -1 means "no permission can name it", e.g. HEAD.
func methodNum(m string) int {
	switch m {
	case "GET":
		return 0
	case "POST":
		return 1
	case "PATCH":
		return 2
	case "PUT":
		return 3
	case "DELETE":
		return 4
	}
	return -1
}

const numMethods = 5

// Role is a role as stored: the fields the decision needs.
type Role struct {
	ID, AccountID, Name string
	// Inheritable (docs/api.md#inheritable-roles): false = the role applies in its own account
	// only; true = it applies ONLY in the sub-accounts (any depth) of its
	// account, never in the account itself.
	Inheritable bool
	// EntitlementAdministrator marks the platform operator's entitlement
	// administrator roles. Only the bootstrap sets it (no request can), and
	// only such a role can grant a ClassAdmin request.
	EntitlementAdministrator bool
	Permissions              []Permission
}

// Href is the role's reference, /v2/accounts/{AccountID}/roles/{ID}.
func (r Role) Href() string { return "/v2/accounts/" + r.AccountID + "/roles/" + r.ID }
