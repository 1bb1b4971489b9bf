// Package costtour_test measures the DynamoDB cost of every endpoint, in a
// test binary of its own: go test runs it beside the rest of infra/local's
// tests (goaws keeps its queues in package state, so two platforms cannot
// share a process), and its waits overlap their work. For the same reason
// TestCostListsAtScale measures its collections in worker processes of this
// binary, while TestCostPerEndpoint runs here.
package costtour_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"cads/infra/apispec"
	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/infra/localaws"
	"cads/infra/sam"
	"cads/infra/testenv"
	"cads/shared/clock"
	"cads/shared/ddb"
	"cads/shared/metrics"
	"cads/shared/store"
)

// costUpdate rewrites the cost table of docs/performance.md instead of
// comparing with it: go test -run TestCostPerEndpoint ./infra/local/costtour/ -args -update
var costUpdate = flag.Bool("update", false, "rewrite the cost table in docs/performance.md from this run")

// costDelay is added to every DynamoDB call of a measured request or
// worker invocation so that calls made in parallel overlap and
// Sequential() counts waves, not scheduling luck: a call that starts more
// than this after its sibling (its goroutine waiting for a loaded CPU)
// counts as a wave of its own. Set-up requests run without it.
const costDelay = 30 * time.Millisecond

// scaleDelay is costDelay for TestCostListsAtScale's few measured pages:
// its workers measure while the rest of `make test` runs beside them, and
// a sibling call's goroutine may wait longer than costDelay for a CPU
// (a function's two parallel Queries once counted as two waves).
const scaleDelay = 100 * time.Millisecond

const (
	costBegin = "<!-- cost-table:begin -->"
	costEnd   = "<!-- cost-table:end -->"
)

// costRow is the DynamoDB cost of one request (or one worker invocation).
type costRow struct {
	name         string
	authorizer   bool // false: no authorizer ran (queue workers)
	aSeq, aCalls int
	fSeq, fCalls int
	rcu, wcu     float64
	fRCU, fWCU   float64 // the function's part of rcu and wcu
	aOps, fOps   map[string]int
	function     string // logical id
}

// costTour walks the API through the local platform with a counter on the
// shared DynamoDB client.
type costTour struct {
	t          *testing.T
	p          *local.Platform
	counter    *ddb.Counter
	dyn        *localaws.Dynamo // the platform's DynamoDB server
	db         *dynamodb.Client // the platform's table, not counted
	tpl        *sam.Template
	authorizer string               // logical id of the authorizer function
	routes     map[string]sam.Route // by operationId
	rows       map[string]costRow   // by operationId or worker label
	workers    []string             // worker labels in the order measured
	measured   int                  // depth of measuring() calls in progress
	delay      time.Duration        // each DynamoDB call's while measuring (costDelay)
	realistic  bool                 // on the realistic DynamoDB: flows only, no cost compared
	everyCall  *ddb.Counter         // every DynamoDB call of the tour, never reset
	// clock is the functions' clock: at rest() moves it past the lists'
	// journal window rather than sleeping through it.
	clock *clock.Shifted
}

type costReply struct {
	status int
	raw    []byte
	obj    map[string]any
	list   []map[string]any
}

func (r costReply) str(k string) string { s, _ := r.obj[k].(string); return s }

func startCostTour(t *testing.T) *costTour {
	t.Helper()
	tpl := testenv.Template(t)
	counter := ddb.NewCounter()
	everyCall := ddb.NewCounter() // never reset: every call of the tour
	// A DynamoDB server of the test's own, so that it can also read and
	// write the table directly (large collections are loaded in-process;
	// the counter sees neither).
	// In the realistic pass (CADS_DYNAMO_REALISM) the tour's flows run
	// on that DynamoDB: every request must still answer as on the plain
	// one, but its calls and capacity are not the table's (retried
	// conflicts, re-sent batches), so nothing is compared and no call is
	// delayed.
	ctx := context.Background()
	realism, err := localaws.RealismFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	var dyn *localaws.Dynamo
	if realism != nil {
		dyn, err = localaws.StartRealisticDynamo(ctx, "127.0.0.1:0", nil, *realism)
	} else {
		dyn, err = localaws.StartDynamoServer(ctx, "127.0.0.1:0", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Stop(context.Background()) })
	db, err := localaws.DynamoClient(ctx, dyn.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	shifted := &clock.Shifted{}
	p, _ := localtest.Start(t, func(o *local.Options) {
		o.DynamoEndpoint = dyn.Endpoint
		o.DynamoOptions = append(o.DynamoOptions, counter.Option(), everyCall.Option())
		o.StoreClock = steadyWidths(shifted.Now)
	})
	c := &costTour{t: t, p: p, counter: counter, dyn: dyn, db: db, tpl: tpl, routes: map[string]sam.Route{}, rows: map[string]costRow{}, delay: costDelay, clock: shifted, realistic: realism != nil, everyCall: everyCall}
	if c.realistic {
		c.delay = 0
	}
	for _, api := range tpl.Apis {
		if az, ok := api.Authorizers[api.DefaultAuthorizer]; ok {
			c.authorizer = az.FunctionLogicalID
		}
	}
	if c.authorizer == "" {
		t.Fatal("template.yaml has no default authorizer function")
	}
	byRoute := map[string]sam.Route{}
	for _, r := range tpl.Routes() {
		byRoute[r.Method+" "+r.Path] = r
	}
	for _, e := range apispec.Endpoints {
		if r, ok := byRoute[e.Method+" "+e.Path]; ok {
			c.routes[e.ID] = r
		}
	}
	return c
}

// steadyWidths is now with instants moved forward (by a second and a
// millisecond at most, keeping their order) to ones whose stored forms
// are as long as any other's: milliseconds never ending in 0, Unix
// seconds never in 00. A timestamp attribute (RFC 3339, trailing zeros
// dropped) or a number (DynamoDB sizes its significant digits) is
// otherwise a byte or more shorter at such instants, and an item a few
// bytes over a 1 KB boundary bills a unit less: a row of the table would
// move with the instant the tour ran at (docs/performance.md says so of
// the real table).
func steadyWidths(now clock.Clock) clock.Clock {
	return func() time.Time {
		t := now().Truncate(time.Millisecond)
		if t.Unix()%100 == 0 {
			t = t.Truncate(time.Second).Add(time.Second) // the whole second onto the next's start
		}
		if t.Nanosecond()/int(time.Millisecond)%10 == 0 {
			t = t.Add(time.Millisecond)
		}
		return t
	}
}

func TestSteadyWidthsKeepsOrderAndWidths(t *testing.T) {
	start := time.Date(2026, 11, 28, 5, 8, 58, 0, time.UTC) // Unix 1795842538: 62 s before a second ending in 00
	var at time.Time
	steady := steadyWidths(func() time.Time { return at })
	var prev time.Time
	for ms := range 200_000 {
		at = start.Add(time.Duration(ms)*time.Millisecond + 300*time.Microsecond)
		got := steady()
		if got.Before(prev) || got.Before(at.Truncate(time.Millisecond)) || got.Sub(at) > time.Second+time.Millisecond {
			t.Fatalf("%v -> %v (previous %v): out of order or moved more than a second and a millisecond", at, got, prev)
		}
		prev = got
		if s := got.Format(time.RFC3339Nano); len(s) != len("2026-11-28T05:08:58.123Z") {
			t.Fatalf("%v -> %s: a stored timestamp of another length", at, s)
		}
		if m, s := strconv.FormatInt(got.UnixMilli(), 10), strconv.FormatInt(got.Unix(), 10); strings.HasSuffix(m, "0") || strings.HasSuffix(s, "00") {
			t.Fatalf("%v -> %s ms, %s s: a number with fewer significant digits", at, m, s)
		}
	}
}

// routeMatches says whether path (a query string aside) is a request to
// pattern, a route's path whose {parameters} stand for one segment each.
func routeMatches(pattern, path string) bool {
	path, _, _ = strings.Cut(path, "?")
	want, got := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		if !(strings.HasPrefix(w, "{") && got[i] != "") && w != got[i] {
			return false
		}
	}
	return true
}

// functionOf is the logical id of the function whose CodeUri is dir.
func (c *costTour) functionOf(dir string) string {
	for id, f := range c.tpl.Functions {
		if f.CodeURI == dir {
			return id
		}
	}
	c.t.Fatalf("no function with CodeUri %s in template.yaml", dir)
	return ""
}

// queueOf is the logical id of the queue feeding function id.
func (c *costTour) queueOf(id string) string {
	for _, ev := range c.tpl.Functions[id].Events {
		if ev.SQS != nil {
			return ev.SQS.Queue
		}
	}
	c.t.Fatalf("function %s has no SQS event", id)
	return ""
}

func (c *costTour) send(method, path, secret, ctype string, body []byte) costReply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.p.URL+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := costReply{status: res.StatusCode, raw: raw}
	if t := bytes.TrimSpace(raw); bytes.HasPrefix(t, []byte("[")) {
		_ = json.Unmarshal(raw, &r.list)
	} else {
		_ = json.Unmarshal(raw, &r.obj)
	}
	return r
}

// step sends one request with a JSON body (nil: none; a string is sent
// as is) and requires the exact status. With op (an operationId of the
// contract, which the request must be one of) it is measured: the counter
// is reset before it and read, per caller, after it.
func (c *costTour) step(op string, want int, method, path, secret string, body any) costReply {
	c.t.Helper()
	var raw []byte
	ctype := ""
	if body != nil {
		if s, ok := body.(string); ok {
			raw = []byte(s)
		} else {
			raw, _ = json.Marshal(body)
		}
		ctype = "application/json"
	}
	return c.stepRaw(op, want, method, path, secret, ctype, raw)
}

func (c *costTour) stepRaw(op string, want int, method, path, secret, ctype string, body []byte) costReply {
	c.t.Helper()
	var route sam.Route
	if op != "" {
		var ok bool
		if route, ok = c.routes[op]; !ok {
			c.t.Fatalf("%s: no such operation routed (the contract and template.yaml)", op)
		}
		if route.Method != method || !routeMatches(route.Path, path) {
			c.t.Fatalf("%s (%s %s) measured with %s %s", op, route.Method, route.Path, method, path)
		}
		if _, dup := c.rows[op]; dup {
			c.t.Fatalf("%s measured twice", op)
		}
		defer c.measuring()()
		// Synchronous requests are over when their response is: nothing
		// of an earlier request's function or authorizer is in flight.
		c.counter.Reset()
	}
	r := c.send(method, path, secret, ctype, body)
	if r.status != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.raw)
	}
	if op == "" {
		return r
	}
	c.record(op, route)
	return r
}

// measuring turns the delay of every DynamoDB call on until the
// returned func is called (measurements nest: a worker's trigger is a
// measured request).
func (c *costTour) measuring() func() {
	if c.measured == 0 {
		// Each measured request as the first after a quiet spell: which
		// earlier writes fall in the lists' journal window would
		// otherwise depend on how fast the machine ran the tour, and a
		// list reads those members back (a row's capacity moved by 5 RCU
		// from run to run). What the journal costs a list right after a
		// write is in docs/performance.md, Read your writes.
		c.atRest()
	}
	c.measured++
	c.counter.SetDelay(c.delay)
	return func() {
		if c.measured--; c.measured == 0 {
			c.counter.SetDelay(0)
		}
	}
}

// atRest moves the functions' clock past the lists' journal window, as
// if no write had come within it: a list at rest reads no journal
// members back (docs/data-model.md, Read your writes). Waiting the
// window out instead cost every measurement 5 s. The second more is
// what steadyWidths may have moved the last write ahead.
func (c *costTour) atRest() { c.clock.Advance(store.JournalWindow + time.Second + 2*time.Millisecond) }

// record reads the counter into the row named name, for route.
func (c *costTour) record(name string, route sam.Route) {
	c.t.Helper()
	// The authorizer's only write is its touch of the key's last_used, at
	// most once a minute per key, in parallel with its second round trip:
	// when it falls depends on the clock, not on the request, so it is
	// left out of every row (docs/performance.md).
	a, f := c.counter.Only(c.authorizer).Without("UpdateItem"), c.counter.Only(route.Function)
	ar, aw := a.Consumed()
	fr, fw := f.Consumed()
	row := costRow{name: name, authorizer: route.Authorizer != "", aSeq: a.Sequential(), aCalls: a.Total(), fSeq: f.Sequential(), fCalls: f.Total(),
		rcu: ar + fr, wcu: aw + fw, fRCU: fr, fWCU: fw, aOps: a.ByOperation(), fOps: f.ByOperation(), function: route.Function}
	if row.authorizer && row.aCalls == 0 {
		c.t.Fatalf("%s: the authorizer made no DynamoDB call", name)
	}
	c.rows[name] = row
}

// queueDepth is every message of a queue: visible, in flight or delayed.
// The event source deletes a message only after its handler returned, so
// 0 means no invocation for it is running.
func (c *costTour) queueDepth(id string) int {
	c.t.Helper()
	q, ok := c.p.Queues[id]
	if !ok {
		c.t.Fatalf("no queue %s", id)
	}
	out, err := c.p.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, a := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed} {
		v, _ := strconv.Atoi(out.Attributes[string(a)])
		n += v
	}
	return n
}

func (c *costTour) eventually(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *costTour) idle(queue string) {
	c.t.Helper()
	c.eventually(queue+" to be empty", func() bool { return c.queueDepth(queue) == 0 })
}

// worker measures one invocation of a queue function: its queue is empty
// (no invocation running) before trigger puts one message on it, and
// again when its calls are read, after done says the work is visible.
func (c *costTour) worker(label, dir string, trigger func(), done func() bool) {
	c.t.Helper()
	id := c.functionOf(dir)
	queue := c.queueOf(id)
	c.idle(queue)
	defer c.measuring()()
	c.counter.Reset()
	trigger()
	c.eventually(label, done)
	c.idle(queue)
	f := c.counter.Only(id)
	fr, fw := f.Consumed()
	c.rows[label] = costRow{name: label, fSeq: f.Sequential(), fCalls: f.Total(), rcu: fr, wcu: fw, fOps: f.ByOperation(), function: id}
	c.workers = append(c.workers, label)
}

// TestCostPerEndpoint walks every endpoint of apispec.Endpoints once with a
// successful request through the local platform, and each queue worker
// once, and compares their DynamoDB cost with the table in
// docs/performance.md.
//
// A sequential count can only be inflated by the machine, never
// deflated: two parallel calls count as two waves when the second's
// goroutine waited longer than costDelay for a CPU (make test runs the
// other packages beside this one). So when the table differs, the tour
// runs once more, each row keeps the lower of its two sequential counts,
// and every other figure must be the same in both tours.
func TestCostPerEndpoint(t *testing.T) {
	if os.Getenv(scaleWorkerEnv) != "" {
		t.Skip("measured by the process that started this worker")
	}
	// Each tour in a subtest of its own: its platform stops when the
	// subtest ends, before the next starts (one platform per process).
	var first, second *costTour
	if !t.Run("tour", func(t *testing.T) { first = walkCostTour(t) }) {
		return
	}
	if first.realistic {
		t.Logf("realistic DynamoDB: every endpoint answered as on the plain one; its costs are not compared")
		return
	}
	documented, _, _ := documentedTable(t, costBegin, costEnd)
	measured := first
	if !*costUpdate && strings.TrimSpace(first.table()) != documented {
		t.Logf("the table differs from docs/performance.md; the tour runs again to tell a wave split by a busy machine from a change")
		if !t.Run("again", func(t *testing.T) { second = walkCostTour(t) }) {
			return
		}
		var differ []string
		measured, differ = settleTours(first, second)
		for _, d := range differ {
			t.Errorf("two tours measured a row differently, other than in its sequential counts:\n%s", d)
		}
	}
	if !compareCostTable(t, measured.table(), costBegin, costEnd) {
		measured.logOperations(t, documented)
	}
}

// walkCostTour walks the tour once on a platform of its own, and checks
// that every endpoint and worker was measured.
func walkCostTour(t *testing.T) *costTour {
	began := time.Now()
	c := startCostTour(t)
	p := c.p
	op := p.Bootstrap.Secret
	rootID := p.Bootstrap.RootAccount
	root := "/v2/accounts/" + rootID

	// Times inside one fixed hour, so that log and metric reads cover the
	// same partitions and chunks whenever the test runs.
	hour := began.UTC().Truncate(time.Hour)
	at := began.UTC().Truncate(time.Second)
	window := url.Values{"from": {hour.Format(time.RFC3339)}, "to": {hour.Add(time.Hour).Format(time.RFC3339)}}

	// ---------------------------------------------------------------- identity
	c.step("getUsersSelfAuthorization", 200, "GET", "/v2/users/self/authorization", op, nil)
	// A user's first key of each durability recounts its keys once (no
	// count yet: docs/data-model.md, Access keys); the table shows the
	// steady state.
	c.step("", 200, "POST", "/v2/users/self/authorization", op, map[string]any{"account": root})
	c.step("postUsersSelfAuthorization", 200, "POST", "/v2/users/self/authorization", op, map[string]any{"account": root})
	opSelf := "/v2/users/" + p.Bootstrap.Operator + "/authorization"
	c.step("getUsersAuthorization", 200, "GET", opSelf, op, nil)
	c.step("postUsersAuthorization", 200, "POST", opSelf, op, map[string]any{"account": root})
	c.step("getOpenapi.Json", 200, "GET", "/v2/openapi.json", op, nil)
	uid := c.step("postUsers", 200, "POST", "/v2/users", op, map[string]any{"email": "dev@example.com", "name": "Dev"}).str("id")
	users := "/v2/users/" + uid
	c.step("getUsers", 200, "GET", "/v2/users", op, nil)
	c.step("getUsersById", 200, "GET", users, op, nil)
	c.step("patchUsersById", 200, "PATCH", users, op, map[string]any{"name": "Dev Eloper"})
	c.step("", 200, "POST", users+"/access-keys", op, map[string]any{"type": "bearer"}) // the first: recounts
	k := c.step("postUsersByIdAccessKeys", 200, "POST", users+"/access-keys", op, map[string]any{"type": "bearer", "account": root})
	dev, devKey := k.str("secret_key"), k.str("id")
	c.step("getUsersByIdAccessKeys", 200, "GET", users+"/access-keys", op, nil)
	c.step("getUsersByIdAccessKeysByKeyId", 200, "GET", users+"/access-keys/"+devKey, op, nil)
	spare := c.step("", 200, "POST", users+"/access-keys", op, map[string]any{"type": "bearer"}).str("id")
	c.step("deleteUsersByIdAccessKeysByKeyId", 200, "DELETE", users+"/access-keys/"+spare, op, nil)

	// ---------------------------------------------------------------- accounts, entitlements
	sub := "/v2/accounts/" + c.step("postAccounts", 200, "POST", "/v2/accounts", op, map[string]any{"name": "Cost tour"}).str("id")
	c.step("getAccounts", 200, "GET", "/v2/accounts", op, nil)
	c.step("getAccountsById", 200, "GET", sub, op, nil)
	c.step("patchAccountsById", 200, "PATCH", sub, op, map[string]any{"name": "Cost tour 2"})
	c.step("getAccountsByIdBilling", 200, "GET", sub+"/billing", op, nil)
	ent := c.step("postAccountsByIdEntitlements", 200, "POST", sub+"/entitlements", op, map[string]any{"resource": "address_sets", "quantity": 2}).str("href")
	c.step("getAccountsByIdEntitlements", 200, "GET", sub+"/entitlements", op, nil)
	c.step("getAccountsByIdEntitlementsByEntitlementId", 200, "GET", ent, op, nil)
	c.step("patchAccountsByIdEntitlementsByEntitlementId", 200, "PATCH", ent, op, map[string]any{"quantity": 4})
	c.step("deleteAccountsByIdEntitlementsByEntitlementId", 200, "DELETE", ent, op, nil)
	c.step("getAccountsByIdAuditEvents", 200, "GET", sub+"/audit-events", op, nil)

	// ---------------------------------------------------------------- roles, groups, invitations
	role := c.step("postAccountsByIdRoles", 200, "POST", root+"/roles", op, map[string]any{"name": "Robot keeper",
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{root + "/service-users"}}}})
	roleHref, roleID := role.str("href"), role.str("id")
	c.step("getAccountsByIdRoles", 200, "GET", root+"/roles", op, nil)
	c.step("getAccountsByIdRolesByRoleId", 200, "GET", roleHref, op, nil)
	c.step("patchAccountsByIdRolesByRoleId", 200, "PATCH", roleHref, op, map[string]any{"name": "Robot keeper 2"})
	group := c.step("postAccountsByIdGroups", 200, "POST", root+"/groups", op, map[string]any{"name": "Keepers", "roles": []string{roleHref}})
	groupHref, groupID := group.str("href"), group.str("id")
	c.step("getAccountsByIdGroups", 200, "GET", root+"/groups", op, nil)
	c.step("getAccountsByIdGroupsByGroupId", 200, "GET", groupHref, op, nil)
	c.step("patchAccountsByIdGroupsByGroupId", 200, "PATCH", groupHref, op, map[string]any{"name": "Keepers 2"})

	// Invitations go out through the notifier; the first one is its row.
	notifications := c.queueOf(c.functionOf("functions/notifier"))
	state := func(href string) string { return c.step("", 200, "GET", href, op, nil).str("state") }
	var inv costReply
	c.worker("notifier: one invitation message", "functions/notifier", func() {
		inv = c.step("postAccountsByIdInvitations", 200, "POST", root+"/invitations", op, map[string]any{"user_email": "dev@example.com", "role": roleHref})
	}, func() bool { return state(inv.str("href")) == "sent" })
	invHref, invID := inv.str("href"), inv.str("id")
	c.step("getAccountsByIdInvitations", 200, "GET", root+"/invitations", op, nil)
	c.step("getAccountsByIdInvitationsByInvitationId", 200, "GET", invHref, op, nil)
	c.step("patchAccountsByIdInvitationsByInvitationId", 200, "PATCH", invHref, op, map[string]any{"state": "queued"})
	gi := c.step("postAccountsByIdGroupInvitations", 200, "POST", root+"/group-invitations", op, map[string]any{"user_email": "dev@example.com", "group": groupHref})
	giHref, giID := gi.str("href"), gi.str("id")
	c.idle(notifications)
	c.step("getAccountsByIdGroupInvitations", 200, "GET", root+"/group-invitations", op, nil)
	c.step("getAccountsByIdGroupInvitationsByInvitationId", 200, "GET", giHref, op, nil)
	c.step("patchAccountsByIdGroupInvitationsByInvitationId", 200, "PATCH", giHref, op, map[string]any{"state": "queued"})
	c.idle(notifications)
	if s, g := state(invHref), state(giHref); s != "sent" || g != "sent" {
		t.Fatalf("after the notifier: invitation %s, group invitation %s", s, g)
	}

	// The invitee's side, with its own key.
	c.step("getUsersByIdInvitations", 200, "GET", users+"/invitations", dev, nil)
	c.step("getUsersByIdInvitationsByInvitationId", 200, "GET", users+"/invitations/"+invID, dev, nil)
	c.step("patchUsersByIdInvitationsByInvitationId", 200, "PATCH", users+"/invitations/"+invID, dev, map[string]any{"state": "accepted"})
	c.step("getUsersByIdGroupInvitations", 200, "GET", users+"/group-invitations", dev, nil)
	c.step("getUsersByIdGroupInvitationsByInvitationId", 200, "GET", users+"/group-invitations/"+giID, dev, nil)
	c.step("patchUsersByIdGroupInvitationsByInvitationId", 200, "PATCH", users+"/group-invitations/"+giID, dev, map[string]any{"state": "accepted"})
	c.step("getUsersByIdRoles", 200, "GET", users+"/roles", dev, nil)
	c.step("getUsersByIdGroups", 200, "GET", users+"/groups", dev, nil)
	c.step("getUsersByIdRolesByRoleId", 200, "GET", users+"/roles/"+roleID, dev, nil)
	c.step("getUsersByIdGroupsByGroupId", 200, "GET", users+"/groups/"+groupID, dev, nil)
	c.step("", 200, "GET", root+"/service-users", dev, nil) // the role applies
	c.step("deleteUsersByIdRolesByRoleId", 200, "DELETE", users+"/roles/"+roleID, dev, nil)
	c.step("deleteUsersByIdGroupsByGroupId", 200, "DELETE", users+"/groups/"+groupID, dev, nil)
	c.step("", 403, "GET", root+"/service-users", dev, nil) // and no longer
	c.step("deleteAccountsByIdInvitationsByInvitationId", 200, "DELETE", invHref, op, nil)
	c.step("deleteAccountsByIdGroupInvitationsByInvitationId", 200, "DELETE", giHref, op, nil)
	c.step("deleteAccountsByIdGroupsByGroupId", 200, "DELETE", groupHref, op, nil)
	c.step("deleteAccountsByIdRolesByRoleId", 200, "DELETE", roleHref, op, nil)

	// ---------------------------------------------------------------- service users
	su := c.step("postAccountsByIdServiceUsers", 200, "POST", root+"/service-users", op, map[string]any{"name": "robot"}).str("href")
	c.step("getAccountsByIdServiceUsers", 200, "GET", root+"/service-users", op, nil)
	c.step("getAccountsByIdServiceUsersByServiceUserId", 200, "GET", su, op, nil)
	c.step("patchAccountsByIdServiceUsersByServiceUserId", 200, "PATCH", su, op, map[string]any{"name": "robot 2"})
	c.step("deleteAccountsByIdServiceUsersByServiceUserId", 200, "DELETE", su, op, nil)
	// Who can: the root's roles, the holders of those that grant it, each decided.
	if who := c.step("getAccountsByIdAccess", 200, "GET", root+"/access?method=DELETE&path=/v2/applications/x1", op, nil); len(who.list) == 0 {
		t.Fatalf("who can: nobody listed: %s", who.raw)
	}

	// ---------------------------------------------------------------- applications
	app := c.step("postApplications", 200, "POST", "/v2/applications", op, map[string]any{"name": "Shop", "aliases": []string{"shop.example.com"}})
	appHref, appID := app.str("href"), app.str("id")
	c.step("getApplications", 200, "GET", "/v2/applications", op, nil)
	c.step("getApplicationsById", 200, "GET", appHref, op, nil)
	c.step("patchApplicationsById", 200, "PATCH", appHref, op, map[string]any{"name": "Shop 2"})
	act := c.step("postApplicationsByIdActions", 200, "POST", appHref+"/actions", op, map[string]any{"id": "ping", "url": "https://ops.example.com/ping"}).str("href")
	c.step("getApplicationsByIdActions", 200, "GET", appHref+"/actions", op, nil)
	c.step("getApplicationsByIdActionsByActionId", 200, "GET", act, op, nil)
	c.step("patchApplicationsByIdActionsByActionId", 200, "PATCH", act, op, map[string]any{"description": "pings"})
	c.step("deleteApplicationsByIdActionsByActionId", 200, "DELETE", act, op, nil)
	pc := c.step("postApplicationsByIdPagecontrols", 200, "POST", appHref+"/pagecontrols", op,
		`{"name":"Block bots","mode":"request","conditions":{"is_crawler":{}},"actions":[{"type":"deny","status_code":"403","body":"no"}]}`).str("href")
	c.step("getApplicationsByIdPagecontrols", 200, "GET", appHref+"/pagecontrols", op, nil)
	c.step("getApplicationsByIdPagecontrolsByPagecontrolId", 200, "GET", pc, op, nil)
	c.step("patchApplicationsByIdPagecontrolsByPagecontrolId", 200, "PATCH", pc, op, map[string]any{"enabled": false})
	c.step("getApplicationsByIdWebcontrols", 200, "GET", appHref+"/webcontrols", op, nil)
	c.step("getApplicationsByIdWebcontrolsByWebcontrolId", 200, "GET", strings.Replace(pc, "/pagecontrols/", "/webcontrols/", 1), op, nil)
	c.step("deleteApplicationsByIdPagecontrolsByPagecontrolId", 200, "DELETE", pc, op, nil)

	// ---------------------------------------------------------------- tasks
	var task costReply
	c.worker("task-worker: one start task", "functions/task-worker", func() {
		task = c.step("postTasks", 201, "POST", "/v2/tasks", op, map[string]any{"type": "start", "target": appHref})
	}, func() bool { return state(task.str("href")) == "success" })
	c.step("getTasks", 200, "GET", "/v2/tasks", op, nil)
	c.step("getTasksById", 200, "GET", task.str("href"), op, nil)
	c.step("getTasksByIdLogs", 200, "GET", task.str("href")+"/logs", op, nil)

	// ---------------------------------------------------------------- metrics and logs
	// The aggregator runs the address-expiry sweep with the first message
	// an instance handles and then at most every 30 seconds: the first
	// batch pays for it, the second (seconds later) is the steady cost.
	metricsQueue := p.Queues[c.queueOf(c.functionOf("functions/aggregator"))].URL
	metricsQuery := url.Values{"names": {"requests"}, "summarize": {"true"}, "from": window["from"], "to": window["to"]}
	for i, label := range []string{
		"aggregator: first message of an instance, with the expiry sweep (at most every 30 s)",
		"aggregator: one message of 10 access records of one application",
	} {
		var recs []metrics.Record
		for j := range 10 {
			recs = append(recs, metrics.Record{App: appID, Arrival: at.Format(time.RFC3339Nano), Completed: at.Add(20 * time.Millisecond).Format(time.RFC3339Nano),
				RequestID: fmt.Sprintf("cost-%d-%02d", i, j), RequestMethod: "GET", RequestHost: "shop.example.com", RequestPath: "/", StatusCode: 200,
				BytesIn: 500, BytesOut: 12000, Elapsed: 20, ServerLatency: 15, Country: "DE", CacheSource: "miss", DeliveryStatus: "delivered"})
		}
		batch, _ := json.Marshal(metrics.Message{Batch: fmt.Sprintf("cost-tour-%d", i), Records: recs})
		c.worker(label, "functions/aggregator", func() {
			if _, err := p.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(metricsQueue), MessageBody: aws.String(string(batch))}); err != nil {
				t.Fatal(err)
			}
		}, func() bool {
			m, _ := c.step("", 200, "GET", appHref+"/metrics?"+metricsQuery.Encode(), op, nil).obj["metrics"].(map[string]any)
			return m["requests"] == float64(10*(i+1))
		})
	}
	c.step("getApplicationsByIdMetrics", 200, "GET", appHref+"/metrics?"+metricsQuery.Encode(), op, nil)
	c.step("getApplicationsMetrics", 200, "GET", "/v2/applications/metrics?"+metricsQuery.Encode(), op, nil)
	c.step("postApplicationsByIdLogs", 200, "POST", appHref+"/logs", op,
		map[string]any{"created": at.Format(time.RFC3339), "stream": "deploy", "message": "v2 live", "address": "192.0.2.1", "filename": "deploy.log", "hostname": "ci-1"})
	// The default span (24 hours before now) as 24 whole hours, so that
	// it always covers 24 hourly partitions.
	logsQuery := url.Values{"from": {hour.Add(-23 * time.Hour).Format(time.RFC3339)}, "to": window["to"]}
	if r := c.step("getApplicationsByIdLogs", 200, "GET", appHref+"/logs?"+logsQuery.Encode(), op, nil); !bytes.Contains(r.raw, []byte("cost-1-09")) {
		t.Fatalf("GET logs did not return the aggregated records: %s", r.raw)
	}
	c.step("getLogSchemas", 200, "GET", "/v2/log-schemas", op, nil)
	// An archive of the hour's access records (the 20 aggregated above).
	ref := "/v2/archived-logs/applications/" + appID + "/proxy-logs"
	var prep costReply
	c.worker("task-worker: one prepare-for-download task (an hour of 20 access records)", "functions/task-worker", func() {
		prep = c.step("", 201, "POST", "/v2/tasks", op, map[string]any{"type": "prepare-for-download",
			"parameters": map[string]any{"reference": ref, "from": window["from"][0], "to": window["to"][0]}})
	}, func() bool { return state(prep.str("href")) == "success" })
	c.step("getArchivedLogs", 200, "GET", "/v2/archived-logs", op, nil)
	c.step("getArchivedLogsApplicationsByIdByLogType", 200, "GET", ref+"?"+window.Encode(), op, nil)
	c.step("deleteArchivedLogsApplicationsByIdByLogType", 200, "DELETE", ref, op, nil)

	// ---------------------------------------------------------------- address sets
	set := c.step("postAddressSets", 200, "POST", "/v2/address-sets", op, map[string]any{"name": "office", "type": "manual",
		"entries": []map[string]any{{"address": "192.0.2.0/24", "description": "HQ"}}}).str("href")
	c.step("getAddressSets", 200, "GET", "/v2/address-sets", op, nil)
	c.step("getAddressSetsById", 200, "GET", set, op, nil)
	c.stepRaw("patchAddressSetsById", 200, "PATCH", set, op, "application/json-patch+json",
		[]byte(`[{"op":"add","path":"/entries/-","value":{"address":"198.51.100.4"}}]`))
	c.step("getAddressSetsByIdAddresses", 200, "GET", set+"/addresses", op, nil)
	c.idle(c.queueOf(c.functionOf("functions/aggregator"))) // the set's events are folded
	setQuery := url.Values{"names": {"entries_added"}, "summarize": {"true"}, "from": window["from"], "to": window["to"]}
	c.step("getAddressSetsByIdMetrics", 200, "GET", set+"/metrics?"+setQuery.Encode(), op, nil)
	c.step("getAddressSetsMetrics", 200, "GET", "/v2/address-sets/metrics?"+setQuery.Encode(), op, nil)

	// ---------------------------------------------------------------- metric prototypes
	proto := c.step("postMetricPrototypes", 200, "POST", "/v2/metric-prototypes", op, map[string]any{"default_name": "slow_pages",
		"expression": "count()", "log_type": "proxy-logs", "filter": "elapsed > 2000", "group_by": "request_path"}).str("href")
	c.step("getMetricPrototypes", 200, "GET", "/v2/metric-prototypes", op, nil)
	c.step("getMetricPrototypesById", 200, "GET", proto, op, nil)
	c.step("deleteMetricPrototypesById", 200, "DELETE", proto, op, nil)

	// ---------------------------------------------------------------- application tests
	c.stepRaw("putTestsById", 200, "PUT", "/v2/tests/shop", op, "application/x-tar", localtest.TestTar(t, "http://shop.example.com", "first\n"))
	c.step("getTests", 200, "GET", "/v2/tests", op, nil)
	c.step("getTestsById", 200, "GET", "/v2/tests/shop", op, nil)
	c.stepRaw("patchTestsById", 200, "PATCH", "/v2/tests/shop", op, "application/x-tar", localtest.TestTar(t, "http://shop.example.com", "second\n"))
	var run map[string]any
	c.worker("test-runner: one run (1 s, 2 virtual users) through the stand-in edge", "functions/test-runner", func() {
		c.step("postTests", 200, "POST", "/v2/tests", op, map[string]any{"id": "shop", "duration": 1, "virtualUsers": 2})
	}, func() bool {
		run, _ = c.step("", 200, "GET", "/v2/tests/shop", op, nil).obj["last_run"].(map[string]any)
		return run["state"] == "succeeded" || run["state"] == "failed"
	})
	if loadID, _ := run["load_id"].(string); run["state"] != "succeeded" || p.Edge.Served("shop.example.com", loadID) == 0 {
		t.Fatalf("test run: %v (%d requests answered by the edge)", run, p.Edge.Served("shop.example.com", loadID))
	}

	// ---------------------------------------------------------------- deletes
	c.step("deleteTestsById", 200, "DELETE", "/v2/tests/shop", op, nil)
	c.step("deleteAddressSetsById", 200, "DELETE", set, op, nil)
	stop := c.step("", 201, "POST", "/v2/tasks", op, map[string]any{"type": "stop", "target": appHref}).str("href")
	c.eventually("the stop task", func() bool { return state(stop) == "success" })
	c.step("deleteApplicationsById", 200, "DELETE", appHref, op, nil)
	c.step("deleteAccountsById", 200, "DELETE", sub, op, nil)

	// ---------------------------------------------------------------- the table
	var missing []string
	for _, e := range apispec.Endpoints {
		if _, ok := c.rows[e.ID]; !ok {
			missing = append(missing, e.ID+" ("+e.Method+" "+e.Path+")")
		}
	}
	if len(missing) > 0 {
		t.Fatalf("no row for %d operations of the contract: measure each with one successful c.step(operationId, ...) in the tour:\n%s", len(missing), strings.Join(missing, "\n"))
	}
	if len(c.rows) != len(apispec.Endpoints)+len(c.workers) {
		t.Fatalf("%d rows for %d endpoints and %d workers: a measured route is not in apispec", len(c.rows), len(apispec.Endpoints), len(c.workers))
	}
	c.onlyIndexesEventual()
	if testing.Verbose() {
		c.logOperations(t, "")
		t.Logf("cost tour: %d rows measured in %v\n%s", len(c.rows), time.Since(began).Round(time.Millisecond), c.table())
	}
	return c
}

// logOperations logs the DynamoDB operations by caller of each row
// whose line is not one of documented's (every row's, documented empty):
// what a changed row of the table is made of.
func (c *costTour) logOperations(t *testing.T, documented string) {
	t.Helper()
	known := map[string]bool{}
	for l := range strings.Lines(documented) {
		known[strings.TrimSpace(l)] = true
	}
	for _, label := range c.workers {
		if r := c.rows[label]; !known[tableLine(label, r)] {
			t.Logf("%-70s function %d/%d %v", label, r.fSeq, r.fCalls, r.fOps)
		}
	}
	for _, e := range apispec.Endpoints {
		if r := c.rows[e.ID]; !known[tableLine("`"+e.Method+" "+e.Path+"`", r)] {
			t.Logf("%-62s authorizer %d/%d %v; %s %d/%d %v", e.Method+" "+e.Path, r.aSeq, r.aCalls, r.aOps, r.function, r.fSeq, r.fCalls, r.fOps)
		}
	}
}

// settleTours is the first tour's rows with each sequential count the
// lower of the two tours'. differ has each row whose other figures the
// two tours measured differently (both measures): calls and capacity do
// not depend on the machine's speed.
func settleTours(first, second *costTour) (settled *costTour, differ []string) {
	out := *first
	out.rows = make(map[string]costRow, len(first.rows))
	for name, a := range first.rows {
		b := second.rows[name]
		a.aSeq, a.fSeq = min(a.aSeq, b.aSeq), min(a.fSeq, b.fSeq)
		b.aSeq, b.fSeq = a.aSeq, a.fSeq
		if fmt.Sprint(a) != fmt.Sprint(b) {
			differ = append(differ, fmt.Sprintf("%+v\n%+v", a, b))
		}
		out.rows[name] = a
	}
	slices.Sort(differ)
	return &out, differ
}

func TestSettleToursKeepsTheLowerSequentialCounts(t *testing.T) {
	row := func(aSeq, fSeq, fCalls int) costRow {
		return costRow{name: "r", authorizer: true, aSeq: aSeq, aCalls: 3, fSeq: fSeq, fCalls: fCalls, rcu: 2, fOps: map[string]int{"GetItem": fCalls}}
	}
	first := &costTour{rows: map[string]costRow{"r": row(3, 2, 4)}}
	settled, differ := settleTours(first, &costTour{rows: map[string]costRow{"r": row(2, 3, 4)}})
	if got := settled.rows["r"]; got.aSeq != 2 || got.fSeq != 2 || len(differ) != 0 {
		t.Errorf("settled %+v, differ %q; want sequential counts 2 and 2, no difference", got, differ)
	}
	if first.rows["r"].aSeq != 3 {
		t.Error("settling changed the first tour's rows")
	}
	if _, differ := settleTours(first, &costTour{rows: map[string]costRow{"r": row(3, 2, 5)}}); len(differ) != 1 {
		t.Errorf("a row with another call count: differ %q, want it named", differ)
	}
}

func (c *costTour) table() string {
	var b strings.Builder
	b.WriteString("| Endpoint | Authorizer seq / calls | Function seq / calls | RCU | WCU |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, e := range apispec.Endpoints {
		b.WriteString(tableLine("`"+e.Method+" "+e.Path+"`", c.rows[e.ID]) + "\n")
	}
	for _, label := range c.workers {
		b.WriteString(tableLine(label, c.rows[label]) + "\n")
	}
	return b.String()
}

// tableLine is r's line of the table, named name.
func tableLine(name string, r costRow) string {
	az := "–"
	if r.authorizer {
		az = fmt.Sprintf("%d / %d", r.aSeq, r.aCalls)
	}
	return fmt.Sprintf("| %s | %s | %d / %d | %.1f | %.1f |", name, az, r.fSeq, r.fCalls, r.rcu, r.wcu)
}

// documentedTable is the table between the markers begin and end of
// docs/performance.md, and the file's path and text.
func documentedTable(t *testing.T, begin, end string) (have, path, doc string) {
	t.Helper()
	path = filepath.Join(testenv.Root(t), "docs", "performance.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc = string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %s ... %s section", path, begin, end)
	}
	return strings.TrimSpace(doc[i+len(begin) : j]), path, doc
}

// compareCostTable compares table with the one between the markers begin
// and end of docs/performance.md, or writes it there with -update; it
// says whether they were the same.
func compareCostTable(t *testing.T, table, begin, end string) bool {
	t.Helper()
	have, path, doc := documentedTable(t, begin, end)
	want := strings.TrimSpace(table)
	if have == want {
		return true
	}
	if *costUpdate {
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		doc = doc[:i+len(begin)] + "\n" + want + "\n" + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated the cost table in %s", path)
		return true
	}
	t.Errorf("the DynamoDB cost per request differs from docs/performance.md (- documented, + measured):\n%s\n"+
		"If the change is intended, run: go test -run %s ./infra/local/costtour/ -args -update",
		lineDiff(strings.Split(have, "\n"), strings.Split(want, "\n")), strings.Split(t.Name(), "/")[0])
	return false
}

// lineDiff is a unified-style diff of two short texts, by longest common
// subsequence of lines.
func lineDiff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "-"+a[i])
			i++
		default:
			out = append(out, "+"+b[j])
			j++
		}
	}
	return strings.Join(out, "\n")
}

// eventualBaseReads are the calls (function and operation) whose reads of the base table may
// be eventually consistent (docs/data-model.md, Consistency), each with
// why a stale answer is safe there. Every other read of the base table is
// strongly consistent: a read that may miss a write finished a moment
// before must never decide an answer.
var eventualBaseReads = map[string]string{
	"MetricsFunction BatchGetItem": "metric chunks, written by the asynchronous aggregation, whose delay docs/metrics.md states; " +
		"a chunk read a moment early is the same as one aggregated a moment later",
}

// onlyIndexesEventual fails the tour for a read of the base table without
// ConsistentRead by a function not in eventualBaseReads: the tour walks
// every endpoint and queue worker, so a new eventual read on any of them
// is caught here, whatever the test of its own family checks.
func (c *costTour) onlyIndexesEventual() {
	c.t.Helper()
	seen := map[string]int{}
	for _, call := range c.everyCall.Eventual() {
		if call.Index != "" {
			continue // an index has no consistent read (data-model.md says what each index read may miss)
		}
		seen[call.Caller+" "+call.Operation]++
	}
	for k, n := range seen {
		if _, ok := eventualBaseReads[k]; !ok {
			c.t.Errorf("%d eventually consistent reads of the base table: %s (read with ConsistentRead, or add the call to eventualBaseReads with why a stale answer is safe)", n, k)
		}
	}
}
