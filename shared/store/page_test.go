package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cads/shared/store"
)

// Users and applications are paged in creation order with one Query per
// page, whatever the collection's size, and a position from a page goes on
// exactly after it, in either direction.
func TestPageInCreationOrder(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	// Ids in the opposite order of creation, and two created in the same
	// millisecond: the order is creation time, then id.
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("u%d", 9-i)
		created := base.Add(time.Duration(i) * time.Second)
		if i == 6 {
			created = base.Add(5 * time.Second)
		}
		if err := st.CreatePrincipal(ctx, store.Principal{ID: id, Kind: store.KindUser, Email: id + "@example.com", Created: created}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	want[5], want[6] = want[6], want[5] // u3 and u4 share a time: u3 first
	walk := func(desc bool) []string {
		var got []string
		after := ""
		for range 10 {
			d.Counter.Reset()
			us, pos, more, err := st.PageUsers(ctx, after, desc, 3)
			if err != nil {
				t.Fatal(err)
			}
			if d.Counter.Total() != 1 || len(us) != len(pos) {
				t.Fatalf("page: %d calls, %d users, %d positions", d.Counter.Total(), len(us), len(pos))
			}
			for i, u := range us {
				got = append(got, u.ID)
				if !store.ValidPosition(pos[i]) {
					t.Fatalf("position %q of %s is not valid", pos[i], u.ID)
				}
			}
			if !more {
				return got
			}
			after = pos[len(pos)-1]
		}
		t.Fatal("paging did not end")
		return nil
	}
	if got := walk(false); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ascending %v, want %v", got, want)
	}
	var rev []string
	for i := len(want) - 1; i >= 0; i-- {
		rev = append(rev, want[i])
	}
	if got := walk(true); fmt.Sprint(got) != fmt.Sprint(rev) {
		t.Fatalf("descending %v, want %v", got, rev)
	}

	// Applications: only the account's own.
	newApp(t, st, "acct1", "app1")
	newApp(t, st, "acct2", "app2")
	newApp(t, st, "acct1", "app3")
	as, pos, _, err := st.PageApplications(ctx, "acct1", "", false, 10)
	if err != nil || len(as) != 2 || as[0].ID != "app1" || as[1].ID != "app3" {
		t.Fatalf("applications of acct1 = %+v, %v", as, err)
	}
	as, _, more, err := st.PageApplications(ctx, "acct1", pos[0], false, 10)
	if err != nil || len(as) != 1 || as[0].ID != "app3" || more {
		t.Fatalf("after app1 = %+v, %v, more %v", as, err, more)
	}
	// A position of another account's application does not reach into
	// that account: the partition is the caller's.
	_, pos2, _, _ := st.PageApplications(ctx, "acct2", "", false, 10)
	as, _, _, err = st.PageApplications(ctx, "acct1", pos2[0], false, 10)
	for _, a := range as {
		if a.Account != "acct1" {
			t.Fatalf("a position of acct2 listed %+v", a)
		}
	}
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"", "x", "2026-03-04T05:06:07.000Z#", "2026-03-04T05:06:07Z#u1", "2026-03-04T05:06:07.000Z#U1", "2026-03-04T05:06:07.000Z#u1#x"} {
		if store.ValidPosition(p) {
			t.Errorf("ValidPosition(%q) = true", p)
		}
	}
}
