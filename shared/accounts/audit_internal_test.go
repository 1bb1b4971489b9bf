package accounts

import (
	"slices"
	"testing"

	"cads/shared/audit"
	"cads/shared/domain"
)

// A read of an event's target is decided where the authorizer would
// decide it: in the account an accounts path names, else the event's.
func TestTargetAccount(t *testing.T) {
	in := domain.Account{ID: "a", Ancestors: []string{"root"}}
	for _, c := range []struct {
		target, id string
		ancestors  []string
	}{
		{"/v2/address-sets/s1", "a", []string{"root"}},
		{"/v2/accounts/a", "a", []string{"root"}},
		{"/v2/accounts/a/roles/r1", "a", []string{"root"}},
		{"/v2/accounts/b", "b", []string{"root", "a"}}, // a sub-account a created
		{"/v2/accounts/b/roles/r1", "b", []string{"root", "a"}},
		{"/v2/users/u1/access-keys/k1", "a", []string{"root"}},
	} {
		got := targetAccount(audit.Event{Target: c.target}, in)
		if got.ID != c.id || !slices.Equal(got.Ancestors, c.ancestors) {
			t.Errorf("targetAccount(%s) = %s %v, want %s %v", c.target, got.ID, got.Ancestors, c.id, c.ancestors)
		}
	}
	if !slices.Equal(in.Ancestors, []string{"root"}) {
		t.Errorf("the event's ancestors were changed: %v", in.Ancestors)
	}
}
