package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cads/shared/domain"
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
		if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: id, Kind: domain.KindUser, Email: id + "@example.com", Created: created}); err != nil {
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
			us, pos, more, err := st.Principals.PageUsers(ctx, after, desc, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !onePage(d.Counter) || len(us) != len(pos) {
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
	as, pos, _, err := st.Applications.PageApplications(ctx, "acct1", "", false, 10)
	if err != nil || len(as) != 2 || as[0].ID != "app1" || as[1].ID != "app3" {
		t.Fatalf("applications of acct1 = %+v, %v", as, err)
	}
	as, _, more, err := st.Applications.PageApplications(ctx, "acct1", pos[0], false, 10)
	if err != nil || len(as) != 1 || as[0].ID != "app3" || more {
		t.Fatalf("after app1 = %+v, %v, more %v", as, err, more)
	}
	// A position of another account's application does not reach into
	// that account: the partition is the caller's.
	_, pos2, _, _ := st.Applications.PageApplications(ctx, "acct2", "", false, 10)
	as, _, _, err = st.Applications.PageApplications(ctx, "acct1", pos2[0], false, 10)
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

// onePage reports whether the calls of one page are what a page costs: the
// index Query and, in parallel, the Query of the collection's journal of
// recent writes (page.go), and at most one BatchGetItem of the members the
// journal names (the tests read right after writing, within its window).
func onePage(d interface{ ByOperation() map[string]int }) bool {
	ops := d.ByOperation()
	return ops["Query"] == 2 && ops["BatchGetItem"] <= 1 && len(ops) <= 2
}

// walkPages follows a collection page by page (n members a page) and
// checks that each page is one index Query (onePage) and each position is
// valid.
func walkPages[T any](t *testing.T, d interface {
	Reset()
	Total() int
	ByOperation() map[string]int
}, read func(after string) ([]T, []string, bool, error), id func(T) string) []string {
	t.Helper()
	var got []string
	after := ""
	for range 20 {
		d.Reset()
		items, pos, more, err := read(after)
		if err != nil {
			t.Fatal(err)
		}
		if !onePage(d) || len(items) != len(pos) {
			t.Fatalf("page: %d calls, %d members, %d positions", d.Total(), len(items), len(pos))
		}
		for i, it := range items {
			got = append(got, id(it))
			if !store.ValidPosition(pos[i]) {
				t.Fatalf("position %q of %s is not valid", pos[i], id(it))
			}
		}
		if !more || len(pos) == 0 {
			return got
		}
		after = pos[len(pos)-1]
	}
	t.Fatal("paging did not end")
	return nil
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// Tasks and address sets are paged like users and applications: one Query
// a page, creation order both ways, only the account's own, and a task's
// [from, to) bounds hold across pages.
func TestPageTasksAndAddressSets(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("t%d", 9-i) // ids against creation order
		newTask(t, st, id, "acct1", base.Add(time.Duration(i)*time.Minute))
		want = append(want, id)
		set := domain.AddressSet{ID: fmt.Sprintf("s%d", 9-i), Account: "acct1", Name: "n", Type: "manual", Version: 1,
			Created: base.Add(time.Duration(i) * time.Minute), Updated: base}
		if err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: set, Create: true}); err != nil {
			t.Fatal(err)
		}
	}
	newTask(t, st, "x1", "acct2", base.Add(time.Second))
	if err := st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: domain.AddressSet{ID: "y1", Account: "acct2", Name: "n", Type: "manual",
		Version: 1, Created: base.Add(time.Second), Updated: base}, Create: true}); err != nil {
		t.Fatal(err)
	}
	taskID := func(tk domain.Task) string { return tk.ID }
	setID := func(s domain.AddressSet) string { return s.ID }
	for _, desc := range []bool{false, true} {
		w := want
		if desc {
			w = reversed(want)
		}
		got := walkPages(t, d.Counter, func(after string) ([]domain.Task, []string, bool, error) {
			return st.Tasks.PageTasks(ctx, "acct1", time.Time{}, time.Time{}, after, desc, 3)
		}, taskID)
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Fatalf("tasks (desc %v) %v, want %v", desc, got, w)
		}
		sets := walkPages(t, d.Counter, func(after string) ([]domain.AddressSet, []string, bool, error) {
			return st.AddressSets.PageAddressSets(ctx, "acct1", after, desc, 3)
		}, setID)
		if fmt.Sprint(sets) != fmt.Sprint(strings.ReplaceAll(fmt.Sprint(w), "t", "s")) {
			t.Fatalf("address sets (desc %v) %v, want the tasks' order %v", desc, sets, w)
		}

		// [1m, 5m): t8 t7 t6 t5, paged two at a time.
		bw := want[1:5]
		if desc {
			bw = reversed(bw)
		}
		got = walkPages(t, d.Counter, func(after string) ([]domain.Task, []string, bool, error) {
			return st.Tasks.PageTasks(ctx, "acct1", base.Add(time.Minute), base.Add(5*time.Minute), after, desc, 2)
		}, taskID)
		if fmt.Sprint(got) != fmt.Sprint(bw) {
			t.Fatalf("tasks in [1m, 5m) (desc %v) %v, want %v", desc, got, bw)
		}
	}

	// A position outside the bounds (a cursor kept while from/to changed)
	// is before or past them, never a DynamoDB error.
	_, all, _, err := st.Tasks.PageTasks(ctx, "acct1", time.Time{}, time.Time{}, "", false, 10)
	if err != nil {
		t.Fatal(err)
	}
	from, to := base.Add(time.Minute), base.Add(5*time.Minute)
	for _, c := range []struct {
		after string
		desc  bool
		want  string
	}{
		{all[0], false, "[t8 t7 t6 t5]"}, {all[0], true, "[]"},
		{all[6], false, "[]"}, {all[6], true, "[t5 t6 t7 t8]"},
	} {
		ts, _, _, err := st.Tasks.PageTasks(ctx, "acct1", from, to, c.after, c.desc, 10)
		var ids []string
		for _, tk := range ts {
			ids = append(ids, tk.ID)
		}
		if err != nil || fmt.Sprint(ids) != c.want && !(c.want == "[]" && len(ids) == 0) {
			t.Fatalf("after %s (desc %v) = %v, %v; want %s", c.after, c.desc, ids, err, c.want)
		}
	}

	// A position of another account's member lists nothing of it.
	_, tpos, _, _ := st.Tasks.PageTasks(ctx, "acct2", time.Time{}, time.Time{}, "", false, 10)
	_, spos, _, _ := st.AddressSets.PageAddressSets(ctx, "acct2", "", false, 10)
	for _, desc := range []bool{false, true} {
		ts, _, _, err := st.Tasks.PageTasks(ctx, "acct1", time.Time{}, time.Time{}, tpos[0], desc, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range ts {
			if tk.Account != "acct1" {
				t.Fatalf("a position of acct2 listed task %+v", tk)
			}
		}
		ss, _, _, err := st.AddressSets.PageAddressSets(ctx, "acct1", spos[0], desc, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			if s.Account != "acct1" {
				t.Fatalf("a position of acct2 listed address set %+v", s)
			}
		}
	}
}
