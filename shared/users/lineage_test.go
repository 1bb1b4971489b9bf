package users_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"cads/shared/access"
	"cads/shared/domain"
	"cads/shared/users"
)

// keyCall authenticates secret with the authorizer's own service, as the
// gateway would, and sends the request to the users function as the
// principal it yields (with the key's lineage in the context).
func (e env) keyCall(secret, method, resource, path string, params map[string]string, body any) (int, map[string]any) {
	e.t.Helper()
	svc := access.New(access.NewStore(e.deps.Store), slog.New(slog.NewTextHandler(io.Discard, nil)))
	res, err := svc.Authorize(context.Background(), secret, method, path)
	if err != nil {
		e.t.Fatalf("authorize %s %s: %v", method, path, err)
	}
	if !res.Decision.Allowed {
		e.t.Fatalf("authorize %s %s: denied: %s", method, path, res.Decision.Reason)
	}
	return e.call(res.Principal, method, resource, path, params, nil, body)
}

func (e env) mint(secret string, body map[string]any) (int, map[string]any) {
	return e.keyCall(secret, "POST", "/v2/users/{id}/access-keys", "/v2/users/self/access-keys", map[string]string{"id": "self"}, body)
}

func (e env) switchInto(secret, account string) (int, map[string]any) {
	return e.keyCall(secret, "POST", "/v2/users/self/authorization", "/v2/users/self/authorization", nil, map[string]any{"account": "/v2/accounts/" + account})
}

func expiryOf(t *testing.T, body map[string]any) *time.Time {
	t.Helper()
	s, ok := body["expiry"].(string)
	if !ok {
		return nil
	}
	e, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("expiry %q: %v", s, err)
	}
	return &e
}

func (e env) stored(principal string, body map[string]any) domain.AccessKey {
	e.t.Helper()
	k, err := e.deps.Store.Principals.GetKey(context.Background(), principal, body["id"].(string))
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// Keys minted with a session key join its lineage and expire no later
// than it: no expiry asked gets the session key's, a later one is a 400, an
// earlier one is kept; a session key minted with a session key too. A key
// minted with a persistent key is independent (rotation).
func TestKeysMintedWithASessionKeyAreCapped(t *testing.T) {
	e := newEnv(t)
	op, root := e.boot.Secret, e.boot.RootAccount
	opKey := domain.KeyRef{Principal: e.boot.Operator, ID: e.boot.KeyID}

	st, sess := e.switchInto(op, root)
	if st != 200 {
		t.Fatalf("switch: %d %v", st, sess)
	}
	sessExp := expiryOf(t, sess)
	if sessExp == nil || sessExp.Sub(time.Now()) > users.SessionKeyLifetime || sessExp.Sub(time.Now()) < users.SessionKeyLifetime-time.Minute {
		t.Fatalf("session key expiry %v, want about %v from now", sessExp, users.SessionKeyLifetime)
	}
	sk := e.stored(e.boot.Operator, sess)
	if sk.Origin == nil || *sk.Origin != opKey || sk.Parent == nil || *sk.Parent != opKey {
		t.Fatalf("session key lineage: origin %v parent %v, want the operator key", sk.Origin, sk.Parent)
	}
	secret := sess["secret_key"].(string)
	sessRef := domain.KeyRef{Principal: e.boot.Operator, ID: sk.ID}

	// No expiry asked: the session key's, stated in the response.
	st, k := e.mint(secret, map[string]any{"type": "bearer"})
	if got := expiryOf(t, k); st != 200 || got == nil || !got.Equal(*sessExp) || k["durability"] != "persistent" {
		t.Fatalf("key minted with a session key: %d expiry %v, want %v: %v", st, got, sessExp, k)
	}
	kk := e.stored(e.boot.Operator, k)
	if kk.Origin == nil || *kk.Origin != opKey || kk.Parent == nil || *kk.Parent != sessRef {
		t.Fatalf("minted key lineage: origin %v parent %v", kk.Origin, kk.Parent)
	}
	// A later expiry: refused, nothing written.
	before, _ := e.deps.Store.Principals.ListKeys(context.Background(), e.boot.Operator)
	later := sessExp.Add(time.Hour).Format(time.RFC3339)
	st, body := e.mint(secret, map[string]any{"type": "bearer", "expiry": later})
	msg, _ := body["error"].(map[string]any)["message"].(string)
	if st != 400 || !strings.Contains(msg, sessExp.UTC().Format(time.RFC3339)) {
		t.Fatalf("later expiry: %d %v, want a 400 naming the limit", st, body)
	}
	if after, _ := e.deps.Store.Principals.ListKeys(context.Background(), e.boot.Operator); len(after) != len(before) {
		t.Fatalf("a refused key was written: %d keys, then %d", len(before), len(after))
	}
	// An earlier one is the caller's choice.
	earlier := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	st, k = e.mint(secret, map[string]any{"type": "bearer", "expiry": earlier.Format(time.RFC3339)})
	if got := expiryOf(t, k); st != 200 || got == nil || !got.Equal(earlier) {
		t.Fatalf("earlier expiry: %d %v", st, k)
	}
	// For another user (the operator's route): capped the same way.
	_, u := e.call(e.operator(), "POST", "/v2/users", "/v2/users", nil, nil, map[string]any{"email": "dev@example.com"})
	uid := u["id"].(string)
	st, k = e.keyCall(secret, "POST", "/v2/users/{id}/access-keys", "/v2/users/"+uid+"/access-keys", map[string]string{"id": uid}, map[string]any{"type": "bearer"})
	if got := expiryOf(t, k); st != 200 || got == nil || !got.Equal(*sessExp) {
		t.Fatalf("key for another user minted with a session key: %d %v", st, k)
	}
	if uk := e.stored(uid, k); uk.Origin == nil || *uk.Origin != opKey {
		t.Fatalf("another user's key minted with a session key has origin %v", uk.Origin)
	}

	// A session key minted with a session key: no later than its parent
	// (twelve hours from now would be later), same origin.
	st, sess2 := e.switchInto(secret, root)
	if got := expiryOf(t, sess2); st != 200 || got == nil || got.After(*sessExp) {
		t.Fatalf("session of a session: %d expiry %v, parent's %v", st, got, sessExp)
	}
	s2 := e.stored(e.boot.Operator, sess2)
	if s2.Origin == nil || *s2.Origin != opKey || *s2.Parent != sessRef {
		t.Fatalf("session of a session lineage: origin %v parent %v", s2.Origin, s2.Parent)
	}
	// A key minted with the minted key (persistent, but in the lineage):
	// capped by it, still the operator key's lineage.
	st, k2 := e.mint(k["secret_key"].(string), map[string]any{"type": "bearer"})
	if got := expiryOf(t, k2); st != 200 || got == nil || !got.Equal(*sessExp) {
		t.Fatalf("key minted with a key minted with a session key: %d %v", st, k2)
	}
	if kk2 := e.stored(uid, k2); kk2.Origin == nil || *kk2.Origin != opKey {
		t.Fatalf("origin %v, want the operator key", kk2.Origin)
	}

	// A persistent key mints an independent key: rotation.
	st, rot := e.mint(op, map[string]any{"type": "bearer"})
	if st != 200 || rot["expiry"] != nil {
		t.Fatalf("rotated key: %d %v", st, rot)
	}
	if rk := e.stored(e.boot.Operator, rot); rk.Origin != nil || rk.Parent != nil {
		t.Fatalf("rotated key has a lineage: %+v", rk)
	}
	// A session key lasts no longer than the persistent key it came from.
	st, short := e.mint(op, map[string]any{"type": "bearer", "expiry": earlier.Format(time.RFC3339), "account": "/v2/accounts/" + root})
	if st != 200 {
		t.Fatalf("short-lived key: %d %v", st, short)
	}
	st, sess3 := e.switchInto(short["secret_key"].(string), root)
	if got := expiryOf(t, sess3); st != 200 || got == nil || !got.Equal(earlier) {
		t.Fatalf("session key of a key expiring at %v: %d %v", earlier, st, sess3)
	}
}
