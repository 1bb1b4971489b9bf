package store_test

import (
	"context"
	"testing"
	"time"

	"cads/infra/localaws"
	"cads/shared/domain"
)

// stale makes this test's DynamoDB realistic in the one way that matters
// here: eventually consistent reads and every index read lag an hour
// behind the writes, so a read that is not strongly consistent sees
// nothing written by the test.
func stale(t *testing.T) {
	t.Setenv(localaws.RealismEnv, "seed=1,lag=1h,conflicts=0,throttles=0,unprocessed=0")
}

// The negative answers an account's deletion and an invitee's accept are
// based on come from the base table, read consistently: an application
// created a moment ago is a leftover, and an invitation sent a moment ago
// is found by id, even when no index shows them yet.
func TestNegativeAnswersReadTheBaseTable(t *testing.T) {
	stale(t)
	st, d := newStore(t)
	ctx := context.Background()
	root := rootAccount(t, st)
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(root, "a1", "One"), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := st.Applications.CreateApplication(ctx, domain.Application{ID: "app1", Account: "a1", State: domain.AppStopped, Config: `{"name":"x"}`, Version: 1, Created: now, Updated: now}, domain.Quota{}); err != nil {
		t.Fatal(err)
	}
	l, err := st.Accounts.AccountLeftovers(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if !l.Applications {
		t.Errorf("an application created a moment ago is not a leftover: %+v", l)
	}

	role := domain.Role{AccountID: "a1", ID: "r1", Name: "r", Version: 1}
	if err := st.Roles.CreateRole(ctx, role); err != nil {
		t.Fatal(err)
	}
	inv := domain.Invitation{AccountID: "a1", Kind: domain.InvitationRole, ID: "i1", Email: "Dev@example.com", Target: "r1", State: domain.InvitationQueued, Created: now, Updated: now}
	if err := st.Invitations.CreateInvitation(ctx, inv, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Invitations.InboxInvitation(ctx, "dev@example.com", domain.InvitationRole, "i1"); err != domain.ErrNotFound {
		t.Errorf("a queued invitation in the inbox: %v, want not found", err)
	}
	if _, err := st.Invitations.MarkInvitationSent(ctx, inv); err != nil {
		t.Fatal(err)
	}
	d.Counter.Reset()
	got, err := st.Invitations.InboxInvitation(ctx, "dev@example.com", domain.InvitationRole, "i1")
	if err != nil || got.ID != "i1" || got.AccountID != "a1" {
		t.Errorf("an invitation sent a moment ago, by id: %+v %v", got, err)
	}
	if _, err := st.Invitations.InboxInvitation(ctx, "other@example.com", domain.InvitationRole, "i1"); err != domain.ErrNotFound {
		t.Errorf("another invitee's invitation: %v, want not found", err)
	}
	if _, err := st.Invitations.InboxInvitation(ctx, "dev@example.com", domain.InvitationGroup, "i1"); err != domain.ErrNotFound {
		t.Errorf("the wrong kind: %v, want not found", err)
	}
	// Revoked: gone from the base table, so gone by id too.
	sent, err := st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Invitations.DeleteInvitation(ctx, sent); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Invitations.InboxInvitation(ctx, "dev@example.com", domain.InvitationRole, "i1"); err != domain.ErrNotFound {
		t.Errorf("a revoked invitation: %v, want not found", err)
	}
}
