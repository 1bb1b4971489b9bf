package addresssets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"time"

	"cads/shared/caller"
	"cads/shared/ddb"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/metrics"
	"cads/shared/outbox"
	"cads/shared/store"
)

// Store is what the address sets read and write.
type Store struct {
	Now         func() time.Time
	AddressSets interface {
		GetAddressSet(ctx context.Context, account, id string) (store.AddressSetState, error)
		AddressSetByID(ctx context.Context, id string) (store.AddressSetState, error)
		GetAddressSetItem(ctx context.Context, account, id string) (domain.AddressSet, error)
		GetAddressSetItems(ctx context.Context, ids []string) ([]domain.AddressSet, error)
		PageAddressEntries(ctx context.Context, set, after string, desc bool, n int) ([]domain.AddressEntry, []string, bool, error)
		PageAddressSets(ctx context.Context, account, after string, desc bool, n int) ([]domain.AddressSet, []string, bool, error)
		WriteAddressSet(ctx context.Context, w store.AddressSetWrite) error
		DeleteAddressSet(ctx context.Context, a domain.AddressSet, entries []string, ev *store.MetricEvent) error
		DueAddressEntries(ctx context.Context, now time.Time, max int) ([]domain.AddressEntry, error)
		NextAddressExpiry(ctx context.Context, now time.Time) (time.Time, bool, error)
		DeleteOrphanEntries(ctx context.Context, set string, prefixes []string) error
		PurgeAddressSet(ctx context.Context, id string) error
		ClaimAddressSweep(ctx context.Context, now time.Time, lease, gap time.Duration, force bool) (bool, error)
		ReleaseAddressSweep(ctx context.Context, next time.Time) error
		ArmAddressWake(ctx context.Context, at, now time.Time) (bool, error)
	}
	Entitlements interface {
		CheckAllowance(ctx context.Context, account, kind string) (domain.Quota, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, AddressSets: st.AddressSets, Entitlements: st.Entitlements}
}

// Service is the address sets' logic, shared by the API, the aggregator
// (the edge's additions to dynamic sets) and the expiry sweep.
type Service struct {
	st     Store
	events *outbox.Queue  // the metrics queue's outbox: every change's event
	wake   metrics.Sender // nil: no expiry wake-ups are sent
	log    *slog.Logger
	now    func() time.Time
}

// NewService returns the service: events is the outbox of the metrics
// queue, wake sends the expiry sweep's wake-ups to it (nil: none).
func NewService(st Store, events *outbox.Queue, wake metrics.Sender, log *slog.Logger) *Service {
	return &Service{st: st, events: events, wake: wake, log: log, now: st.Now}
}

// event is the event of a change with counts c, with its outbox marker.
func (s *Service) event(c counts, account, set string, now time.Time, purge bool) *store.MetricEvent {
	ev := c.event(account, set, now, purge)
	if ev != nil {
		m := s.events.Marker(ev.Body)
		ev.Outbox = &m
	}
	return ev
}

// Actor names who made an entry (created_by).
type Actor string

// ActorEdge is the data plane adding to dynamic sets.
const ActorEdge Actor = "edge"

// ActorOf names a principal by its href.
func ActorOf(p caller.Principal) Actor {
	if p.Kind == "service_user" {
		return Actor("/v2/accounts/" + p.AccountID + "/service-users/" + p.ID)
	}
	return Actor("/v2/users/" + p.ID)
}

// change computes a set's desired state from its current one (nil for a
// new set).
type change func(cur *store.AddressSetState, now time.Time) (spec, error)

// write applies a change with optimistic concurrency: read the set
// (consistently), compute, write in one transaction conditioned on the
// versions read, and start again if another change came first
// (store.Reapply: a 429 once its budget is spent). A create
// passes the account's quota (CheckAllowance), which its transaction
// enforces; a caller that has just read the set consistently passes it as
// known, saving the first attempt's read. pre is the request's If-Match
// (its HTTP handler passes apigw.Precondition; nil for none): the change then applies only to the
// set it names (store.Edit).
func (s *Service) write(ctx context.Context, account, id string, create *domain.Quota, known *store.AddressSetState, actor Actor, pre store.Precondition, fn change) (store.AddressSetState, error) {
	var out store.AddressSetState
	attempt := -1
	read := func(ctx context.Context) (*store.AddressSetState, error) {
		attempt++
		if attempt == 0 && known != nil {
			return known, nil
		}
		if create != nil {
			return nil, nil
		}
		st, err := s.st.AddressSets.GetAddressSet(ctx, account, id)
		if err != nil {
			return nil, notFound(err, id)
		}
		return &st, nil
	}
	if pre == nil {
		pre = noPrecondition{}
	}
	tag := func(cur *store.AddressSetState) string {
		if cur == nil {
			return ""
		}
		return ETag(*cur, s.now())
	}
	err := store.Edit(ctx, pre, read, tag, func(ctx context.Context, cur *store.AddressSetState) error {
		now := s.now()
		sp, err := fn(cur, now)
		if err != nil {
			return err
		}
		w, next, wake, err := s.plan(ctx, account, id, cur, sp, now, actor)
		if err != nil {
			return err
		}
		if cur != nil && unchanged(cur.Set, w) {
			out = *cur
			return nil
		}
		if create != nil {
			w.Quota = *create
		}
		if err := s.st.AddressSets.WriteAddressSet(ctx, w); err != nil {
			return err
		}
		s.after(ctx, w.Event, wake, now)
		out = next
		return nil
	})
	if err != nil {
		return store.AddressSetState{}, err
	}
	return out, nil
}

// noPrecondition is a change on behalf of no request's If-Match (the
// edge's, the sweep's).
type noPrecondition struct{}

func (noPrecondition) Set() bool          { return false }
func (noPrecondition) Check(string) error { return nil }

// ETag is the entity tag of a set's body at now: its version, which every
// change increments, and how many of its entries are visible, which falls
// without a write as entries expire.
func ETag(st store.AddressSetState, now time.Time) string {
	return etag.Of("addressset", st.Set.Account+"/"+st.Set.ID+"/"+strconv.Itoa(len(visible(st.Entries, now))), st.Set.Version)
}

// plan turns a desired state into one transaction, the resulting state,
// and the earliest new expiry (for the sweep's wake-up).
func (s *Service) plan(ctx context.Context, account, id string, cur *store.AddressSetState, sp spec, now time.Time, actor Actor) (store.AddressSetWrite, store.AddressSetState, *time.Time, error) {
	var w store.AddressSetWrite
	set := domain.AddressSet{ID: id, Account: account, Name: sp.Name, Description: sp.Description, Type: sp.Type,
		Inclusions: sp.Inclusions, Domains: sp.Domains, Version: 1, Created: now, Updated: now, CreatedBy: string(actor)}
	var entries []domain.AddressEntry
	if cur == nil {
		w.Create = true
	} else {
		set.Version, set.Created, set.CreatedBy, set.Includers = cur.Set.Version+1, cur.Set.Created, cur.Set.CreatedBy, cur.Set.Includers
		entries = cur.Entries
	}

	// Inclusions: new ones must exist in the account and must not lead
	// back to this set; the versions seen are checked by the transaction.
	var before []string
	if cur != nil {
		before = cur.Set.Inclusions
	}
	added := minus(sp.Inclusions, before)
	if slices.Contains(sp.Inclusions, id) {
		return w, store.AddressSetState{}, nil, domain.Errorf(domain.Invalid, "inclusions: a set cannot include itself")
	}
	w.RemoveInclusions = minus(before, sp.Inclusions)
	if len(added) > 0 {
		refs, checked, err := s.checkInclusions(ctx, account, id, added)
		if err != nil {
			return w, store.AddressSetState{}, nil, err
		}
		w.AddInclusions, w.Checked = refs, checked
	}

	// Entries.
	d := diffEntries(id, entries, sp.Entries, now, actor)
	if d.err != nil {
		return w, store.AddressSetState{}, nil, d.err
	}
	w.PutEntries, w.DeleteEntries = d.puts, d.deletes
	// Expired entries the sweep has not removed yet go now, as far as the
	// transaction has room; the rest stay for the sweep.
	room := ddb.MaxTransactItems - w.Items() - 1
	for _, e := range d.expired {
		if room <= 0 {
			break
		}
		w.DeleteEntries = append(w.DeleteEntries, e.Prefix)
		d.counts.add("entries_expired", *e.Expiry, 1)
		room--
	}
	if n := w.Items() + 1; n > ddb.MaxTransactItems {
		return w, store.AddressSetState{}, nil, describeTooLarge(n)
	}

	// The resulting partition.
	remaining := map[string]domain.AddressEntry{}
	for _, e := range entries {
		remaining[e.Prefix] = e
	}
	for _, p := range w.DeleteEntries {
		delete(remaining, p)
	}
	for _, e := range w.PutEntries {
		remaining[e.Prefix] = e
	}
	set.EntryCount = len(remaining)
	next := store.AddressSetState{Set: set}
	if cur != nil {
		next.IncludedBy = cur.IncludedBy
	}
	for _, e := range remaining {
		next.Entries = append(next.Entries, e)
	}
	sortEntries(next.Entries)
	// A write that adds or lengthens something must leave a set that GET
	// can return: a set of 10,000 entries with long descriptions full of
	// characters JSON escapes would not fit Lambda's response. Writes that
	// only remove are always allowed, so an oversized set can be trimmed.
	if cur == nil || len(w.PutEntries) > 0 || len(w.AddInclusions) > 0 || set.Name != cur.Set.Name || set.Description != cur.Set.Description {
		if err := checkResponseBudget(next, now); err != nil {
			return w, store.AddressSetState{}, nil, err
		}
	}
	w.Set = set
	w.Event = s.event(d.counts, account, id, now, false)
	return w, next, d.wake, nil
}

// checkResponseBudget refuses a set whose representation, as GET
// /v2/address-sets/{id} returns it (and PATCH and DELETE answer with it),
// would take more than jsontext.ResponseBudget in the Lambda response,
// measured as the response travels there (jsontext.EnvelopeLen). A later GET
// shows the same set or fewer entries (expired ones are not shown), so it
// never exceeds the budget either.
func checkResponseBudget(next store.AddressSetState, now time.Time) error {
	b, err := json.Marshal(SetOut(next, now, true))
	if err != nil {
		return fmt.Errorf("address set %s: encode: %w", next.Set.ID, err)
	}
	if n := jsontext.EnvelopeLen(b); n > jsontext.ResponseBudget {
		return domain.Errorf(domain.Invalid, "this change would make the address set %d bytes as a response carries it, over the response budget of %d bytes (4 MiB; characters JSON escapes, such as < > & and quotes, count up to 7 bytes each): shorten entry descriptions, remove entries or split the set", n, jsontext.ResponseBudget)
	}
	return nil
}

// checkInclusions walks the sets reachable from the added inclusions: each
// must be a set of the account, and none may lead back to id (a cycle).
// It returns the added sets with the versions seen, and the other sets
// walked; the transaction fails if any of them changed meanwhile.
func (s *Service) checkInclusions(ctx context.Context, account, id string, added []string) ([]store.AddressSetRef, []store.AddressSetRef, error) {
	seen := map[string]domain.AddressSet{}
	// origin maps every set reached to the added inclusion it was reached
	// through, so a cycle names the inclusion that closes it.
	origin := map[string]string{}
	for _, a := range added {
		origin[a] = a
	}
	frontier := added
	for depth := 0; len(frontier) > 0; depth++ {
		items, err := s.st.AddressSets.GetAddressSetItems(ctx, frontier)
		if err != nil {
			return nil, nil, err
		}
		byID := map[string]domain.AddressSet{}
		for _, it := range items {
			byID[it.ID] = it
		}
		var next []string
		for _, fid := range frontier {
			it, ok := byID[fid]
			if !ok || it.Account != account {
				if depth == 0 {
					return nil, nil, domain.Errorf(domain.Invalid, "inclusions: no address set %s", Href(fid))
				}
				continue // a dangling inclusion further down does not matter here
			}
			seen[fid] = it
			for _, inc := range it.Inclusions {
				if inc == id {
					return nil, nil, domain.Errorf(domain.Invalid, "inclusions: including %s would make a cycle: it includes %s, directly or through other sets", Href(origin[fid]), Href(id))
				}
				if _, ok := seen[inc]; !ok && !slices.Contains(next, inc) {
					next = append(next, inc)
					if _, ok := origin[inc]; !ok {
						origin[inc] = origin[fid]
					}
				}
			}
		}
		if len(seen)+1 > MaxReachable {
			return nil, nil, domain.Errorf(domain.Invalid, "inclusions: more than %d sets would be reachable from this set", MaxReachable-1)
		}
		frontier = next
	}
	var refs, checked []store.AddressSetRef
	for _, a := range added {
		refs = append(refs, store.AddressSetRef{ID: a, Version: seen[a].Version})
	}
	ids := make([]string, 0, len(seen))
	for sid := range seen {
		ids = append(ids, sid)
	}
	sort.Strings(ids)
	for _, sid := range ids {
		if !slices.Contains(added, sid) {
			checked = append(checked, store.AddressSetRef{ID: sid, Version: seen[sid].Version})
		}
	}
	return refs, checked, nil
}

// unchanged reports whether a write would change nothing of the set.
func unchanged(cur domain.AddressSet, w store.AddressSetWrite) bool {
	return len(w.PutEntries)+len(w.DeleteEntries)+len(w.AddInclusions)+len(w.RemoveInclusions) == 0 &&
		w.Set.Name == cur.Name && w.Set.Description == cur.Description && slices.Equal(w.Set.Inclusions, cur.Inclusions) &&
		slices.Equal(w.Set.Domains, cur.Domains)
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// diff is the entry side of a change.
type diff struct {
	puts    []domain.AddressEntry
	deletes []string
	expired []domain.AddressEntry // expired entries no longer wanted, oldest first
	counts  counts
	wake    *time.Time // earliest expiry written
	err     error
}

// diffEntries compares the set's entries with the desired live ones:
//   - a desired address that is absent, or present but expired, is added
//     (an expired one is also counted as expired: it is replaced);
//   - one present and live is extended when its expiry moves later, and
//     rewritten (not counted) when only its description or an earlier
//     expiry changes;
//   - a live entry not desired is deleted; an expired one not desired is
//     left in expired for the caller to remove and count.
func diffEntries(set string, cur []domain.AddressEntry, want map[netip.Prefix]desired, now time.Time, actor Actor) diff {
	var d diff
	byPrefix := make(map[string]domain.AddressEntry, len(cur))
	for _, e := range cur {
		byPrefix[e.Prefix] = e
	}
	prefixes := make([]netip.Prefix, 0, len(want))
	for p := range want {
		prefixes = append(prefixes, p)
	}
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int { return comparePrefix(a.String(), b.String()) })
	noteWake := func(e *time.Time) {
		if e != nil && (d.wake == nil || e.Before(*d.wake)) {
			d.wake = e
		}
	}
	for _, p := range prefixes {
		in, key := want[p], p.String()
		c, ok := byPrefix[key]
		if !ok || c.ExpiredAt(now) {
			if d.err = checkExpiry(in.address, in.expiry, now); d.err != nil {
				return d
			}
			if ok {
				d.counts.add("entries_expired", *c.Expiry, 1)
			}
			d.puts = append(d.puts, domain.AddressEntry{Set: set, Prefix: key, Address: in.address, Description: in.description,
				Expiry: in.expiry, Created: now, CreatedBy: string(actor)})
			d.counts.add("entries_added", now, 1)
			noteWake(in.expiry)
			continue
		}
		if sameTime(in.expiry, c.Expiry) && in.description == c.Description && in.address == c.Address {
			continue
		}
		if !sameTime(in.expiry, c.Expiry) {
			if d.err = checkExpiry(in.address, in.expiry, now); d.err != nil {
				return d
			}
			noteWake(in.expiry)
		}
		if later(in.expiry, c.Expiry) {
			d.counts.add("entries_extended", now, 1)
		}
		next := c
		next.Address, next.Description, next.Expiry = in.address, in.description, in.expiry
		d.puts = append(d.puts, next)
	}
	for _, e := range cur {
		p, err := netip.ParsePrefix(e.Prefix)
		if err == nil {
			if _, wanted := want[p]; wanted {
				continue
			}
		}
		if e.ExpiredAt(now) {
			d.expired = append(d.expired, e)
			continue
		}
		d.deletes = append(d.deletes, e.Prefix)
		d.counts.add("entries_deleted", now, 1)
	}
	slices.SortFunc(d.expired, func(a, b domain.AddressEntry) int { return a.Expiry.Compare(*b.Expiry) })
	return d
}

// counts are the metric changes of one write, per metric and 10-second
// bucket (the finest the metrics keep).
type counts map[countKey]int64

type countKey struct {
	metric string
	at     int64 // unix seconds, start of the finest bucket
}

func (c *counts) add(metric string, at time.Time, n int64) {
	if *c == nil {
		*c = counts{}
	}
	sec := at.Unix()
	sec -= ((sec % metrics.FinestBucket) + metrics.FinestBucket) % metrics.FinestBucket
	(*c)[countKey{metric, sec}] += n
}

func (c counts) event(account, set string, now time.Time, purge bool) *store.MetricEvent {
	if len(c) == 0 && !purge {
		return nil
	}
	ev := metrics.Event{ID: ids.New(), Account: account, Set: set, Purge: purge}
	keys := make([]countKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].at != keys[j].at {
			return keys[i].at < keys[j].at
		}
		return keys[i].metric < keys[j].metric
	})
	for _, k := range keys {
		ev.Changes = append(ev.Changes, metrics.Change{Metric: k.metric, Time: time.Unix(k.at, 0).UTC(), N: c[k]})
	}
	return &store.MetricEvent{ID: ev.ID, Body: metrics.EncodeEvent(ev), Created: now}
}

// after sends a write's event and arms the sweep's wake-up; both are best
// effort: the event waits in its outbox for the outbox sweep to send it
// again, and a missed wake-up only delays counting (expired entries are
// not listed either way).
func (s *Service) after(ctx context.Context, ev *store.MetricEvent, wake *time.Time, now time.Time) {
	if ev != nil {
		_ = s.events.Send(ctx, ev.Outbox)
	}
	if wake != nil && s.wake != nil {
		s.arm(ctx, *wake, now)
	}
}

// arm schedules the expiry sweep for time at, unless it already is for
// that time or earlier.
func (s *Service) arm(ctx context.Context, at, now time.Time) {
	ok, err := s.st.AddressSets.ArmAddressWake(ctx, at, now)
	if err != nil {
		s.log.WarnContext(ctx, "expiry wake-up not armed", "error", err.Error())
		return
	}
	if !ok {
		return
	}
	delay := at.Sub(now) + time.Second
	if err := s.wake.SendAfter(ctx, metrics.EncodeWake(at), delay); err != nil {
		s.log.WarnContext(ctx, "expiry wake-up not sent", "error", err.Error())
	}
}

func notFound(err error, id string) error {
	return domain.IfNotFound(err, "no address set %q", id)
}

// Get reads a set of the account (consistently), with its entries.
func (s *Service) Get(ctx context.Context, account, id string) (store.AddressSetState, error) {
	st, err := s.st.AddressSets.GetAddressSet(ctx, account, id)
	if err != nil {
		return store.AddressSetState{}, notFound(err, id)
	}
	return st, nil
}

// Create makes a set from a body (validated here).
func (s *Service) Create(ctx context.Context, account string, actor Actor, in SetIn) (store.AddressSetState, error) {
	sp, err := validate(in)
	if err != nil {
		return store.AddressSetState{}, err
	}
	if sp.Type == TypeDynamic && len(sp.Entries) > 0 {
		return store.AddressSetState{}, domain.Errorf(domain.Invalid, "entries of a %s set are added by the edge, not through the API", TypeDynamic)
	}
	q, err := s.st.Entitlements.CheckAllowance(ctx, account, domain.ResourceAddressSets)
	if err != nil {
		return store.AddressSetState{}, err
	}
	return s.write(ctx, account, ids.New(), &q, nil, actor, nil, func(*store.AddressSetState, time.Time) (spec, error) { return sp, nil })
}

// Replace sets a set to the state a PATCH produced from its document.
// build gets the current document and returns the patched body.
func (s *Service) Replace(ctx context.Context, account, id string, actor Actor, pre store.Precondition, build func(doc Document) (SetIn, error)) (store.AddressSetState, error) {
	return s.write(ctx, account, id, nil, nil, actor, pre, func(cur *store.AddressSetState, now time.Time) (spec, error) {
		in, err := build(documentOf(SetOut(*cur, now, true)))
		if err != nil {
			return spec{}, err
		}
		sp, err := validate(in)
		if err != nil {
			return spec{}, err
		}
		if sp.Type != cur.Set.Type {
			return spec{}, domain.Errorf(domain.Invalid, "type cannot change (from %s to %s): create a new set", cur.Set.Type, domain.Clip(sp.Type, 64))
		}
		if sp.Type == TypeDynamic && !sameLive(cur.Entries, sp.Entries, now) {
			return spec{}, domain.Errorf(domain.Invalid, "entries of a %s set are added by the edge, not through the API", TypeDynamic)
		}
		return sp, nil
	})
}

// sameLive reports whether the desired entries are exactly the live ones.
func sameLive(cur []domain.AddressEntry, want map[netip.Prefix]desired, now time.Time) bool {
	live := visible(cur, now)
	if len(live) != len(want) {
		return false
	}
	for _, e := range live {
		p, err := netip.ParsePrefix(e.Prefix)
		if err != nil {
			return false
		}
		w, ok := want[p]
		if !ok || !sameTime(w.expiry, e.Expiry) || w.description != e.Description {
			return false
		}
	}
	return true
}

// Remove deletes a set that no set includes (409 otherwise). Its live
// entries count as deleted, its expired ones as expired. pre is the
// request's If-Match (nil for none), as for write.
func (s *Service) Remove(ctx context.Context, account, id string, pre store.Precondition) (store.AddressSetState, error) {
	var out store.AddressSetState
	if pre == nil {
		pre = noPrecondition{}
	}
	read := func(ctx context.Context) (store.AddressSetState, error) {
		st, err := s.st.AddressSets.GetAddressSet(ctx, account, id)
		return st, notFound(err, id)
	}
	tag := func(st store.AddressSetState) string { return ETag(st, s.now()) }
	err := store.Edit(ctx, pre, read, tag, func(ctx context.Context, st store.AddressSetState) error {
		now := s.now()
		if len(st.IncludedBy) > 0 || st.Set.Includers > 0 {
			hrefs := make([]string, 0, len(st.IncludedBy))
			for _, i := range st.IncludedBy {
				hrefs = append(hrefs, Href(i))
			}
			sort.Strings(hrefs)
			return domain.Errorf(domain.Conflict, "address set %s is included by %v; remove it from their inclusions first", id, hrefs)
		}
		var c counts
		prefixes := make([]string, 0, len(st.Entries))
		for _, e := range st.Entries {
			prefixes = append(prefixes, e.Prefix)
			if e.ExpiredAt(now) {
				c.add("entries_expired", *e.Expiry, 1)
			} else {
				c.add("entries_deleted", now, 1)
			}
		}
		ev := s.event(c, account, id, now, true)
		err := s.st.AddressSets.DeleteAddressSet(ctx, st.Set, prefixes, ev)
		var cleanup *store.CleanupError
		if errors.As(err, &cleanup) {
			s.log.WarnContext(ctx, "address set deleted; the aggregator removes its remaining entries", "set", id, "error", err.Error())
			err = nil
		}
		if err != nil {
			return err
		}
		s.after(ctx, ev, nil, now)
		out = st
		return nil
	})
	if err != nil {
		return store.AddressSetState{}, err
	}
	return out, nil
}

// AddDynamic applies the edge's address records: each adds an address to
// a dynamic set, or extends it when it is already there with an earlier
// expiry (a record never shortens an entry). Records for sets that are
// missing or not dynamic are dropped with a log line.
func (s *Service) AddDynamic(ctx context.Context, recs []metrics.AddressRecord) error {
	bySet := map[string][]metrics.AddressRecord{}
	var order []string
	for _, r := range recs {
		if _, ok := bySet[r.Set]; !ok {
			order = append(order, r.Set)
		}
		bySet[r.Set] = append(bySet[r.Set], r)
	}
	var errs []error
	for _, set := range order {
		rs := bySet[set]
		// One transaction holds at most 100 items: apply in slices.
		for start := 0; start < len(rs); start += 90 {
			if err := s.addDynamic(ctx, set, rs[start:min(start+90, len(rs))]); err != nil {
				errs = append(errs, fmt.Errorf("set %s: %w", set, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Service) addDynamic(ctx context.Context, set string, recs []metrics.AddressRecord) error {
	// Read consistently: the same state is the write's first attempt.
	st, err := s.st.AddressSets.AddressSetByID(ctx, set)
	if errors.Is(err, domain.ErrNotFound) || err == nil && st.Set.Type != TypeDynamic {
		s.log.WarnContext(ctx, "address records for a set that is missing or not dynamic dropped", "set", set, "count", len(recs))
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.write(ctx, st.Set.Account, set, nil, &st, ActorEdge, nil, func(cur *store.AddressSetState, now time.Time) (spec, error) {
		sp := liveSpec(cur, now)
		for _, r := range recs {
			p, shown, err := parseAddress(r.Address)
			if err != nil {
				s.log.WarnContext(ctx, "address record dropped", "set", set, "error", err.Error())
				continue
			}
			var exp *time.Time
			if r.Expiry != nil {
				t := r.Expiry.UTC().Truncate(time.Millisecond)
				if !t.After(now) || t.After(now.Add(MaxExpiry)) {
					continue // already over (or absurd): nothing to add
				}
				exp = &t
			}
			d, have := sp.Entries[p]
			if !have {
				d = desired{address: shown}
			}
			if !have || later(exp, d.expiry) {
				d.expiry = exp
			}
			if r.Description != "" && len(r.Description) <= MaxEntryDescLen {
				d.description = r.Description
			}
			sp.Entries[p] = d
		}
		if len(sp.Entries) > MaxEntries {
			return spec{}, fmt.Errorf("dynamic set %s would exceed %d entries", set, MaxEntries)
		}
		return sp, nil
	})
	return err
}

// liveSpec is a set's current state as a desired state (no change).
func liveSpec(cur *store.AddressSetState, now time.Time) spec {
	sp := spec{Name: cur.Set.Name, Description: cur.Set.Description, Type: cur.Set.Type, Inclusions: cur.Set.Inclusions,
		Domains: cur.Set.Domains, Entries: map[netip.Prefix]desired{}}
	for _, e := range visible(cur.Entries, now) {
		if p, err := netip.ParsePrefix(e.Prefix); err == nil {
			sp.Entries[p] = desired{address: e.Address, description: e.Description, expiry: e.Expiry}
		}
	}
	return sp
}

// Sweep parameters.
const (
	sweepLease = time.Minute
	// sweepGap spaces opportunistic sweeps (those not woken by an expiry).
	sweepGap = 30 * time.Second
	// sweepBatch bounds the due entries read per shard in one sweep; more
	// are left for the next, which is woken at once.
	sweepBatch = 200
)

// Sweep counts and removes expired entries and arms the next wake-up
// (events whose message was lost are the outbox sweep's). It is the "expiry job" of
// docs/metrics.md: run by the aggregator when a wake-up is due (force) and
// at most every 30 seconds otherwise.
func (s *Service) Sweep(ctx context.Context, force bool) (bool, error) {
	now := s.now()
	ok, err := s.st.AddressSets.ClaimAddressSweep(ctx, now, sweepLease, sweepGap, force)
	if err != nil || !ok {
		return false, err
	}
	defer func() {
		if err := s.st.AddressSets.ReleaseAddressSweep(context.WithoutCancel(ctx), s.now().Add(sweepGap)); err != nil {
			s.log.WarnContext(ctx, "sweep lease not released; it lapses by itself", "error", err.Error())
		}
	}()
	var errs []error
	due, err := s.st.AddressSets.DueAddressEntries(ctx, now, sweepBatch)
	if err != nil {
		return true, err
	}
	bySet := map[string][]string{}
	var order []string
	for _, e := range due {
		if _, ok := bySet[e.Set]; !ok {
			order = append(order, e.Set)
		}
		bySet[e.Set] = append(bySet[e.Set], e.Prefix)
	}
	expired := 0
	for _, set := range order {
		st, err := s.st.AddressSets.AddressSetByID(ctx, set)
		if errors.Is(err, domain.ErrNotFound) {
			// The set was deleted (its DELETE counted these entries).
			errs = append(errs, s.st.AddressSets.DeleteOrphanEntries(ctx, set, bySet[set]))
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Writing the live state removes expired entries and counts
		// them, as far as one transaction holds; the rest wait.
		_, err = s.write(ctx, st.Set.Account, set, nil, &st, ActorEdge, nil, func(cur *store.AddressSetState, now time.Time) (spec, error) {
			return liveSpec(cur, now), nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep set %s: %w", set, err))
			continue
		}
		expired += len(bySet[set])
	}
	if expired > 0 {
		s.log.InfoContext(ctx, "expired address entries counted", "entries", expired, "sets", len(order))
	}
	if s.wake != nil {
		// Arm the next wake-up: at once when entries are still due (more
		// than one sweep's worth, or more than a transaction held), else
		// at the next expiry.
		// After a failure, look again in a while rather than at once.
		end := s.now()
		retry := end
		if len(errs) > 0 && errors.Join(errs...) != nil {
			retry = end.Add(sweepGap)
		}
		var left []domain.AddressEntry
		if len(due) > 0 {
			left, err = s.st.AddressSets.DueAddressEntries(ctx, end, 1)
		}
		if err != nil {
			errs = append(errs, err)
		} else if len(left) > 0 {
			s.arm(ctx, retry, end)
		} else if next, ok, err := s.st.AddressSets.NextAddressExpiry(ctx, end); err != nil {
			errs = append(errs, err)
		} else if ok {
			s.arm(ctx, next, end)
		}
	}
	return true, errors.Join(errs...)
}

// Purge removes what is left of a deleted set's partition.
func (s *Service) Purge(ctx context.Context, set string) error {
	return s.st.AddressSets.PurgeAddressSet(ctx, set)
}
