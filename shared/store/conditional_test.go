package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

// A write made under a request's If-Match checks the version by its own
// condition: a change that lands between the read a precondition was
// judged on and the write is domain.ErrChanged, never overwritten; at the
// version read, the write applies. The change is made inside the
// precondition's check, which runs between the two.
func TestVersionedWritesRefuseAnotherVersion(t *testing.T) {
	st, r := rbacFixture(t)
	ctx := context.Background()
	now := st.Now()

	t.Run("invitation", func(t *testing.T) {
		inv := domain.Invitation{AccountID: "a1", ID: "iv1", Kind: domain.InvitationRole, Email: "v@example.com", Target: r.ID,
			State: domain.InvitationQueued, Created: now, Updated: now, Version: 1}
		m := store.OutboxMarker{Queue: "NotificationsQueue", Body: inv.ID, Due: now.Add(time.Minute)}
		if err := st.Invitations.CreateInvitation(ctx, inv, &m); err != nil {
			t.Fatal(err)
		}
		sent, err := st.Invitations.MarkInvitationSent(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, inv.ID); err != nil || got.Version != 2 || sent.Version != 2 {
			t.Fatalf("after its delivery: version %d (returned %d), %v; want 2", got.Version, sent.Version, err)
		}
		if _, err := st.Invitations.RequeueInvitation(ctx, sent, &m, 1); !errors.Is(err, domain.ErrChanged) {
			t.Errorf("requeue at version 1: %v, want domain.ErrChanged", err)
		}
		if _, err := st.Invitations.DeclineInvitation(ctx, sent, 1); !errors.Is(err, domain.ErrChanged) {
			t.Errorf("decline at version 1: %v, want domain.ErrChanged", err)
		}
		if err := st.Invitations.DeleteInvitation(ctx, sent, 1); !errors.Is(err, domain.ErrChanged) {
			t.Errorf("delete at version 1: %v, want domain.ErrChanged", err)
		}
		if err := st.Invitations.DeleteInvitation(ctx, sent, 2); err != nil {
			t.Errorf("delete at version 2: %v", err)
		}
	})

	t.Run("service user", func(t *testing.T) {
		u := domain.ServiceUser{ID: "sv1", Kind: domain.KindServiceUser, Email: domain.ServiceUserEmail("a1", "sv1"), Account: "a1", Version: 1}
		if err := st.Principals.CreateServiceUser(ctx, u, domain.AccessKey{ID: "ksv", PrincipalID: "sv1", Type: "bearer", Account: "a1"}); err != nil {
			t.Fatal(err)
		}
		name := "renamed"
		if _, err := st.Principals.UpdateServiceUser(ctx, "a1", "sv1", &name, nil, 5); !errors.Is(err, domain.ErrChanged) {
			t.Errorf("update at version 5: %v, want domain.ErrChanged", err)
		}
		got, err := st.Principals.UpdateServiceUser(ctx, "a1", "sv1", &name, nil, 1)
		if err != nil || got.Version != 2 || got.Name != name {
			t.Fatalf("update at version 1: %+v, %v", got, err)
		}
		var keys int
		_, err = st.Principals.DeleteServiceUser(ctx, "a1", "sv1", func(_ domain.ServiceUser, ks []domain.AccessKey) error {
			keys = len(ks)
			other := "meanwhile"
			_, err := st.Principals.UpdateServiceUser(ctx, "a1", "sv1", &other, nil)
			return err
		})
		if !errors.Is(err, domain.ErrChanged) || keys != 1 {
			t.Fatalf("delete of a service user changed after its read: %v (the check saw %d keys, want 1)", err, keys)
		}
		if _, err := st.Principals.DeleteServiceUser(ctx, "a1", "sv1", func(domain.ServiceUser, []domain.AccessKey) error { return nil }); err != nil {
			t.Fatalf("delete at the version read: %v", err)
		}
	})

	t.Run("access key", func(t *testing.T) {
		if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "pv1", Kind: domain.KindUser, Email: "pv1@example.com", Version: 1}); err != nil {
			t.Fatal(err)
		}
		if err := st.Principals.CreateKey(ctx, domain.AccessKey{ID: "kv1", PrincipalID: "pv1", Type: "bearer", Created: now}); err != nil {
			t.Fatal(err)
		}
		_, err := st.Principals.DeleteKey(ctx, "pv1", "kv1", func(domain.AccessKey) error { return st.Principals.TouchKey(ctx, "pv1", "kv1", now) })
		if !errors.Is(err, domain.ErrChanged) {
			t.Fatalf("delete of a key used after its read: %v, want domain.ErrChanged", err)
		}
		if _, err := st.Principals.DeleteKey(ctx, "pv1", "kv1", func(k domain.AccessKey) error {
			if k.LastUsed == nil {
				t.Errorf("the key as read shows no use")
			}
			return nil
		}); err != nil {
			t.Fatalf("delete at the use read: %v", err)
		}
	})

	t.Run("test", func(t *testing.T) {
		archive := []byte(`{"probabilities":1}`)
		tt := domain.AppTest{Account: "a1", ID: "tv1", Archive: store.NewAppTestBlob("bv1", archive), Version: 1, Created: now, Updated: now}
		if err := st.Tests.CreateAppTest(ctx, tt, archive, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Tests.UpdateAppTestDescription(ctx, "a1", "tv1", "x", 2); !errors.Is(err, domain.ErrChanged) {
			t.Errorf("description at version 2: %v, want domain.ErrChanged", err)
		}
		_, err := st.Tests.DeleteAppTest(ctx, "a1", "tv1", func(domain.AppTest) error {
			_, err := st.Tests.UpdateAppTestDescription(ctx, "a1", "tv1", "meanwhile")
			return err
		})
		if e, ok := domain.AsError(err); !ok || e.Code != domain.Precondition || !errors.Is(err, domain.ErrChanged) {
			t.Fatalf("delete of a test changed after its read: %v, want the 412 of a lost race", err)
		}
		if got, err := st.Tests.DeleteAppTest(ctx, "a1", "tv1", func(domain.AppTest) error { return nil }); err != nil || got.Version != 2 {
			t.Fatalf("delete at the version read: %+v, %v", got, err)
		}
	})

	t.Run("principal", func(t *testing.T) {
		if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "uv1", Kind: domain.KindUser, Email: "uv1@example.com", Version: 1}); err != nil {
			t.Fatal(err)
		}
		name := "Ada"
		if _, err := st.Principals.UpdatePrincipal(ctx, "uv1", store.PrincipalChange{Name: &name}, 2); !errors.Is(err, domain.ErrChanged) {
			t.Errorf("update at version 2: %v, want domain.ErrChanged", err)
		}
		if got, err := st.Principals.UpdatePrincipal(ctx, "uv1", store.PrincipalChange{Name: &name}, 1); err != nil || got.Version != 2 {
			t.Errorf("update at version 1: %+v, %v", got, err)
		}
	})
}
