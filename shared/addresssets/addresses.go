package addresssets

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/domain"
	"cads/shared/listmerge"
)

// member is one address of a union: the entry shown (of the live entries
// of that address, the one that expires last; the first set reached wins
// a tie) and the set it is from. An address none of whose entries is live
// is a member too, hidden by the list's filter, so that the read budget
// counts it and the continuation passes it.
type Member struct {
	e    domain.AddressEntry
	set  string
	live bool
}

// Live reports whether the member is shown (some entry of its address is
// live); the list's filter hides the others.
func (m Member) Live() bool { return m.live }

// Out is the member as the addresses collection shows it.
func (m Member) Out() Entry {
	e := entryOut(m.e)
	e.AddressSet = Href(m.set)
	return e
}

// Union pages the addresses of a set and of every set it includes,
// transitively (at most MaxReachable sets), each address once, in address
// order: a k-way merge of the sets' entries, each set read from the
// cursor's position in its own address order (GSI2, store.PageAddressEntries)
// with the Limit the page asks for. Nothing outside the API needs the
// union whole (the edge tests addresses against the sets it is sent), so
// no whole computation is kept.
type Union struct {
	st          Store
	account, id string
	now         time.Time
	// readable makes the decisions on the included sets: only the entries
	// of those the caller may GET are merged (docs/rbac.md, Aggregates).
	// The set itself is the route the authorizer allowed. Called only when
	// the set includes others, so a set without inclusions costs no
	// decision load.
	readable func(ctx context.Context) (func(set string) (bool, error), error)
	// sets are the sets reached (in the order reached) whose entries are
	// merged, known after the first read; later reads of the same request
	// reuse them.
	sets []string
}

// NewUnion is the union of set id of the account at now; readable decides
// which included sets the caller may read (nil: all).
func NewUnion(st Store, account, id string, now time.Time, readable func(ctx context.Context) (func(set string) (bool, error), error)) *Union {
	return &Union{st: st, account: account, id: id, now: now, readable: readable}
}

// entryPage is one set's part of a read.
type entryPage struct {
	entries []domain.AddressEntry
	pos     []string
	more    bool
}

// Read is the union's page source (the handler's apigw.Source).
func (u *Union) Read(ctx context.Context, after string, desc bool, n int) ([]Member, []string, bool, error) {
	var (
		mu    sync.Mutex
		pages = map[string]entryPage{}
		g     errgroup.Group
	)
	query := func(set string) {
		g.Go(func() error {
			es, pos, more, err := u.st.AddressSets.PageAddressEntries(ctx, set, after, desc, n)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			pages[set] = entryPage{es, pos, more}
			return nil
		})
	}
	var walkErr error
	if u.sets == nil {
		// The first read walks the inclusions level by level and reads
		// each set's entries as soon as its id is known: the entries cost
		// no round trip of their own.
		query(u.id)
		u.sets, walkErr = u.walk(ctx, query)
	} else {
		for _, s := range u.sets {
			query(s)
		}
	}
	err := g.Wait()
	if walkErr != nil { // a missing set is a 404 whatever the entries' reads did
		u.sets = nil
		return nil, nil, false, walkErr
	}
	if err != nil {
		return nil, nil, false, err
	}
	ms, pos, more := merge(pages, u.sets, desc, n, u.now)
	return ms, pos, more, nil
}

// walk reads the set (404 if it is not the account's) and the sets it
// reaches through inclusions, one level per round trip, calling query for
// each set as it is found; it returns the sets of the account reached
// whose entries the caller may read, the set first. Sets that vanished,
// are another account's or are refused to the caller are passed over
// (their entries are not merged); their inclusions are still followed,
// as the edge follows them, and decided on their own.
func (u *Union) walk(ctx context.Context, query func(string)) ([]string, error) {
	root, err := u.st.AddressSets.GetAddressSetItem(ctx, u.account, u.id)
	if err != nil {
		return nil, notFound(err, u.id)
	}
	var (
		allows func(string) (bool, error)
		dg     errgroup.Group // the decision load, beside the levels' reads
	)
	if len(root.Inclusions) > 0 && u.readable != nil {
		dg.Go(func() (err error) { allows, err = u.readable(ctx); return err })
	}
	reached, err := u.reach(ctx, root, query)
	if derr := dg.Wait(); err == nil {
		err = derr
	}
	if err != nil || allows == nil {
		return reached, err
	}
	shown := reached[:1]
	for _, id := range reached[1:] {
		ok, err := allows(id)
		if err != nil {
			return nil, err
		}
		if ok {
			shown = append(shown, id)
		}
	}
	return shown, nil
}

// reach is walk's traversal: every set of the account reached from root.
func (u *Union) reach(ctx context.Context, root domain.AddressSet, query func(string)) ([]string, error) {
	reached := []string{u.id}
	seen := map[string]bool{u.id: true}
	frontier := root.Inclusions
	for len(frontier) > 0 && len(seen) < MaxReachable {
		var level []string
		for _, f := range frontier {
			if !seen[f] && len(seen) < MaxReachable {
				seen[f] = true
				level = append(level, f)
				query(f)
			}
		}
		if len(level) == 0 {
			break
		}
		items, err := u.st.AddressSets.GetAddressSetItems(ctx, level)
		if err != nil {
			return nil, err
		}
		byID := make(map[string]domain.AddressSet, len(items))
		for _, it := range items {
			byID[it.ID] = it
		}
		frontier = nil
		for _, id := range level {
			if it, ok := byID[id]; ok && it.Account == u.account {
				reached = append(reached, id)
				frontier = append(frontier, it.Inclusions...)
			}
		}
	}
	return reached, nil
}

// merge makes the union's members of one read out of the sets' pages
// (listmerge.Union): at most n, in the read's direction; of an address
// several sets hold, the live entry that expires last.
func merge(pages map[string]entryPage, sets []string, desc bool, n int, now time.Time) ([]Member, []string, bool) {
	sorted := make([]listmerge.Sorted, len(sets))
	for i, s := range sets {
		sorted[i] = listmerge.Sorted{Pos: pages[s].pos, More: pages[s].more}
	}
	byPos := map[string]*Member{}
	order, more := listmerge.Union(sorted, desc, n, func(src, i int) {
		s := sets[src]
		e, pos := pages[s].entries[i], pages[s].pos[i]
		m := byPos[pos]
		if m == nil {
			m = &Member{e: e, set: s}
			byPos[pos] = m
		}
		if !e.ExpiredAt(now) && (!m.live || later(e.Expiry, m.e.Expiry)) {
			m.e, m.set, m.live = e, s, true
		}
	})
	out := make([]Member, len(order))
	for i, pos := range order {
		out[i] = *byPos[pos]
	}
	return out, order, more
}
