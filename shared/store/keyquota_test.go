package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"cads/infra/testenv"
	"cads/shared/clock"
	"cads/shared/domain"
	"cads/shared/store"
)

// A user's key count is an upper bound that TTL expiry and deletes leave
// high; the create that meets it recounts. Racing creates never pass the
// limit, keys placed before any count (as before the quota) are counted,
// and an expired key frees its room while its item is still there.
func TestKeyQuotaRecountsExpiredKeys(t *testing.T) {
	d := testenv.NewDynamo(t)
	clk := clock.NewManual(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	st := store.New(d.Client, d.Table, store.WithClock(clk.Now))
	ctx := context.Background()
	if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	// One key placed without a count, as a key from before the quota; one
	// that expires in an hour.
	soon := clk.Now().Add(time.Hour)
	for i, exp := range []*time.Time{nil, &soon} {
		k := domain.AccessKey{ID: fmt.Sprintf("old%d", i), PrincipalID: "u1", Type: "bearer", Durability: domain.DurabilityPersistent, SecretHash: "h", Expiry: exp, Created: clk.Now()}
		if err := st.Principals.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	q := domain.Quota{Kind: domain.ResourceAccessKeys, Limit: 4, Limited: true}
	race := func(n int, prefix string) (made, refused int) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := st.Principals.CreateUserKey(ctx, domain.AccessKey{ID: fmt.Sprintf("%s%d", prefix, i), PrincipalID: "u1", Type: "bearer",
					Durability: domain.DurabilityPersistent, SecretHash: "h", Created: clk.Now()}, q)
				mu.Lock()
				defer mu.Unlock()
				var de *domain.Error
				switch {
				case err == nil:
					made++
				case errors.As(err, &de) && de.Code == domain.Conflict:
					refused++
				default:
					t.Errorf("create: %v", err)
				}
			}()
		}
		wg.Wait()
		return made, refused
	}
	if made, refused := race(10, "a"); made != 2 || refused != 8 {
		t.Fatalf("10 racers at quota 4 with 2 uncounted keys: %d made, %d refused; want 2", made, refused)
	}
	// The expiring key ends: one room, with its item still in the table.
	clk.Advance(time.Hour)
	if _, err := st.Principals.GetKey(ctx, "u1", "old1"); err != nil {
		t.Fatalf("the expired key's item: %v", err)
	}
	if made, refused := race(10, "b"); made != 1 || refused != 9 {
		t.Fatalf("10 racers after one key expired: %d made, %d refused; want 1", made, refused)
	}
	// A delete frees one.
	if _, err := st.Principals.DeleteKey(ctx, "u1", "old0"); err != nil {
		t.Fatal(err)
	}
	if made, refused := race(10, "c"); made != 1 || refused != 9 {
		t.Fatalf("10 racers after a delete: %d made, %d refused; want 1", made, refused)
	}
	keys, err := st.Principals.ListKeys(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, k := range keys {
		if !k.Expired(clk.Now()) {
			live++
		}
	}
	if live != 4 {
		t.Fatalf("%d live keys, want the quota's 4", live)
	}
}
