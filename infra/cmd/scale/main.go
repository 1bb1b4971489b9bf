// Command scale is `make scale`: a load simulation of the table's key
// design. It starts the local platform in-process on a DynamoDB stand-in
// whose meter counts consumed capacity per partition key
// (localaws.PartitionMeter), builds one large tenant, one busy application
// and many small tenants through the API, and then measures what the real
// handlers consume per partition key:
//
//  1. the authorizer at the design load, in simulated time: a fixed number
//     of authorizer "containers" (access.Service, each with its own warm
//     path) decide the design requests per second, spread over the
//     tenants' keys and the containers at random, on a virtual clock that
//     the meter also reads, so its per-second figures are the design
//     load's;
//  2. the functions behind the routes, per request (warm authorizer):
//     each request kind is sent through the local gateway and the units
//     it consumed on each key, divided by the requests, are scaled by the
//     design requests per second of that kind;
//  3. the aggregator, per invocation: SQS batches of one application's
//     records go through the real handler; the units per key per
//     invocation are scaled by the invocations per second that the design
//     records per second make; then a short real-time burst of concurrent
//     invocations checks the meter's per-second figures against that
//     scaling.
//
// It prints the hottest partition keys against DynamoDB's per-partition
// limits (3,000 RCU and 1,000 WCU per second) and exits non-zero when one
// is over. docs/scale.md explains the design load and the figures.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/sync/errgroup"

	"cads/infra/local"
	"cads/infra/localaws"
	"cads/shared/access"
	"cads/shared/metrics"
	"cads/shared/retry"
	"cads/shared/wire/aggregatorwire"
)

// design is the load the key design is checked against (docs/scale.md).
type design struct {
	largeRPS     float64 // API requests per second of the large tenant
	smallTenants int     // tenants per installation besides the large one
	smallRPS     float64 // API requests per second of each small tenant
	containers   int     // authorizer containers serving them at once
	records      float64 // records per second of the busy application
	perMessage   int     // records per MetricsQueue message (the edge's batch)
	perBatch     int     // messages per aggregator invocation (SQS batch)
}

func main() {
	d := design{}
	flag.Float64Var(&d.largeRPS, "large-rps", 4000, "API requests per second of the large tenant")
	flag.IntVar(&d.smallTenants, "small-tenants", 1000, "small tenants per installation (the design figure; -simulate-small of them are built)")
	flag.Float64Var(&d.smallRPS, "small-rps", 5, "API requests per second of each small tenant")
	flag.IntVar(&d.containers, "containers", 200, "authorizer containers (Lambda concurrency) serving the load")
	flag.Float64Var(&d.records, "records", 1500, "records per second of the busy application")
	flag.IntVar(&d.perMessage, "per-message", 100, "records per MetricsQueue message")
	flag.IntVar(&d.perBatch, "per-batch", 10, "messages per aggregator invocation")
	simSmall := flag.Int("simulate-small", 20, "small tenants actually built and driven")
	users := flag.Int("large-keys", 4, "keys (users) of the large tenant actually built")
	burst := flag.Duration("burst", 2*time.Second, "length of the real-time aggregator burst")
	flag.Parse()
	start := time.Now()
	if err := run(context.Background(), d, *simSmall, *users, *burst); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
	fmt.Printf("\nsimulation took %s\n", time.Since(start).Round(100*time.Millisecond))
}

// vclock is the simulated clock of phase 1 (and of the meter): it moves
// only when told, except that it follows the wall clock when live.
type vclock struct {
	live atomic.Bool
	ns   atomic.Int64
}

func (c *vclock) now() time.Time {
	if c.live.Load() {
		return time.Now()
	}
	return time.Unix(0, c.ns.Load())
}

type sim struct {
	d      design
	p      *local.Platform
	meter  *localaws.PartitionMeter
	clock  *vclock
	client *http.Client
	op     string // operator key
}

type tenant struct {
	account string
	keys    []string // secrets of its users' keys into it
	app     string
}

func run(ctx context.Context, d design, simSmall, users int, burst time.Duration) error {
	clk := &vclock{}
	clk.live.Store(true)
	meter := localaws.NewPartitionMeter(clk.now)
	endpoint, stopDB, err := localaws.StartDynamoMetered(ctx, "127.0.0.1:0", meter)
	if err != nil {
		return err
	}
	defer stopDB(context.Background())
	dir, err := os.MkdirTemp("", "cads-scale")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := local.Start(ctx, local.Options{
		Template: "template.yaml", APIAddr: "127.0.0.1:0", StateDir: filepath.Join(dir, "state"),
		DynamoEndpoint: endpoint,
		// Phase 2 measures what functions read themselves: the gateway's
		// authorizer and the functions' own permission loads stay warm
		// (phase 1 simulates the authorizer's cold reads).
		AuthzStaleness: time.Hour,
		Log:            slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	defer p.Close(context.Background())
	s := &sim{d: d, p: p, meter: meter, clock: clk, client: &http.Client{Timeout: 30 * time.Second}, op: p.Bootstrap.Secret}

	fmt.Println("# Scale simulation (make scale)")
	fmt.Printf("\nDesign load: large tenant %.0f req/s; %d small tenants at %.0f req/s; %d authorizer containers; busy application %.0f records/s in messages of %d records, %d messages per aggregator invocation.\n",
		d.largeRPS, d.smallTenants, d.smallRPS, d.containers, d.records, d.perMessage, d.perBatch)
	setup := time.Now()
	large, err := s.tenant(ctx, "Large", users, 47)
	if err != nil {
		return fmt.Errorf("large tenant: %w", err)
	}
	var small []*tenant
	for i := range simSmall {
		t, err := s.tenant(ctx, fmt.Sprintf("Small %d", i), 1, 0)
		if err != nil {
			return fmt.Errorf("small tenant %d: %w", i, err)
		}
		small = append(small, t)
	}
	fmt.Printf("\nBuilt through the API in %s: the large tenant (50 roles of 20 permissions, %d users (the first the Account owner, the others Editors), one application), %d small tenants (3 control roles, 1 user, 1 application).\n",
		time.Since(setup).Round(100*time.Millisecond), users, simSmall)

	auth, err := s.authorizerPhase(ctx, large, small)
	if err != nil {
		return err
	}
	// The aggregator first: the functions then read the busy
	// application's metrics chunks at the size it grew them to.
	agg, err := s.aggregatorPhase(ctx, large.app, burst)
	if err != nil {
		return err
	}
	fns, err := s.functionPhase(ctx, large)
	if err != nil {
		return err
	}
	return report(d, auth, fns, agg, large, small)
}

// tenant creates an account with entitlements, extra roles of 20
// permissions each, users holding its Editor role with keys into it, and
// one application.
func (s *sim) tenant(ctx context.Context, name string, users, extraRoles int) (*tenant, error) {
	var acct struct{ ID string }
	if err := s.call(ctx, s.op, "POST", "/v2/accounts", map[string]any{"name": name}, &acct); err != nil {
		return nil, err
	}
	base := "/v2/accounts/" + acct.ID
	if err := s.call(ctx, s.op, "POST", base+"/entitlements", map[string]any{"resource": "applications", "quantity": 10}, nil); err != nil {
		return nil, err
	}
	var into struct {
		Secret string `json:"secret_key"`
	}
	if err := s.call(ctx, s.op, "POST", "/v2/users/self/authorization", map[string]any{"account": base}, &into); err != nil {
		return nil, err
	}
	var roles []struct{ Name, Href string }
	if err := s.call(ctx, into.Secret, "GET", base+"/roles", nil, &roles); err != nil {
		return nil, err
	}
	byName := map[string]string{}
	for _, r := range roles {
		byName[r.Name] = r.Href
	}
	if byName["Editor"] == "" || byName["Account owner"] == "" {
		return nil, fmt.Errorf("no control roles in %s", acct.ID)
	}
	t := &tenant{account: acct.ID}
	for u := range users {
		email := fmt.Sprintf("user%d@%s.example.com", u, acct.ID)
		var user struct{ ID string }
		if err := s.call(ctx, s.op, "POST", "/v2/users", map[string]any{"email": email, "name": fmt.Sprintf("User %d", u)}, &user); err != nil {
			return nil, err
		}
		var bare struct {
			Secret string `json:"secret_key"`
		}
		if err := s.call(ctx, s.op, "POST", "/v2/users/"+user.ID+"/access-keys", map[string]any{"type": "bearer"}, &bare); err != nil {
			return nil, err
		}
		var inv struct{ ID string }
		// The first user owns the account (and creates its roles); the
		// others are editors.
		role := byName["Editor"]
		if u == 0 {
			role = byName["Account owner"]
		}
		if err := s.call(ctx, into.Secret, "POST", base+"/invitations", map[string]any{"user_email": email, "role": role}, &inv); err != nil {
			return nil, err
		}
		// The invitee's inbox is written once the notifier has sent it.
		err := retry.Do(ctx, retry.Policy{Retries: 40, Base: 20 * time.Millisecond, Max: 200 * time.Millisecond}, func(error) bool { return true }, func(int) error {
			return s.call(ctx, bare.Secret, "PATCH", "/v2/users/self/invitations/"+inv.ID, map[string]any{"state": "accepted"}, nil)
		})
		if err != nil {
			return nil, fmt.Errorf("accept: %w", err)
		}
		var home struct {
			Secret string `json:"secret_key"`
		}
		if err := s.call(ctx, bare.Secret, "POST", "/v2/users/self/access-keys", map[string]any{"type": "bearer", "account": base}, &home); err != nil {
			return nil, err
		}
		t.keys = append(t.keys, home.Secret)
	}
	for i := range extraRoles {
		var perms []map[string]any
		for j := range 20 {
			perms = append(perms, map[string]any{"method": "GET", "effect": "permit", "spec": []string{fmt.Sprintf("/v2/applications/app%02d%02d/**", i, j)}})
		}
		if err := s.call(ctx, t.keys[0], "POST", base+"/roles", map[string]any{"name": fmt.Sprintf("custom %02d", i), "permissions": perms}, nil); err != nil {
			return nil, err
		}
	}
	var app struct{ ID string }
	alias := strings.ReplaceAll(strings.ToLower(name), " ", "-") + ".example.com"
	if err := s.call(ctx, t.keys[0], "POST", "/v2/applications", map[string]any{"name": name + " shop", "aliases": []string{alias}}, &app); err != nil {
		return nil, err
	}
	t.app = app.ID
	return t, nil
}

// phase is what one phase measured: per partition key, the design load's
// units per second (RCU, WCU), and how it got them.
type phase struct {
	name  string
	perS  map[localaws.PartitionKey]localaws.Units
	notes []string
}

// authorizerPhase decides the design load's requests for one simulated
// second with d.containers access.Services on the virtual clock, starting
// with every container cold (the worst second: afterwards each reads a
// key or an account at most once per second, as in this one), and takes
// the meter's figures for that second.
func (s *sim) authorizerPhase(ctx context.Context, large *tenant, small []*tenant) (phase, error) {
	d := s.d
	st := s.p.Deps.Store
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	containers := make([]*access.Service, d.containers)
	t0 := time.Now().Truncate(time.Second).Add(time.Hour)
	s.clock.ns.Store(t0.UnixNano())
	s.clock.live.Store(false)
	defer s.clock.live.Store(true)
	for i := range containers {
		containers[i] = access.New(access.NewStore(st), log, access.WithStaleness(access.DefaultStaleness), access.WithClock(s.clock.now))
	}
	// The small tenants driven stand for d.smallTenants: each gets
	// d.smallRPS, as every small tenant would.
	total := d.largeRPS + float64(len(small))*d.smallRPS
	rng := rand.New(rand.NewPCG(1, 2))
	type req struct{ key, path string }
	pick := func() req {
		if x := rng.Float64() * total; x < d.largeRPS {
			return req{large.keys[rng.IntN(len(large.keys))], "/v2/applications/" + large.app}
		}
		t := small[rng.IntN(len(small))]
		return req{t.keys[0], "/v2/applications/" + t.app}
	}
	n := int(total)
	step := time.Duration(float64(time.Second) / total)
	started := time.Now()
	var decisions, denied int
	s.meter.Reset()
	for sec := range 1 {
		for i := range n {
			s.clock.ns.Store(t0.Add(time.Duration(sec)*time.Second + time.Duration(i)*step).UnixNano())
			r := pick()
			res, err := containers[rng.IntN(len(containers))].Authorize(ctx, r.key, "GET", r.path)
			if err != nil {
				return phase{}, fmt.Errorf("authorize: %w", err)
			}
			decisions++
			if !res.Decision.Allowed {
				denied++
			}
		}
	}
	if denied > 0 {
		return phase{}, fmt.Errorf("%d of %d simulated decisions denied", denied, decisions)
	}
	ph := phase{name: "authorizer", perS: map[localaws.PartitionKey]localaws.Units{}}
	for _, u := range s.meter.Snapshot() {
		ph.perS[u.PartitionKey] = u.Peak
	}
	ph.notes = append(ph.notes, fmt.Sprintf("%d decisions in one simulated second from cold (%d DynamoDB requests) by %d containers in %s of wall time",
		decisions, s.meter.Requests(), len(containers), time.Since(started).Round(100*time.Millisecond)))
	return ph, nil
}

// mixEntry is one kind of request and its share of a tenant's requests.
type mixEntry struct {
	share        float64
	method, path string
}

// functionPhase sends each kind of request of the mix through the
// gateway with a warm authorizer, n times, and scales the units per
// request on each key by the design requests per second of that kind.
func (s *sim) functionPhase(ctx context.Context, large *tenant) (phase, error) {
	app := "/v2/applications/" + large.app
	acct := "/v2/accounts/" + large.account
	mix := []mixEntry{
		// Every request of the large tenant names its busiest
		// application (a conservative stand-in for its many): reads of
		// the application, dashboards polling its metrics and a few log
		// searches (docs/scale.md has each one's per-key limit).
		{0.50, "GET", app},
		{0.20, "GET", "/v2/applications"},
		{0.05, "GET", app + "/metrics?names=requests,status_codes,response_time"},
		{0.01, "GET", app + "/logs?from=" + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
		{0.12, "GET", "/v2/tasks"},
		{0.06, "GET", acct},
		{0.06, "GET", "/v2/address-sets"},
	}
	const n = 20
	ph := phase{name: "functions", perS: map[localaws.PartitionKey]localaws.Units{}}
	for i, m := range mix {
		key := large.keys[i%len(large.keys)]
		// Warm the authorizer and the function's permission load first.
		if err := s.call(ctx, key, m.method, m.path, nil, nil); err != nil {
			return phase{}, err
		}
		s.meter.Reset()
		for range n {
			if err := s.call(ctx, key, m.method, m.path, nil, nil); err != nil {
				return phase{}, err
			}
		}
		rps := s.d.largeRPS * m.share
		for k, u := range s.meter.Totals() {
			cur := ph.perS[k]
			cur.RCU += u.RCU / n * rps
			cur.WCU += u.WCU / n * rps
			ph.perS[k] = cur
		}
		ph.notes = append(ph.notes, fmt.Sprintf("%s %s: %.0f%% of the large tenant's requests (%.0f/s)", m.method, shortPath(m.path), 100*m.share, rps))
	}
	return ph, nil
}

// aggregatorPhase grows the busy application's current chunks to what a
// busy application fills, measures the units per invocation on each key,
// scales them to the design records per second, and checks the meter
// against that scaling with a real-time burst.
func (s *sim) aggregatorPhase(ctx context.Context, app string, burst time.Duration) (phase, error) {
	d := s.d
	h := aggregatorwire.Handler(s.p.Deps)
	gen := &recordGen{app: app, rng: rand.New(rand.NewPCG(3, 4))}
	var seq atomic.Int64
	invoke := func(at func() time.Time, messages int) error {
		ev := events.SQSEvent{}
		for range messages {
			id := fmt.Sprintf("sim-%d", seq.Add(1))
			body, err := json.Marshal(metrics.Message{Batch: id, Records: gen.records(d.perMessage, at)})
			if err != nil {
				return err
			}
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, Body: string(body)})
		}
		resp, err := h(ctx, ev)
		if err != nil {
			return err
		}
		if len(resp.BatchItemFailures) > 0 {
			return fmt.Errorf("aggregator: %d messages failed", len(resp.BatchItemFailures))
		}
		return nil
	}
	// Warm-up: every bucket of the current chunk of every tier gets a
	// message, so the items are the size they have late in their span.
	now := time.Now().UTC()
	for _, t := range metrics.Tiers {
		for b := t.Chunk(now.Unix()); b <= now.Unix(); b += t.Bucket {
			bt := time.Unix(b, 0)
			if err := invoke(func() time.Time { return bt.Add(time.Duration(rand.N(t.Bucket)) * time.Second) }, 2); err != nil {
				return phase{}, err
			}
		}
	}
	const m = 20
	recent := func() time.Time { return time.Now().Add(-time.Duration(rand.N(5000)) * time.Millisecond) }
	s.meter.Reset()
	for range m {
		if err := invoke(recent, d.perBatch); err != nil {
			return phase{}, err
		}
	}
	perInv := s.meter.Totals()
	inv := d.records / float64(d.perMessage*d.perBatch)
	ph := phase{name: "aggregator", perS: map[localaws.PartitionKey]localaws.Units{}}
	for k, u := range perInv {
		ph.perS[k] = localaws.Units{RCU: u.RCU / m * inv, WCU: u.WCU / m * inv}
	}
	ph.notes = append(ph.notes, fmt.Sprintf("%d invocations of %d messages of %d records measured; design: %.0f invocations/s", m, d.perBatch, d.perMessage, inv))

	// Real-time burst: 4 concurrent invokers for `burst`; the meter's
	// busiest second of each key against the per-invocation figures times
	// the invocations of that second.
	s.meter.Reset()
	var (
		g     errgroup.Group
		mu    sync.Mutex
		bySec = map[int64]int{}
	)
	end := time.Now().Add(burst)
	for range 4 {
		g.Go(func() error {
			for time.Now().Before(end) {
				if err := invoke(recent, d.perBatch); err != nil {
					return err
				}
				mu.Lock()
				bySec[time.Now().Unix()]++
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return phase{}, err
	}
	busiest := 0
	for _, c := range bySec {
		busiest = max(busiest, c)
	}
	top := s.meter.Snapshot()
	if len(top) > 0 {
		var predicted float64
		for k, u := range perInv {
			if k == top[0].PartitionKey {
				predicted = u.WCU / m * float64(busiest)
			}
		}
		ph.notes = append(ph.notes, fmt.Sprintf("real-time burst: %d invocations in %s (busiest second %d); hottest key %s: meter's busiest second %.0f WCU, per-invocation figure × %d = %.0f WCU",
			totalOf(bySec), burst, busiest, top[0].PartitionKey, top[0].Peak.WCU, busiest, predicted))
	}
	return ph, nil
}

func totalOf(m map[int64]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// recordGen makes access records with a busy site's variety.
type recordGen struct {
	app string
	rng *rand.Rand
	mu  sync.Mutex
}

var (
	countries = strings.Fields("US DE GB FR JP BR IN CA AU NL SE ES IT PL MX KR CN RU TR AR ZA NG EG ID TH VN PH MY SG NZ IE BE AT CH DK NO FI PT CZ HU RO GR IL SA AE CO CL PE UA XX")
	uaNames   = strings.Fields("Chrome Firefox Safari Edge Opera Samsung UC Yandex curl Googlebot Bingbot python-requests okhttp Java Go-http-client Wget")
	uaOS      = strings.Fields("Windows macOS iOS Android Linux ChromeOS")
	devices   = strings.Fields("desktop mobile tablet bot tv console")
	sources   = strings.Fields("hit stale miss pass error synthetic")
	delivery  = strings.Fields("delivered delivered delivered delivered client_abort rejected timeout error blocked")
	statuses  = []int{200, 200, 200, 200, 200, 204, 206, 301, 302, 304, 304, 400, 401, 403, 404, 404, 429, 500, 502, 503, 504}
	controls  = strings.Fields("block-bots rate-limit geo-fence maintenance")
)

func (g *recordGen) records(n int, at func() time.Time) []metrics.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]metrics.Record, n)
	for i := range out {
		t := at().UTC()
		r := metrics.Record{Type: "access", App: g.app, Arrival: t.Format(time.RFC3339Nano),
			BytesIn: int64(200 + g.rng.IntN(2000)), BytesOut: int64(500 + g.rng.IntN(200000)),
			CacheSource: sources[g.rng.IntN(len(sources))], Country: countries[g.rng.IntN(len(countries))],
			DeliveryStatus: delivery[g.rng.IntN(len(delivery))], Elapsed: float64(1 + g.rng.IntN(3000)),
			QueueLatency: float64(g.rng.IntN(50)), ServerLatency: float64(1 + g.rng.IntN(800)),
			StatusCode: statuses[g.rng.IntN(len(statuses))], UseragentDevice: devices[g.rng.IntN(len(devices))],
			UseragentName: uaNames[g.rng.IntN(len(uaNames))], UseragentOS: uaOS[g.rng.IntN(len(uaOS))],
			RequestMethod: "GET", RequestPath: fmt.Sprintf("/products/%d", g.rng.IntN(5000)), RequestHost: "shop.example.com",
			RequestID: fmt.Sprintf("%016x", g.rng.Uint64()), RequestAddress: fmt.Sprintf("198.51.100.%d", g.rng.IntN(256)),
		}
		if g.rng.IntN(20) == 0 {
			r.Threat = "sqli"
			r.Webcontrols = []string{controls[g.rng.IntN(len(controls))]}
		}
		out[i] = r
	}
	return out
}

// report prints the hottest keys of the design load, all phases added.
func report(d design, phases ...any) error {
	var ps []phase
	var large *tenant
	var small []*tenant
	for _, x := range phases {
		switch v := x.(type) {
		case phase:
			ps = append(ps, v)
		case *tenant:
			large = v
		case []*tenant:
			small = v
		}
	}
	sum := map[localaws.PartitionKey]localaws.Units{}
	for _, p := range ps {
		fmt.Printf("\n## Phase: %s\n\n", p.name)
		for _, n := range p.notes {
			fmt.Println("- " + n)
		}
		for k, u := range p.perS {
			c := sum[k]
			c.RCU += u.RCU
			c.WCU += u.WCU
			sum[k] = c
		}
	}
	type row struct {
		k    localaws.PartitionKey
		u    localaws.Units
		util float64
	}
	var rows []row
	for k, u := range sum {
		rows = append(rows, row{k, u, max(u.RCU/localaws.PartitionRCULimit, u.WCU/localaws.PartitionWCULimit)})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.util != b.util {
			if a.util > b.util {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k.String(), b.k.String())
	})
	names := map[string]string{large.account: "large tenant", large.app: "busy application"}
	for i, t := range small {
		names[t.account] = fmt.Sprintf("small tenant %d", i)
		names[t.app] = fmt.Sprintf("small tenant %d's application", i)
	}
	fmt.Printf("\n## Hottest partition keys at the design load (all phases added)\n\n")
	fmt.Println("| Partition key | what | RCU/s | WCU/s | of the per-partition limit (3,000 RCU, 1,000 WCU) |")
	fmt.Println("|---|---|---|---|---|")
	over := 0
	for i, r := range rows {
		if r.util > 1 {
			over++
		}
		if i >= 15 && r.util <= 1 {
			continue
		}
		what := ""
		for id, n := range names {
			if strings.Contains(r.k.Key, id) {
				what = n
			}
		}
		fmt.Printf("| `%s` | %s | %.0f | %.0f | %.0f%% |\n", r.k, what, r.u.RCU, r.u.WCU, 100*r.util)
	}
	// The large tenant's RBAC partition is the authorizer's key for
	// every one of its requests: say what it got even when it is not
	// among the hottest.
	for i, r := range rows {
		if r.k.Index == "" && r.k.Key == "RBAC#"+large.account {
			fmt.Printf("\n`RBAC#<large tenant>` (the authorizer's reads of its roles): %.0f RCU/s, %.0f%% of the limit, rank %d.\n", r.u.RCU, 100*r.util, i+1)
		}
	}
	fmt.Printf("\n%d partition keys metered; %d above the per-partition limits.\n", len(rows), over)
	if over > 0 {
		return fmt.Errorf("%d partition keys above DynamoDB's per-partition limits at the design load", over)
	}
	return nil
}

func shortPath(p string) string {
	if i := strings.IndexByte(p, '?'); i > 0 {
		p = p[:i] + "?…"
	}
	return p
}

func (s *sim) call(ctx context.Context, key, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.p.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 && resp.StatusCode != 201 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
