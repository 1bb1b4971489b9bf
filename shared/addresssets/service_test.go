package addresssets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/metrics"
	"cads/shared/outbox"
	"cads/shared/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// queue records what would go to the metrics queue.
type queue struct {
	mu      sync.Mutex
	bodies  []string
	delayed []string
}

func (q *queue) Send(_ context.Context, bodies ...string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bodies = append(q.bodies, bodies...)
	return nil
}

func (q *queue) SendAfter(_ context.Context, body string, _ time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.delayed = append(q.delayed, body)
	return nil
}

// eventSender is q as the outbox's sender: every event goes to the metrics
// queue.
type eventSender struct{ q *queue }

func (e eventSender) Send(ctx context.Context, _ string, bodies ...string) error {
	return e.q.Send(ctx, bodies...)
}

func (q *queue) drain() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.bodies
	q.bodies = nil
	return out
}

type env struct {
	t     *testing.T
	d     testenv.Dynamo
	st    *store.Store
	svc   *Service
	q     *queue
	agg   *metrics.Aggregator
	clock time.Time
	all   []string // every event body ever sent
}

func newEnv(t *testing.T) *env {
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table)
	e := &env{t: t, d: d, st: st, q: &queue{}, clock: time.Now().UTC().Truncate(time.Minute)}
	e.svc = NewService(NewStore(st), outbox.New(st.Tasks, eventSender{e.q}, quiet).Queue("MetricsQueue"), e.q, quiet)
	e.svc.now = func() time.Time { return e.clock }
	e.agg = metrics.NewAggregator(st.Metrics, e.svc, e.q, quiet)
	return e
}

func (e *env) advance(d time.Duration) { e.clock = e.clock.Add(d) }

// fold delivers what was sent to the aggregator.
func (e *env) fold() {
	e.t.Helper()
	bodies := e.q.drain()
	e.all = append(e.all, bodies...)
	e.deliver(bodies...)
}

func (e *env) deliver(bodies ...string) {
	e.t.Helper()
	if len(bodies) == 0 {
		return
	}
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("msg-%d-%d", i, time.Now().UnixNano()), Body: b})
	}
	resp, err := e.agg.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		e.t.Fatalf("aggregator: %v %+v", err, resp)
	}
}

func (e *env) counts(scope string) map[string]float64 {
	e.t.Helper()
	testenv.AwaitReads() // metric chunks are read eventually consistent
	from := e.clock.Add(-6 * time.Hour).Truncate(time.Hour)
	q, _ := url.ParseQuery("names=entries_added,entries_extended,entries_expired,entries_deleted&summarize=true&from=" +
		from.Format(time.RFC3339) + "&to=" + from.Add(12*time.Hour).Format(time.RFC3339))
	mq, err := metrics.ParseQuery(q, metrics.FamilyAddressSet, e.st.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := mq.Plan(e.st.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	chunks, err := e.st.Metrics.MetricChunks(context.Background(), p.Keys(scope))
	if err != nil {
		e.t.Fatal(err)
	}
	r := p.Evaluate(mq.Defs, chunks)
	out := map[string]float64{}
	for i, n := range r.Metrics.Names {
		out[strings.TrimPrefix(n, "entries_")] = float64(r.Metrics.Values[i].(int64))
	}
	return out
}

func str(s string) *string { return &s }

func entry(addr string, expiry *time.Time) entryIn {
	return entryIn{Address: str(addr), Expiry: expiry}
}

func at(t time.Time) *time.Time { return &t }

const acct = "acct1"

func (e *env) create(name, typ string, entries []entryIn, inclusions ...string) store.AddressSetState {
	e.t.Helper()
	var hrefs []string
	for _, i := range inclusions {
		hrefs = append(hrefs, Href(i))
	}
	st, err := e.svc.Create(context.Background(), acct, "tester", SetIn{Name: str(name), Type: str(typ), Entries: entries, Inclusions: hrefs})
	if err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
	return st
}

// patch applies a merge patch the way the handler does.
func (e *env) patch(id, merge string) (store.AddressSetState, error) {
	return e.svc.Replace(context.Background(), acct, id, "tester", nil, func(doc Document) (SetIn, error) {
		cur, _ := json.Marshal(doc)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(cur, &m)
		var p map[string]json.RawMessage
		if err := json.Unmarshal([]byte(merge), &p); err != nil {
			return SetIn{}, err
		}
		for k, v := range p {
			m[k] = v
		}
		out, _ := json.Marshal(m)
		var in SetIn
		return in, jsontext.UnmarshalStrict(out, &in)
	})
}

func addrs(st store.AddressSetState, now time.Time) []string {
	var out []string
	for _, e := range visible(st.Entries, now) {
		out = append(out, e.Address)
	}
	return out
}

func status(err error) int {
	if _, ok := domain.AsError(err); ok {
		return apigw.Status(err)
	}
	return 0
}

func TestExpiryAndExtensionAreCountedOnce(t *testing.T) {
	e := newEnv(t)
	t0 := e.clock
	s := e.create("blocklist", TypeManual, []entryIn{
		entry("192.0.2.1", at(t0.Add(10*time.Minute))),
		entry("2001:db8::/32", nil),
		entry("198.51.100.0/24", at(t0.Add(time.Hour))),
	})
	id := s.Set.ID
	e.fold()

	// Re-add 192.0.2.1 later (extended), move 198.51.100.0/24 earlier (an
	// edit, not counted), add a new one; the same address twice in one
	// request is one entry with the later expiry.
	e.advance(time.Minute)
	exp := func(d time.Duration) string { return `"` + t0.Add(d).Format(time.RFC3339) + `"` }
	_, err := e.patch(id, `{"entries":[
		{"address":"192.0.2.1","expiry":`+exp(15*time.Minute)+`},
		{"address":"192.0.2.1","expiry":`+exp(20*time.Minute)+`},
		{"address":"2001:db8::/32"},
		{"address":"198.51.100.0/24","expiry":`+exp(30*time.Minute)+`},
		{"address":"203.0.113.7","description":"scanner"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	e.fold()

	// At +25 min 192.0.2.1 has expired: not listed, not yet counted.
	e.advance(24 * time.Minute)
	cur, _ := e.st.AddressSets.GetAddressSet(context.Background(), acct, id)
	if got := strings.Join(addrs(cur, e.clock), " "); got != "198.51.100.0/24 203.0.113.7 2001:db8::/32" {
		t.Fatalf("live at +25m: %s", got)
	}
	for range 2 { // the second sweep finds nothing more
		if ran, err := e.svc.Sweep(context.Background(), true); err != nil || !ran {
			t.Fatalf("sweep: %v %v", ran, err)
		}
		e.fold()
	}
	c := e.counts(metrics.ScopeSet(id))
	if c["added"] != 4 || c["extended"] != 1 || c["expired"] != 1 || c["deleted"] != 0 {
		t.Fatalf("after the sweep: %v", c)
	}

	// At +35 min 198.51.100.0/24 has expired, unswept; a PATCH re-adding it
	// replaces it: expired once and added again.
	e.advance(10 * time.Minute)
	if _, err := e.patch(id, `{"entries":[{"address":"198.51.100.0/24","expiry":`+exp(2*time.Hour)+`},{"address":"2001:db8::/32"},{"address":"203.0.113.7","description":"scanner"}]}`); err != nil {
		t.Fatal(err)
	}
	e.fold()
	if _, err := e.svc.Sweep(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	e.fold()
	c = e.counts(metrics.ScopeSet(id))
	if c["added"] != 5 || c["extended"] != 1 || c["expired"] != 2 || c["deleted"] != 0 {
		t.Fatalf("after the re-add: %v", c)
	}

	// Deleting the set deletes its three live entries.
	if _, err := e.svc.Remove(context.Background(), acct, id, nil); err != nil {
		t.Fatal(err)
	}
	e.fold()
	c = e.counts(metrics.ScopeSet(id))
	if c["added"] != 5 || c["extended"] != 1 || c["expired"] != 2 || c["deleted"] != 3 {
		t.Fatalf("after delete: %v", c)
	}
	// Every event delivered again changes nothing; the account's total
	// is the set's.
	e.deliver(e.all...)
	if again := e.counts(metrics.ScopeSet(id)); fmt.Sprint(again) != fmt.Sprint(c) {
		t.Fatalf("redelivery changed the counts: %v -> %v", c, again)
	}
	if a := e.counts(metrics.ScopeSetsOf(acct)); fmt.Sprint(a) != fmt.Sprint(c) {
		t.Fatalf("account scope %v, set scope %v", a, c)
	}
	// The partition is gone; the expiry index holds nothing due.
	if _, err := e.st.AddressSets.AddressSetByID(context.Background(), id); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("set still there: %v", err)
	}
	if due, _ := e.st.AddressSets.DueAddressEntries(context.Background(), e.clock.Add(24*time.Hour), 10); len(due) != 0 {
		t.Fatalf("entries left in the expiry index: %+v", due)
	}
}

func TestInclusionCyclesAreRefusedWhenWritten(t *testing.T) {
	e := newEnv(t)
	c := e.create("c", TypeManual, []entryIn{entry("10.0.0.1", nil)})
	b := e.create("b", TypeCombined, nil, c.Set.ID)
	a := e.create("a", TypeCombined, nil, b.Set.ID)
	// c is manual: it cannot include anything; make a combined d in the
	// middle of a -> b -> d and try to close the loop d -> a.
	d := e.create("d", TypeCombined, nil)
	if _, err := e.patch(b.Set.ID, `{"inclusions":["`+Href(c.Set.ID)+`","`+Href(d.Set.ID)+`"]}`); err != nil {
		t.Fatal(err)
	}
	_, err := e.patch(d.Set.ID, `{"inclusions":["`+Href(a.Set.ID)+`"]}`)
	if status(err) != 400 || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("d -> a closes a -> b -> d: %v", err)
	}
	if _, err := e.patch(a.Set.ID, `{"inclusions":["`+Href(a.Set.ID)+`"]}`); status(err) != 400 {
		t.Fatalf("self inclusion: %v", err)
	}
	// With several new inclusions, the message names the one that closes
	// the cycle (a), not the first one listed (c, harmless).
	_, err = e.patch(d.Set.ID, `{"inclusions":["`+Href(c.Set.ID)+`","`+Href(a.Set.ID)+`"]}`)
	if status(err) != 400 || !strings.Contains(err.Error(), "including "+Href(a.Set.ID)+" would make a cycle") {
		t.Fatalf("cycle through the second inclusion: %v", err)
	}
	if _, err := e.patch(a.Set.ID, `{"inclusions":["/v2/address-sets/nosuchset"]}`); status(err) != 400 {
		t.Fatalf("unknown set: %v", err)
	}
	if _, err := e.patch(c.Set.ID, `{"inclusions":["`+Href(d.Set.ID)+`"]}`); status(err) != 400 {
		t.Fatalf("a manual set with inclusions: %v", err)
	}
	// Another account's set cannot be included.
	other, err := e.svc.Create(context.Background(), "acct2", "x", SetIn{Name: str("theirs"), Type: str(TypeManual)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.patch(d.Set.ID, `{"inclusions":["`+Href(other.Set.ID)+`"]}`); status(err) != 400 {
		t.Fatalf("another account's set: %v", err)
	}
	// Included sets cannot be deleted; once no longer included they can.
	if _, err := e.svc.Remove(context.Background(), acct, c.Set.ID, nil); status(err) != 409 || !strings.Contains(err.Error(), Href(b.Set.ID)) {
		t.Fatalf("delete an included set: %v", err)
	}
	if _, err := e.patch(b.Set.ID, `{"inclusions":["`+Href(d.Set.ID)+`"]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Remove(context.Background(), acct, c.Set.ID, nil); err != nil {
		t.Fatalf("delete after un-including: %v", err)
	}
	if _, err := e.svc.Remove(context.Background(), acct, d.Set.ID, nil); status(err) != 409 {
		t.Fatalf("d is still included by b: %v", err)
	}
}

// union reads the addresses of set id the way the handler does, n per
// read, and returns the live ones shown ("address@set") and the number of
// reads it took.
func (e *env) union(id string, n int) ([]string, int) {
	e.t.Helper()
	u := &Union{st: NewStore(e.st), account: acct, id: id, now: e.clock}
	var (
		got   []string
		after string
		reads int
	)
	for more := true; more; {
		ms, pos, m, err := u.Read(context.Background(), after, false, n)
		if err != nil {
			e.t.Fatalf("read after %q: %v", after, err)
		}
		reads++
		if len(ms) == 0 && !m {
			break // a Query that stopped at its Limit does not know it was the end
		}
		if len(ms) == 0 || len(ms) > n || len(pos) != len(ms) {
			e.t.Fatalf("a read of %d after %q: %d members, %d positions, more %v", n, after, len(ms), len(pos), m)
		}
		for i, x := range ms {
			if i > 0 && pos[i] <= pos[i-1] || after != "" && pos[i] <= after {
				e.t.Fatalf("positions out of order: %v after %q", pos, after)
			}
			if x.live {
				got = append(got, x.e.Address+"@"+x.set)
			}
		}
		after, more = pos[len(pos)-1], m
	}
	return got, reads
}

func TestAddressesIncludeEveryIncludedSetTransitively(t *testing.T) {
	e := newEnv(t)
	t0 := e.clock
	c := e.create("c", TypeManual, []entryIn{entry("10.0.0.0/8", nil), entry("192.0.2.9", at(t0.Add(time.Minute))), entry("9.0.0.0/8", nil)})
	b := e.create("b", TypeCombined, []entryIn{entry("192.0.2.9", at(t0.Add(time.Hour))), entry("::ffff:198.51.100.1", nil), entry("10.0.0.0/8", nil)}, c.Set.ID)
	a := e.create("a", TypeCombined, []entryIn{entry("2001:db8::1", nil), entry("10.0.0.0/16", nil)}, b.Set.ID)
	// Address order (9 before 10, a /8 before a /16, IPv4 before IPv6),
	// each address once: the entry that expires last wins, the first set
	// reached a tie.
	want := []string{"9.0.0.0/8@" + c.Set.ID, "10.0.0.0/8@" + b.Set.ID, "10.0.0.0/16@" + a.Set.ID, "192.0.2.9@" + b.Set.ID,
		"198.51.100.1@" + b.Set.ID, "2001:db8::1@" + a.Set.ID}
	// Any size of read gives the same union: the merge never shows an
	// address before every set has been read past it.
	for _, n := range []int{1, 2, 3, 100} {
		got, reads := e.union(a.Set.ID, n)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("reads of %d:\n got %v\nwant %v", n, got, want)
		}
		if n == 100 && reads != 1 {
			t.Errorf("the whole union in reads of 100: %d reads, want 1", reads)
		}
	}
	// After b's entry of 192.0.2.9 expires (an hour), the address is
	// gone: c's expired after a minute. An expired address is still a
	// member, hidden, so paging passes it.
	e.advance(2 * time.Hour)
	got, _ := e.union(a.Set.ID, 1)
	if len(got) != 5 || slices.Contains(got, "192.0.2.9@"+b.Set.ID) {
		t.Fatalf("after expiry: %v", got)
	}
	// Another account's set, or a missing one, is a 404.
	u := &Union{st: NewStore(e.st), account: "acct2", id: a.Set.ID, now: e.clock}
	if _, _, _, err := u.Read(context.Background(), "", false, 10); status(err) != 404 {
		t.Fatalf("another account's set: %v", err)
	}
}

func TestEntryValidation(t *testing.T) {
	e := newEnv(t)
	t0 := e.clock
	cases := []struct {
		in   SetIn
		want string
	}{
		{SetIn{Type: str(TypeManual)}, "name is required"},
		{SetIn{Name: str("x")}, "type is required"},
		{SetIn{Name: str("x"), Type: str("text-file")}, "not supported"},
		{SetIn{Name: str("x"), Type: str(TypeManual), Entries: []entryIn{entry("10.0.0.1/8", nil)}}, "did you mean 10.0.0.0/8"},
		{SetIn{Name: str("x"), Type: str(TypeManual), Entries: []entryIn{entry("fe80::1%eth0", nil)}}, "zones"},
		{SetIn{Name: str("x"), Type: str(TypeManual), Entries: []entryIn{entry("300.1.1.1", nil)}}, "not an IP address"},
		{SetIn{Name: str("x"), Type: str(TypeManual), Entries: []entryIn{entry("10.0.0.1", at(t0.Add(-time.Second)))}}, "not in the future"},
		{SetIn{Name: str("x"), Type: str(TypeDynamic), Entries: []entryIn{entry("10.0.0.1", nil)}}, "added by the edge"},
		{SetIn{Name: str("x"), Type: str(TypeManual), Parameters: json.RawMessage(`{"url":"http://x"}`)}, "parameters"},
		{SetIn{Name: str(strings.Repeat("n", 51)), Type: str(TypeManual)}, "1 to 50"},
	}
	for _, c := range cases {
		_, err := e.svc.Create(context.Background(), acct, "tester", c.in)
		if status(err) != 400 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want 400 %q", c.in, err, c.want)
		}
	}
	s := e.create("ok", TypeManual, nil)
	if _, err := e.patch(s.Set.ID, `{"type":"combined"}`); status(err) != 400 {
		t.Errorf("type change: %v", err)
	}
	var many []string
	for i := range 101 {
		many = append(many, fmt.Sprintf(`{"address":"10.1.%d.%d"}`, i/256, i%256))
	}
	if _, err := e.patch(s.Set.ID, `{"entries":[`+strings.Join(many, ",")+`]}`); status(err) != 400 || !strings.Contains(err.Error(), "at most 100") {
		t.Errorf("101 entries in one change: %v", err)
	}
}

func TestDynamicSetsAreWrittenByTheEdge(t *testing.T) {
	e := newEnv(t)
	dyn := e.create("blocked by waf", TypeDynamic, nil)
	man := e.create("manual", TypeManual, nil)
	t0 := e.clock
	rec := func(set, addr string, exp time.Duration) metrics.Record {
		return metrics.Record{Type: metrics.TypeAddress, Set: set, Address: addr, Time: t0.Format(time.RFC3339), Expiry: t0.Add(exp).Format(time.RFC3339)}
	}
	msg, _ := json.Marshal(metrics.Message{Batch: "edge-addr-1", Records: []metrics.Record{
		rec(dyn.Set.ID, "192.0.2.50", 10*time.Minute),
		rec(dyn.Set.ID, "192.0.2.50", 30*time.Minute), // the same again, later: one entry
		rec(man.Set.ID, "192.0.2.51", 10*time.Minute), // not dynamic: dropped
	}})
	e.deliver(string(msg))
	e.fold()
	msg2, _ := json.Marshal(metrics.Message{Batch: "edge-addr-2", Records: []metrics.Record{
		rec(dyn.Set.ID, "192.0.2.50", 5*time.Minute), // earlier: no change
		rec(dyn.Set.ID, "192.0.2.50", time.Hour),     // later: extended
	}})
	e.deliver(string(msg2), string(msg2)) // twice: idempotent
	e.fold()
	st, _ := e.st.AddressSets.GetAddressSet(context.Background(), acct, dyn.Set.ID)
	if len(st.Entries) != 1 || !st.Entries[0].Expiry.Equal(t0.Add(time.Hour)) || st.Entries[0].CreatedBy != string(ActorEdge) {
		t.Fatalf("dynamic entries %+v", st.Entries)
	}
	if m, _ := e.st.AddressSets.GetAddressSet(context.Background(), acct, man.Set.ID); len(m.Entries) != 0 {
		t.Fatalf("a manual set took an edge record: %+v", m.Entries)
	}
	if c := e.counts(metrics.ScopeSet(dyn.Set.ID)); c["added"] != 1 || c["extended"] != 1 {
		t.Fatalf("counts %v", c)
	}
	// The API may rename a dynamic set but not edit its entries.
	if _, err := e.patch(dyn.Set.ID, `{"name":"waf blocks"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.patch(dyn.Set.ID, `{"entries":[]}`); status(err) != 400 {
		t.Fatalf("clearing a dynamic set through the API: %v", err)
	}
}

// An edge batch for one dynamic set reads the set once and writes once:
// the consistent read that finds the set is the write's first attempt.
// Entries with an expiry add the conditional write arming the sweep's
// wake-up.
func TestDynamicAdditionRoundTrips(t *testing.T) {
	e := newEnv(t)
	dyn := e.create("blocked by waf", TypeDynamic, nil)
	exp := e.clock.Add(10 * time.Minute)
	for _, c := range []struct {
		expiry *time.Time
		want   int
	}{{nil, 2}, {&exp, 3}} {
		var recs []metrics.AddressRecord
		for i := range 5 {
			recs = append(recs, metrics.AddressRecord{Set: dyn.Set.ID, Address: fmt.Sprintf("192.0.%d.%d", c.want, i), Expiry: c.expiry})
		}
		e.d.Counter.SetDelay(20 * time.Millisecond)
		e.d.Counter.Reset()
		if err := e.svc.AddDynamic(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		if seq, total := e.d.Counter.Sequential(), e.d.Counter.Total(); seq != c.want || total != c.want {
			t.Errorf("expiry %v: round trips = %d sequential / %d total, want %d / %d (calls %v)", c.expiry != nil, seq, total, c.want, c.want, e.d.Counter.ByOperation())
		}
		e.d.Counter.SetDelay(0)
	}
	if st, _ := e.st.AddressSets.GetAddressSet(context.Background(), acct, dyn.Set.ID); len(st.Entries) != 10 {
		t.Fatalf("entries %+v", st.Entries)
	}
}

func TestConcurrentChangesAreAllKept(t *testing.T) {
	e := newEnv(t)
	s := e.create("busy", TypeManual, nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, errs[i] = e.svc.Replace(context.Background(), acct, s.Set.ID, "tester", nil, func(doc Document) (SetIn, error) {
				doc.Entries = append(doc.Entries, docEntry{Address: fmt.Sprintf("10.9.9.%d", i)})
				b, _ := json.Marshal(doc)
				var in SetIn
				return in, jsontext.UnmarshalStrict(b, &in)
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, _ := e.st.AddressSets.GetAddressSet(context.Background(), acct, s.Set.ID)
	if len(st.Entries) != 8 || st.Set.EntryCount != 8 {
		t.Fatalf("%d entries (count %d), want 8", len(st.Entries), st.Set.EntryCount)
	}
	e.fold()
	if c := e.counts(metrics.ScopeSet(s.Set.ID)); c["added"] != 8 {
		t.Fatalf("counts %v", c)
	}
}

// downSender refuses every send, as SQS in an outage.
type downSender struct{}

func (downSender) Send(context.Context, string, ...string) error {
	return errors.New("queue service unavailable")
}

// An event whose send failed waits in the outbox: the outbox sweep sends
// it, the fold counts it once (a second copy changes nothing), and the
// fold's last step removes the marker, so no later sweep sends it again.
func TestLostEventIsSentByTheOutboxSweepAndCountedOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	down := outbox.New(e.st.Tasks, downSender{}, quiet)
	down.ResendAfter = 0
	e.svc.events = down.Queue("MetricsQueue")
	s := e.create("lost", TypeManual, []entryIn{entry("192.0.2.1", nil), entry("192.0.2.2", nil)})
	if sent := e.q.drain(); len(sent) != 0 {
		t.Fatalf("sent while the queue is down: %v", sent)
	}
	sweep := outbox.New(e.st.Tasks, eventSender{e.q}, quiet)
	testenv.AwaitIndexes() // the outbox is found through an index
	if n, err := sweep.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("outbox sweep: %d %v; want the one event", n, err)
	}
	bodies := e.q.drain()
	e.deliver(bodies...)
	e.deliver(bodies...) // SQS delivers a copy
	if c := e.counts(metrics.ScopeSet(s.Set.ID)); c["added"] != 2 {
		t.Fatalf("counts after the sweep's send and a duplicate: %v; want 2 added", c)
	}
	testenv.AwaitIndexes() // the outbox is found through an index
	if due, err := e.st.Tasks.DueOutbox(ctx, time.Now().Add(time.Hour), 10); err != nil || len(due) != 0 {
		t.Fatalf("markers left after the fold: %+v %v", due, err)
	}
}
