package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

func rbacFixture(t *testing.T) (*store.Store, domain.Role) {
	t.Helper()
	st, _ := newStore(t)
	ctx := context.Background()
	if err := st.Accounts.CreateAccount(ctx, domain.Account{ID: "a1", Name: "a1"}, nil); err != nil {
		t.Fatal(err)
	}
	r := domain.Role{AccountID: "a1", ID: "r1", Name: "R", Version: 1}
	if err := st.Roles.CreateRole(ctx, r); err != nil {
		t.Fatal(err)
	}
	return st, r
}

// Accepting writes the grant with the state; revoking removes exactly the
// grant this invitation made, in the same transaction.
func TestInvitationGrantInvariants(t *testing.T) {
	st, r := rbacFixture(t)
	ctx := context.Background()
	now := st.Now()
	mk := func(id string) domain.Invitation {
		inv := domain.Invitation{AccountID: "a1", ID: id, Kind: domain.InvitationRole, Email: "u@example.com", Target: r.ID,
			State: domain.InvitationQueued, Created: now, Updated: now}
		m := store.OutboxMarker{Queue: "NotificationsQueue", Body: id, Due: now.Add(time.Minute)}
		if err := st.Invitations.CreateInvitation(ctx, inv, &m); err != nil {
			t.Fatal(err)
		}
		return inv
	}
	i1, i2 := mk("i1"), mk("i2")

	// Not in the inbox until sent; not answerable then either.
	if got, _, _, _ := st.Invitations.PageInbox(ctx, "U@example.com", domain.InvitationRole, "", false, 100); len(got) != 0 {
		t.Fatalf("queued invitations in the inbox: %+v", got)
	}
	i1, err := st.Invitations.MarkInvitationSent(ctx, i1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Invitations.MarkInvitationSent(ctx, i1); !errors.Is(err, store.ErrStateChanged) {
		t.Fatalf("second delivery: %v", err)
	}
	if i2, err = st.Invitations.MarkInvitationSent(ctx, i2); err != nil {
		t.Fatal(err)
	}
	if got, _, _, _ := st.Invitations.PageInbox(ctx, "u@example.com", domain.InvitationRole, "", false, 100); len(got) != 2 {
		t.Fatalf("inbox: %+v", got)
	}

	if i1, err = st.Invitations.AcceptInvitation(ctx, i1, "u1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Invitations.AcceptInvitation(ctx, i2, "u1"); !errors.Is(err, store.ErrAlreadyHeld) {
		t.Fatalf("second acceptance of a held role: %v", err)
	}
	if got, _ := st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, "i2"); got.State != domain.InvitationSent {
		t.Fatalf("refused acceptance half-written: %+v", got)
	}
	if _, err := st.Invitations.AcceptInvitation(ctx, i1, "u1"); !errors.Is(err, store.ErrStateChanged) {
		t.Fatalf("accepting twice: %v", err)
	}

	// Leave the role (i1 becomes declined), accept i2, then revoke i1:
	// i2's grant stays.
	g := i1.Grant("u1", now)
	if err := st.Roles.DeleteGrant(ctx, g, i1.Ref()); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, "i1"); got.State != domain.InvitationDeclined {
		t.Fatalf("left invitation: %+v", got)
	}
	if _, err := st.Invitations.AcceptInvitation(ctx, i2, "u1"); err != nil {
		t.Fatal(err)
	}
	i1.State = domain.InvitationAccepted // a stale read: the delete must not trust it
	if err := st.Invitations.DeleteInvitation(ctx, i1); !errors.Is(err, store.ErrStateChanged) {
		t.Fatalf("delete with a stale state: %v", err)
	}
	i1.State = domain.InvitationDeclined
	if err := st.Invitations.DeleteInvitation(ctx, i1); err != nil {
		t.Fatal(err)
	}
	if gs, _ := st.Roles.Grants(ctx, "u1"); len(gs) != 1 || gs[0].Via != i2.Ref().Href() {
		t.Fatalf("grants after revoking the other invitation: %+v", gs)
	}
	i2, _ = st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, "i2")
	if err := st.Invitations.DeleteInvitation(ctx, i2); err != nil {
		t.Fatal(err)
	}
	if gs, _ := st.Roles.Grants(ctx, "u1"); len(gs) != 0 {
		t.Fatalf("grants after revoking: %+v", gs)
	}
}

// A role with more holders than one transaction can carry: the role goes
// first, with what fits; the rest follows in batches.
func TestDeleteRoleBeyondOneTransaction(t *testing.T) {
	st, r := rbacFixture(t)
	ctx := context.Background()
	g := domain.Group{AccountID: "a1", ID: "g1", Name: "G", Roles: []string{r.ID}, Version: 1}
	if err := st.Roles.CreateGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 130; i++ {
		if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: fmt.Sprintf("p%d", i), AccountID: "a1", RoleID: r.ID, Via: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Roles.DeleteRole(ctx, "a1", r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Roles.GetRole(ctx, "a1", r.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("role still there: %v", err)
	}
	if g, _ := st.Roles.GetGroup(ctx, "a1", "g1"); len(g.Roles) != 0 || g.Version != 2 {
		t.Fatalf("group still lists the role: %+v", g)
	}
	for _, p := range []string{"p0", "p99", "p129"} {
		if gs, _ := st.Roles.Grants(ctx, p); len(gs) != 0 {
			t.Fatalf("%s still holds %+v", p, gs)
		}
	}
	// Control roles stay.
	c := domain.Role{AccountID: "a1", ID: "c1", Name: "Reader", Control: true, Version: 1}
	if err := st.Roles.CreateRole(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Roles.DeleteRole(ctx, "a1", "c1"); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("deleting a control role: %v", err)
	}
}
