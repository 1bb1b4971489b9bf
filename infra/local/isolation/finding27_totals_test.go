package isolation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/infra/apispec"
	"cads/infra/local/localtest"
	"cads/shared/metrics"
	"cads/shared/wire"
)

// aggregate is one endpoint that sums or counts over the members of a
// collection, and how to read a member's contribution from its answer.
type aggregate struct {
	name   string
	path   string                // with its query
	member func(i int) string    // href of the i-th member of the account
	value  func(r reply) float64 // the total as the endpoint answers it
	counts []float64             // the members' contributions, made distinct
	denied int                   // the member the Reader's deny names
	sub    string                // a read of the member's own, refused with it
}

// TestFinding27_TotalsLeaveOutWhatTheCallerMayNotRead replays finding 3
// of issue 27 through the local gateway: GET /v2/address-sets/metrics
// summed the sets a Reader's role denied (403 on the set and on its
// metrics) into the total. For every aggregate endpoint over the members
// of a collection, the account's Reader role is given a deny of one
// member: the member is refused to the Reader, and its contribution, a
// number no other member makes, is gone from the Reader's total, while
// the owner's total still holds it. The exact totals are asserted with
// and without the deny.
//
// GET /v2/accounts/{id}/billing is not in the table: it is the account's
// bill, not a total over members (docs/rbac.md, "Aggregates"); the last
// subtest pins what it shows.
func TestFinding27_TotalsLeaveOutWhatTheCallerMayNotRead(t *testing.T) {
	p, _ := localtest.Start(t)
	w := &isoWorld{t: t, p: p, op: p.Bootstrap.Secret, root: p.Bootstrap.RootAccount,
		users: map[string]*isoUser{}, id: map[string]string{}, href: map[string]string{}}

	account := w.must("account", 200, "POST", "/v2/accounts", w.op, map[string]any{"name": "Tenant totals"}).str("id")
	owner := w.newUser("totals owner", "totals-owner@example.com")
	_, ownerRole := w.roleNamed(account, "Account owner")
	w.invite(w.op, account, ownerRole, owner)
	w.homeKey(owner, account)
	reader := w.newUser("totals reader", "totals-reader@example.com")
	readerID, readerRole := w.roleNamed(account, "Reader")
	w.invite(owner.secret, account, readerRole, reader)
	w.homeKey(reader, account)

	// Members whose contributions are distinct powers of two, so a total
	// names exactly the members it holds.
	setCounts := []float64{1, 2, 4}
	var sets []string
	for i, n := range setCounts {
		var entries []map[string]any
		for j := range int(n) {
			entries = append(entries, map[string]any{"address": fmt.Sprintf("192.0.2.%d", 10*i+j+1)})
		}
		sets = append(sets, w.must("set", 200, "POST", "/v2/address-sets", owner.secret,
			map[string]any{"name": fmt.Sprintf("set %d", i), "type": "manual", "entries": entries}).str("href"))
	}
	combined := w.must("combined set", 200, "POST", "/v2/address-sets", owner.secret,
		map[string]any{"name": "both", "type": "combined", "inclusions": []string{sets[1], sets[2]}}).str("href")
	appCounts := []float64{1, 2, 4}
	var apps []string
	at := time.Now().UTC()
	var recs []metrics.Record
	for i, n := range appCounts {
		r := w.must("application", 200, "POST", "/v2/applications", owner.secret,
			map[string]any{"name": fmt.Sprintf("shop %d", i), "aliases": []string{fmt.Sprintf("shop%d.totals.example.com", i)}})
		apps = append(apps, r.str("href"))
		for j := range int(n) {
			recs = append(recs, metrics.Record{App: r.str("id"), Arrival: at.Format(time.RFC3339Nano), Completed: at.Add(20 * time.Millisecond).Format(time.RFC3339Nano),
				RequestID: fmt.Sprintf("totals-%d-%d", i, j), RequestMethod: "GET", RequestHost: fmt.Sprintf("shop%d.totals.example.com", i), RequestPath: "/",
				StatusCode: 200, BytesIn: 100, BytesOut: 1000, Elapsed: 20, ServerLatency: 15, Country: "DE", CacheSource: "miss", DeliveryStatus: "delivered"})
		}
	}
	// The edge's records, as the edge sends them (the edge is outside
	// this stack): one message on the metrics queue.
	batch, _ := json.Marshal(metrics.Message{Batch: "finding27-totals", Records: recs})
	if _, err := p.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(p.Queues[wire.MetricsQueue].URL), MessageBody: aws.String(string(batch))}); err != nil {
		t.Fatal(err)
	}
	w.quiet() // folded: the sets' events and the edge's batch

	hour := time.Now().UTC().Truncate(time.Hour)
	window := func(name string) string {
		return "?" + url.Values{"names": {name}, "summarize": {"true"}, "from": {hour.Add(-time.Hour).Format(time.RFC3339)}, "to": {hour.Add(time.Hour).Format(time.RFC3339)}}.Encode()
	}
	metric := func(name string) func(r reply) float64 {
		return func(r reply) float64 {
			m, _ := r.Body["metrics"].(map[string]any)
			v, ok := m[name].(float64)
			if !ok {
				t.Fatalf("no %s in %s", name, r.Raw)
			}
			return v
		}
	}
	entries := func(r reply) float64 {
		var list []map[string]any
		if err := json.Unmarshal([]byte(r.Raw), &list); err != nil {
			t.Fatalf("addresses: %v: %s", err, r.Raw)
		}
		return float64(len(list))
	}
	table := []aggregate{
		{name: "GET /v2/address-sets/metrics", path: "/v2/address-sets/metrics" + window("entries_added"),
			member: func(i int) string { return sets[i] }, value: metric("entries_added"), counts: setCounts, denied: 1,
			sub: "/metrics" + window("entries_added")},
		{name: "GET /v2/applications/metrics", path: "/v2/applications/metrics" + window("requests"),
			member: func(i int) string { return apps[i] }, value: metric("requests"), counts: appCounts, denied: 2,
			sub: "/metrics" + window("requests")},
		// A combined set's addresses are the union of the sets it
		// includes (sets 1 and 2 here; set 0 is deleted below).
		{name: "GET /v2/address-sets/{id}/addresses", path: combined + "/addresses",
			member: func(i int) string { return sets[i] }, value: entries, counts: []float64{0, setCounts[1], setCounts[2]}, denied: 1,
			sub: "/addresses"},
	}

	var readerPerms []map[string]any
	if err := json.Unmarshal([]byte(w.must("Reader role", 200, "GET", readerRole, owner.secret, nil).Raw), &struct {
		Permissions *[]map[string]any `json:"permissions"`
	}{&readerPerms}); err != nil || len(readerPerms) == 0 {
		t.Fatalf("Reader role permissions: %v", err)
	}
	setReader := func(t *testing.T, perms []map[string]any) {
		t.Helper()
		w.on(t).must("edit the Reader role", 200, "PATCH", acct(account)+"/roles/"+readerID, owner.secret, map[string]any{"permissions": perms})
	}

	// reaches reads path as secret until its value is want. Metric chunks
	// are folded asynchronously and read without strong consistency, so a
	// read may lag behind (a lower value) but never run ahead: a value
	// above want holds something it must not, and fails at once.
	reaches := func(t *testing.T, what string, value func(reply) float64, path, secret string, want float64) {
		t.Helper()
		w := w.on(t)
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := value(w.must(what, 200, "GET", path, secret, nil))
			switch {
			case got == want:
				return
			case got > want:
				t.Errorf("%s: %v, want %v", what, got, want)
				return
			case time.Now().After(deadline):
				t.Errorf("%s: %v after 30 s, want %v", what, got, want)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	for _, a := range table {
		t.Run(a.name, func(t *testing.T) {
			w := w.on(t)
			var all float64
			for _, n := range a.counts {
				all += n
			}
			without := all - a.counts[a.denied]
			reaches(t, "owner's total", a.value, a.path, owner.secret, all)
			reaches(t, "Reader's total before the deny", a.value, a.path, reader.secret, all)

			member := a.member(a.denied)
			deny := append(append([]map[string]any{}, readerPerms...),
				map[string]any{"method": "GET", "effect": "deny", "spec": []string{member + "**"}})
			setReader(t, deny)
			t.Cleanup(func() { setReader(t, readerPerms) })

			for _, path := range []string{member, member + a.sub} {
				if r := w.do("GET", path, reader.secret, nil); r.Status != 403 {
					t.Fatalf("GET %s as the denied Reader: %d, want 403: %s", path, r.Status, excerpt(r.Raw, 200))
				}
			}
			reaches(t, fmt.Sprintf("Reader's total with member %d (%v of %v) denied", a.denied, a.counts[a.denied], all), a.value, a.path, reader.secret, without)
			reaches(t, "owner's total with the Reader's deny", a.value, a.path, owner.secret, all)
		})
	}

	// The audit trail holds each change's content (the resource created,
	// the patch): an event is shown to whoever may read its target, so
	// the Reader denied a set reads neither its events nor its entries
	// there, while the owner does.
	t.Run("GET /v2/accounts/{id}/audit-events", func(t *testing.T) {
		w := w.on(t)
		member := sets[1]
		events := acct(account) + "/audit-events?limit=100"
		targets := func(secret, query string) (map[string]int, string) {
			r := w.must("audit events", 200, "GET", events+query, secret, nil)
			var list []struct{ Target string }
			if err := json.Unmarshal([]byte(r.Raw), &list); err != nil {
				t.Fatalf("audit events: %v: %s", err, r.Raw)
			}
			out := map[string]int{}
			for _, e := range list {
				out[e.Target]++
			}
			return out, r.Raw
		}
		filter := "&" + url.Values{"target": {member}}.Encode()
		if got, _ := targets(reader.secret, filter); got[member] == 0 {
			t.Fatalf("the Reader before the deny: no event of %s (%v)", member, got)
		}
		setReader(t, append(append([]map[string]any{}, readerPerms...),
			map[string]any{"method": "GET", "effect": "deny", "spec": []string{member + "**"}}))
		t.Cleanup(func() { setReader(t, readerPerms) })
		if r := w.do("GET", member, reader.secret, nil); r.Status != 403 {
			t.Fatalf("the denied set as the Reader: %d, want 403", r.Status)
		}
		for _, query := range []string{"", filter} {
			got, raw := targets(reader.secret, query)
			if got[member] != 0 || strings.Contains(raw, "192.0.2.11") {
				t.Errorf("the Reader denied %s reads its events (query %q): %d, entries shown: %v", member, query, got[member], strings.Contains(raw, "192.0.2.11"))
			}
			if query == "" && got[sets[2]] == 0 {
				t.Errorf("the Reader lost the events of a set it may read (query %q): %v", query, got)
			}
		}
		if got, raw := targets(owner.secret, filter); got[member] == 0 || !strings.Contains(raw, "192.0.2.11") {
			t.Errorf("the owner with the Reader's deny: %d events of %s, want its create with its entries", got[member], member)
		}
	})

	// A deleted set's history stays in the account's total (metrics.md):
	// shown to whoever may read every set's metrics, and to nobody whose
	// roles refuse a set no permission names, since a deleted set may be
	// one of those. Here the Reader's role refuses every set's metrics by
	// a wildcard and another role of the Reader permits the last set's.
	t.Run("deleted set, wildcard deny", func(t *testing.T) {
		w := w.on(t)
		all := setCounts[0] + setCounts[1] + setCounts[2]
		path := table[0].path
		w.must("delete set 0", 200, "DELETE", sets[0], owner.secret, nil)
		w.quiet()
		reaches(t, "owner's total after the delete (the deleted set's history included)", table[0].value, path, owner.secret, all)
		one := w.must("role for one set", 200, "POST", acct(account)+"/roles", owner.secret, map[string]any{"name": "Last set's metrics",
			"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{sets[2] + "/metrics"}}}})
		w.invite(owner.secret, account, one.str("href"), reader)
		setReader(t, append(append([]map[string]any{}, readerPerms...),
			map[string]any{"method": "GET", "effect": "deny", "spec": []string{"/v2/address-sets/*/metrics"}}))
		t.Cleanup(func() { setReader(t, readerPerms) })
		if r := w.do("GET", sets[1]+"/metrics"+path[strings.Index(path, "?"):], reader.secret, nil); r.Status != 403 {
			t.Fatalf("set 1's metrics as the Reader: %d, want 403", r.Status)
		}
		reaches(t, "Reader's total (the one set it may read; neither the denied set nor the deleted one)", table[0].value, path, reader.secret, setCounts[2])
	})

	// Billing is the account's bill, not a total over what the caller may
	// read (docs/rbac.md, Aggregates): the open month's usage counts
	// every application, the one denied to the Reader included, and who
	// may see the bill is decided on its own path.
	t.Run("GET /v2/accounts/{id}/billing is the account's", func(t *testing.T) {
		w := w.on(t)
		billing := acct(account) + "/billing"
		usage := func(secret string) float64 {
			r := w.must("billing", 200, "GET", billing, secret, nil)
			var months []struct {
				Invoices []struct {
					State string
					Usage struct{ Applications float64 }
				}
			}
			if err := json.Unmarshal([]byte(r.Raw), &months); err != nil || len(months) == 0 || len(months[0].Invoices) == 0 || months[0].Invoices[0].State != "open" {
				t.Fatalf("billing: %v: %s", err, r.Raw)
			}
			return months[0].Invoices[0].Usage.Applications
		}
		setReader(t, append(append([]map[string]any{}, readerPerms...),
			map[string]any{"method": "GET", "effect": "deny", "spec": []string{apps[2] + "**"}}))
		t.Cleanup(func() { setReader(t, readerPerms) })
		if r := w.do("GET", apps[2], reader.secret, nil); r.Status != 403 {
			t.Fatalf("the denied application as the Reader: %d, want 403", r.Status)
		}
		if got, owners := usage(reader.secret), usage(owner.secret); got != float64(len(apps)) || owners != got {
			t.Errorf("billed applications: Reader %v, owner %v, want %d for both", got, owners, len(apps))
		}
		setReader(t, append(append([]map[string]any{}, readerPerms...),
			map[string]any{"method": "GET", "effect": "deny", "spec": []string{billing}}))
		if r := w.do("GET", billing, reader.secret, nil); r.Status != 403 {
			t.Errorf("billing with a deny of its path: %d, want 403: %s", r.Status, excerpt(r.Raw, 200))
		}
	})
}

// aggregateRoutes classes every route that answers a total or a union
// over members: checked by the table above against a Reader denied one
// member, the account's own (docs/rbac.md, Aggregates, and the billing
// subtest), or one member's own (decided by the authorizer on the
// member's path, like any read of it).
var aggregateRoutes = map[string]string{
	"GET /v2/address-sets/metrics":        "table",
	"GET /v2/applications/metrics":        "table",
	"GET /v2/address-sets/{id}/addresses": "table",
	"GET /v2/accounts/{id}/billing":       "account",
	"GET /v2/address-sets/{id}/metrics":   "member",
	"GET /v2/applications/{id}/metrics":   "member",
	"GET /v2/accounts/{id}/audit-events":  "table",
}

// TestFinding27_EveryAggregateIsClassed is the tripwire for the table: a
// route added to the inventory whose last segment names a total (metrics,
// billing, usage, ...) fails here until it is checked against a caller
// denied one member, or documented as the account's own.
func TestFinding27_EveryAggregateIsClassed(t *testing.T) {
	words := map[string]bool{"metrics": true, "billing": true, "usage": true, "total": true, "totals": true, "count": true, "counts": true,
		"summary": true, "stats": true, "statistics": true, "addresses": true, "report": true, "reports": true, "results": true, "events": true}
	seen := map[string]bool{}
	for _, e := range apispec.Endpoints {
		if e.Method != "GET" {
			continue
		}
		for _, w := range strings.Split(e.Path[strings.LastIndex(e.Path, "/")+1:], "-") {
			if !words[w] {
				continue
			}
			route := e.Method + " " + e.Path
			seen[route] = true
			if aggregateRoutes[route] == "" {
				t.Errorf("%s sums or lists over members: add it to the finding 27 table (a Reader denied one member) or class it in aggregateRoutes and docs/rbac.md, Aggregates", route)
			}
		}
	}
	for route := range aggregateRoutes {
		if !seen[route] {
			t.Errorf("aggregateRoutes names %s, which the inventory has not (or not as a total)", route)
		}
	}
}
