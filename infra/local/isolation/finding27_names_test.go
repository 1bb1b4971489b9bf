package isolation_test

import (
	"strings"
	"testing"
)

// finding27LookAlikeAccountNames replays finding 1 of issue 27: the owner
// of an account renames it to another tenant's name written so that it
// reads the same (a zero-width space, full-width letters, a Cyrillic
// letter, a capital I for a small l). Each is the 409 of a taken name,
// saying that names are
// compared after normalisation and confusable folding, and naming
// nothing of the other account.
func finding27LookAlikeAccountNames(t *testing.T, w *isoWorld) {
	w = w.on(t)
	m, own := w.tenantRole("Name copier", "owner@f27a.example.com", func(string) map[string][]string { return map[string][]string{"GET": {"/v2/applications"}} })
	// Another tenant's account, named as in the report.
	other := w.must("account beta-906", 200, "POST", "/v2/accounts", w.op, map[string]any{"name": "beta-906"}).str("id")
	pay := w.must("account PayPal-27", 200, "POST", "/v2/accounts", w.op, map[string]any{"name": "PayPal-27"}).str("id")
	w.quiet()
	before := w.snapshot()
	for _, name := range []string{
		"beta\u200b-906",           // zero-width space
		"ｂｅｔａ-906",                 // full-width letters
		"b\u0435ta-906",            // Cyrillic е
		"BETA-9O6",                 // capitals, a letter O for the zero
		"\u0412\u0415TA-906",       // Cyrillic В and Е
		"Tenant\u00a0B",            // another tenant's, with a no-break space
		"T\u0435nant \u0412\u200d", // Cyrillic е and В, a zero-width joiner
		"PayPaI-27",                // a capital I for the small l
		"paypaI-27",                // the same, in other case
		"\u0420ay\u0420a\u0399-27", // Cyrillic Р, Greek capital iota
	} {
		r := w.do("PATCH", acct(own), m.secret, map[string]any{"name": name})
		if r.Status != 409 || !strings.Contains(r.Raw, "reads the same") || !strings.Contains(r.Raw, "confusables") {
			t.Errorf("rename to %q: %d %s; want the 409 of a taken name", name, r.Status, excerpt(r.Raw, 300))
		}
		for _, id := range []string{other, pay, w.b} {
			if strings.Contains(r.Raw, id) {
				t.Errorf("rename to %q: the refusal names the other account %s: %s", name, id, r.Raw)
			}
		}
	}
	// A name of nothing visible reads as every other such name: refused,
	// for an account and for a role.
	for _, name := range []string{"\u200b", "\u200b\u200b", "\u3164", "\u00ad \u2060", "\U000e0001"} {
		if r := w.do("PATCH", acct(own), m.secret, map[string]any{"name": name}); r.Status != 400 || !strings.Contains(r.Raw, "has nothing visible") {
			t.Errorf("rename to %q: %d %s; want the 400 of an invisible name", name, r.Status, excerpt(r.Raw, 300))
		}
		if r := w.do("POST", acct(own)+"/roles", m.secret, map[string]any{"name": name, "permissions": []any{}}); r.Status != 400 || !strings.Contains(r.Raw, "has nothing visible") {
			t.Errorf("role named %q: %d %s; want the 400 of an invisible name", name, r.Status, excerpt(r.Raw, 300))
		}
	}
	// A name spelled backwards behind a right-to-left override displays
	// as the other's; private-use characters look as the font says.
	for _, name := range []string{"\u202e72-laPyaP\u202c", "PayPal-27\ue000", "PayPal-27\ufffc"} {
		if r := w.do("PATCH", acct(own), m.secret, map[string]any{"name": name}); r.Status != 400 || !strings.Contains(r.Raw, "must not contain U+") {
			t.Errorf("rename to %q: %d %s; want the 400 of an unreadable name", name, r.Status, excerpt(r.Raw, 300))
		}
	}
	if r := w.do("PATCH", acct(own), m.secret, map[string]any{"name": "Tenant\u2800B"}); r.Status != 409 {
		t.Errorf("rename to Tenant B with a blank Braille pattern: %d %s; want the 409 of a taken name", r.Status, excerpt(r.Raw, 300))
	}
	t.Run("NoChange", func(t *testing.T) { w.unchanged(t, before, m.id) })
}

// finding27OwnerOracle replays finding 2 of issue 27: the owner field is
// no oracle of user ids. Another tenant's owner, the other tenant's
// service user, a user with no role anywhere, a well-formed id of nobody
// and a malformed value all get the same 400, byte for byte; the owner
// itself, and a user holding an inheritable role of the account's parent,
// are accepted.
func finding27OwnerOracle(t *testing.T, w *isoWorld) {
	w = w.on(t)
	m, own := w.tenantRole("Owner prober", "owner@f27b.example.com", func(string) map[string][]string { return map[string][]string{"GET": {"/v2/applications"}} })
	stranger := w.newUser("f27 stranger", "stranger@f27b.example.com")
	w.quiet()
	before := w.snapshot()
	var first string
	for what, value := range map[string]any{
		"another tenant's owner":      "/v2/users/" + w.users["victim"].id,
		"another tenant's member":     "/v2/users/" + w.users["bpeer"].id,
		"another tenant's robot":      "/v2/users/" + w.id["suB"],
		"a user with no role":         "/v2/users/" + stranger.id,
		"nobody":                      "/v2/users/zzzzzzzzzzzzzzzz",
		"not an href":                 w.users["victim"].id,
		"garbage":                     "/v2/users/../accounts",
		"an account":                  acct(w.b),
		"the prober's own account id": "/v2/users/" + own,
	} {
		r := w.do("PATCH", acct(own), m.secret, map[string]any{"owner": value})
		if r.Status != 400 || !strings.Contains(r.Raw, "holds a role that applies in this account") {
			t.Errorf("owner %s: %d %s; want 400", what, r.Status, excerpt(r.Raw, 300))
			continue
		}
		if first == "" {
			first = r.Raw
		} else if r.Raw != first {
			t.Errorf("owner %s: the 400 differs from another refused owner's:\n  %s\n  %s", what, r.Raw, first)
		}
	}
	t.Run("NoChange", func(t *testing.T) { w.unchanged(t, before, m.id) })

	// Accepted: the owner itself (it holds the account's Account owner
	// role), and a user given an inheritable role of the root by the
	// operator (a role above the account).
	if r := w.do("PATCH", acct(own), m.secret, map[string]any{"owner": "/v2/users/" + m.id}); r.Status != 200 || r.str("owner") != "/v2/users/"+m.id {
		t.Errorf("owner: the account's own owner: %d %s", r.Status, excerpt(r.Raw, 300))
	}
	above := w.must("inheritable role of the root", 200, "POST", acct(w.root)+"/roles", w.op, map[string]any{"name": "F27 support", "inheritable": true,
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications"}}}})
	w.invite(w.op, w.root, above.str("href"), stranger)
	if r := w.do("PATCH", acct(own), m.secret, map[string]any{"owner": "/v2/users/" + stranger.id}); r.Status != 200 || r.str("owner") != "/v2/users/"+stranger.id {
		t.Errorf("owner: a user holding an inheritable role above: %d %s", r.Status, excerpt(r.Raw, 300))
	}
	// A sub-account created with that user as its owner: the role applies
	// there too; a user without one is the same 400 on create.
	opInto := w.must("operator into the prober's account", 200, "POST", "/v2/users/self/authorization", w.op, map[string]any{"account": acct(own)}).str("secret_key")
	if r := w.do("POST", "/v2/accounts", opInto, map[string]any{"name": "F27 child", "owner": "/v2/users/" + stranger.id}); r.Status != 200 {
		t.Errorf("create with an owner holding an inheritable role above: %d %s", r.Status, excerpt(r.Raw, 300))
	}
	if r := w.do("POST", "/v2/accounts", opInto, map[string]any{"name": "F27 child 2", "owner": "/v2/users/" + w.users["victim"].id}); r.Status != 400 || r.Raw != first {
		t.Errorf("create with another tenant's owner: %d %s; want the same 400 as PATCH (%s)", r.Status, r.Raw, first)
	}
}
