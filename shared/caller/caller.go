// Package caller is who is calling, as the authorizer authenticated it,
// and how that travels in the authorizer context. It links nothing of the
// HTTP layer, so the permission check, the services and the queue workers
// can name a caller without linking apigw.
package caller

import (
	"fmt"
	"strings"
	"time"
)

// Principal is who the authorizer authenticated. The authorizer puts it in
// its context and API Gateway hands it to the function; functions trust it
// and never re-authenticate.
type Principal struct {
	ID        string // user or service-user id
	Kind      string // "user" | "service_user"
	Email     string
	AccountID string // the account the key is authenticated into; "" for none
	KeyID     string
	// The key's lineage as the authorizer read it (docs/rbac.md, "Key
	// lineage"): what a key minted with this one inherits.
	KeyDurability   string     // "persistent" | "session"
	KeyExpiry       *time.Time // nil: the key does not expire
	OriginPrincipal string     // the key at the root of its lineage; "" when it has none
	OriginKey       string
	// Target is the account the request acts in (the one its path names,
	// else the key's) and TargetAncestors that account's ancestors, root
	// first, as the authorizer decided with them: where the request's
	// audit event is listed (docs/data-model.md, Audit events).
	Target          string
	TargetAncestors []string
}

// Minted reports whether the key was minted under another (a session key,
// or a key created with one): keys it mints join that lineage and expire
// no later than it.
func (p Principal) Minted() bool {
	return p.KeyDurability == "session" || p.OriginKey != ""
}

// Authorizer context keys: one definition for the writer (the authorizer)
// and the readers (every function).
const (
	ctxPrincipal = "principal"
	ctxKind      = "kind"
	ctxEmail     = "email"
	ctxAccount   = "account"
	ctxKey       = "key"
	ctxKeyDur    = "key_durability"
	ctxKeyExpiry = "key_expiry"
	ctxOriginP   = "origin_principal"
	ctxOriginKey = "origin_key"
	ctxTarget    = "target"
	ctxTargetAnc = "target_ancestors"
)

// Context renders p as an authorizer context (string values only, as API
// Gateway requires).
func (p Principal) Context() map[string]any {
	exp := ""
	if p.KeyExpiry != nil {
		exp = p.KeyExpiry.UTC().Format(time.RFC3339Nano)
	}
	return map[string]any{ctxPrincipal: p.ID, ctxKind: p.Kind, ctxEmail: p.Email, ctxAccount: p.AccountID, ctxKey: p.KeyID,
		ctxKeyDur: p.KeyDurability, ctxKeyExpiry: exp, ctxOriginP: p.OriginPrincipal, ctxOriginKey: p.OriginKey,
		ctxTarget: p.Target, ctxTargetAnc: strings.Join(p.TargetAncestors, ",")}
}

// FromAuthorizer reads a principal back from the authorizer context
// API Gateway passes in requestContext.authorizer.
func FromAuthorizer(m map[string]any) (Principal, error) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	p := Principal{ID: str(ctxPrincipal), Kind: str(ctxKind), Email: str(ctxEmail), AccountID: str(ctxAccount), KeyID: str(ctxKey),
		KeyDurability: str(ctxKeyDur), OriginPrincipal: str(ctxOriginP), OriginKey: str(ctxOriginKey), Target: str(ctxTarget)}
	if a := str(ctxTargetAnc); a != "" {
		p.TargetAncestors = strings.Split(a, ",")
	}
	if p.ID == "" || p.KeyID == "" {
		return Principal{}, fmt.Errorf("authorizer context has no principal")
	}
	if s := str(ctxKeyExpiry); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return Principal{}, fmt.Errorf("authorizer context: key expiry: %w", err)
		}
		p.KeyExpiry = &t
	}
	return p, nil
}
