package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"cads/shared/access"
	"cads/shared/domain"
)

// The authorizer reads a principal's first grants with its credential and
// the rest only on demand: the first page and the rest together are every
// grant, role grants and group memberships alike, each once; the roles and
// groups they name are read by key, a missing one left out.
func TestGrantsInPagesAndRolesByKey(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	if err := st.Accounts.CreateAccount(ctx, domain.Account{ID: "acct", Name: "acct"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	secret := access.NewSecret("u1", "k1")
	if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k1", PrincipalID: "u1", Account: "acct", SecretHash: access.HashSecret(secret)}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 7 {
		r := domain.Role{AccountID: "acct", ID: fmt.Sprintf("r%d", i), Name: "r", Version: 1}
		if err := st.Roles.CreateRole(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: "acct", RoleID: r.ID, Via: "test"}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "role "+r.ID)
	}
	for i := range 3 {
		g := domain.Group{AccountID: "acct", ID: fmt.Sprintf("g%d", i), Name: "g", Roles: []string{"r0"}, Version: 1}
		if err := st.Roles.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: "acct", Group: g.ID, Via: "test"}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "group "+g.ID)
	}
	name := func(g domain.Grant) string {
		if g.Group != "" {
			return "group " + g.Group
		}
		return "role " + g.RoleID
	}

	none, err := st.Principals.LoadCredential(ctx, "u1", "k1", "", 0)
	if err != nil || len(none.Grants) != 0 || none.MoreGrants {
		t.Fatalf("no grants asked for: %d grants, more %v, %v", len(none.Grants), none.MoreGrants, err)
	}
	for _, first := range []int{1, 4, 9, 10, 11} {
		c, err := st.Principals.LoadCredential(ctx, "u1", "k1", "", first)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Grants) != min(first, len(want)) {
			t.Fatalf("first %d: %d grants", first, len(c.Grants))
		}
		if first < len(want) && !c.MoreGrants {
			t.Errorf("first %d of %d: MoreGrants false", first, len(want))
		}
		if first > len(want) && c.MoreGrants {
			t.Errorf("first %d of %d: MoreGrants true", first, len(want))
		}
		got := c.Grants
		if c.MoreGrants {
			rest, err := st.Roles.GrantsAfter(ctx, "u1", c.Grants[len(c.Grants)-1])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rest...)
		}
		var names []string
		for _, g := range got {
			names = append(names, name(g))
		}
		if !slices.Equal(names, want) {
			t.Errorf("first %d, then the rest: %v, want %v", first, names, want)
		}
	}

	roles, groups, err := st.Roles.RolesAndGroups(ctx, []domain.RBACRef{{Account: "acct", ID: "r2"}, {Account: "acct", ID: "gone"}, {Account: "other", ID: "r2"}},
		[]domain.RBACRef{{Account: "acct", ID: "g1"}, {Account: "acct", ID: "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(roles) != 1 || roles[0].ID != "r2" || roles[0].AccountID != "acct" || len(groups) != 1 || groups[0].ID != "g1" || !slices.Equal(groups[0].Roles, []string{"r0"}) {
		t.Errorf("by key: roles %+v, groups %+v; want r2 and g1 alone", roles, groups)
	}
}
