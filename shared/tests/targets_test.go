package tests_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/loadgen"
	"cads/shared/store"
	"cads/shared/tests"
)

// referenceConfig is a configuration shaped like the reference document's
// example: test.json with an inline session and one in its own file. The
// inline session sends to own (an alias of the account), the session
// file's constant to target.
func referenceConfig(own, target string) []file {
	cfg := map[string]any{
		"probabilities": 1,
		"users":         []map[string]string{{"username": "ann", "password": "pw"}},
		"models": map[string]any{
			"browse": map[string]any{"type": "user.StaticSession", "wait-time": 10, "requests": []map[string]any{
				{"name": "home", "method": "GET", "url": own + "/", "wait": true},
			}},
			"buy": map[string]string{"file": "sessions/buy.json"},
		},
	}
	buy := map[string]any{"type": "user.StaticSession",
		"requests":  []map[string]any{{"name": "cart", "method": "GET", "url": own + "/cart", "call-constants": true}},
		"constants": []map[string]any{{"name": "beacon", "method": "GET", "url": target}},
	}
	return []file{{"shop/test.json", mustJSON(cfg)}, {"shop/sessions/buy.json", mustJSON(buy)}}
}

// trapListener is a listener of this machine that counts the connections
// it gets.
func trapListener(t *testing.T) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = c.Close()
		}
	}()
	return ln.Addr().String(), &n
}

func TestUploadsNameOnlyTheAccountsAliases(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Another tenant, with an application of its own.
	if err := e.st.Accounts.CreateAccount(ctx, domain.Account{ID: "tenantb", Name: "tenant b", Ancestors: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	e.createApp("tenantb", "victim", "victim.example.com")
	sqsAddr := strings.TrimPrefix(*e.deps.SQS.Options().BaseEndpoint, "http://")

	refused := map[string]struct{ url, host string }{
		"IP literal":                    {"http://203.0.113.7/", "203.0.113.7"},
		"the embedded SQS":              {"http://" + sqsAddr + "/?Action=ReceiveMessage", sqsAddr},
		"metadata service":              {"http://169.254.169.254/latest/meta-data/iam/", "169.254.169.254"},
		"localhost":                     {"http://localhost/", "localhost"},
		"IPv6 loopback":                 {"http://[::1]:3000/", "[::1]:3000"},
		"the API's own host":            {"http://127.0.0.1:3000/v2/users", "127.0.0.1:3000"},
		"the API's own name":            {"https://local.execute-api.us-east-1.amazonaws.com/api/v2/users", "local.execute-api.us-east-1.amazonaws.com"},
		"another tenant's alias":        {"http://victim.example.com/", "victim.example.com"},
		"own alias with a port":         {"http://" + alias + ":8080/", alias + ":8080"},
		"own alias with an empty port":  {"http://" + alias + ":/", alias + ":"},
		"userinfo naming the own alias": {"http://" + alias + "@evil.example.net/", "evil.example.net"},
		"Unicode look-alike":            {"http://shоp.example.com/", "shоp.example.com"}, // Cyrillic о
		"case-folding look-alike":       {"http://ſhop.example.com/", "ſhop.example.com"}, // long s folds to s
		"punycode look-alike":           {"http://xn--shp-ppa.example.com/", "xn--shp-ppa.example.com"},
		"trailing dot":                  {"http://" + alias + "./", alias + "."},
		"a sub-domain of the own alias": {"http://a." + alias + "/", "a." + alias},
		"own alias as a suffix":         {"http://evil" + alias + "/", "evil" + alias},
	}
	if r := e.raw(e.op, "PUT", "kept", tests.TypeJSON, []byte(singleConfig(base))); r.Status != 200 {
		t.Fatalf("PUT kept: %d %s", r.Status, r.Raw)
	}
	keptBefore := e.getArchive(e.op, "kept").Raw
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			tbz := bz2(t, tarOf(t, referenceConfig(base, c.url)))
			check := func(how string, r reply) {
				t.Helper()
				if r.Status != 400 || r.Body["error"].(map[string]any)["type"] != "bad_request" || !strings.Contains(r.Message, c.host) {
					t.Fatalf("%s: %d %s, want a 400 naming %q", how, r.Status, r.Raw, c.host)
				}
			}
			check("PUT raw", e.raw(e.op, "PUT", "attack", tests.TypeTarBzip2, tbz))
			check("PUT form", e.form(e.op, "PUT", "attack", part{name: "file", filename: "shop.tar.bz2", data: tbz}))
			check("PATCH raw", e.raw(e.op, "PATCH", "kept", tests.TypeTarBzip2, tbz))
			check("PATCH form", e.form(e.op, "PATCH", "kept", part{name: "desc", data: []byte("x")}, part{name: "file", filename: "shop.tar.bz2", data: tbz}))
			check("PUT JSON", e.raw(e.op, "PUT", "attack", tests.TypeJSON, []byte(singleConfig(c.url))))
			if n := e.items("attack"); n != 0 {
				t.Fatalf("%d items stored", n)
			}
			if a := e.getArchive(e.op, "kept"); !bytes.Equal(a.Raw, keptBefore) {
				t.Fatal("a refused PATCH changed the test")
			}
		})
	}
	// The message says where: the session file and the constant.
	r := e.raw(e.op, "PUT", "attack", tests.TypeTarBzip2, bz2(t, tarOf(t, referenceConfig(base, "http://169.254.169.254/"))))
	if !strings.Contains(r.Message, "shop/sessions/buy.json: constants[0].url") {
		t.Fatalf("message %q", r.Message)
	}

	// The own alias in any case is the alias.
	upper := "http://SHOP.Example.COM"
	if r := e.raw(e.op, "PUT", "upper", tests.TypeTarBzip2, bz2(t, tarOf(t, referenceConfig(upper, upper+"/b")))); r.Status != 200 {
		t.Fatalf("upper-case alias: %d %s", r.Status, r.Raw)
	}
	// Another tenant's account sees its own alias accepted, not ours.
	b := other()
	b.AccountID = "tenantb"
	if r := e.raw(b, "PUT", "attack", tests.TypeJSON, []byte(singleConfig(base))); r.Status != 400 || !strings.Contains(r.Message, alias) {
		t.Fatalf("tenant b naming our alias: %d %s", r.Status, r.Raw)
	}
}

// A run sends every request to the edge with the alias as Host, and
// dials nothing but the edge.
func TestRunDialsOnlyTheEdge(t *testing.T) {
	e := newEnv(t)
	if r := e.raw(e.op, "PUT", "shop", tests.TypeTarBzip2, bz2(t, tarOf(t, referenceConfig(base, "HTTP://Shop.Example.com/beacon")))); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Raw)
	}
	var (
		mu     sync.Mutex
		dialed = map[string]int{}
	)
	drv := loadgen.Local{Edge: loadgen.Edge(e.deps.Edge), Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dialed[address]++
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}}
	e.runner = tests.NewRunner(tests.NewRunnerStore(e.st), drv, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := e.call(e.op, "POST", "/v2/tests", map[string]string{"Content-Type": "application/json"}, []byte(`{"id":"shop","duration":1,"virtualUsers":2}`))
	if r.Status != 200 {
		t.Fatalf("POST: %d %s", r.Status, r.Raw)
	}
	loadID := lastRun(t, r)["load_id"].(string)
	e.drain()
	run := lastRun(t, e.call(e.op, "GET", "/v2/tests/shop", nil, nil))
	agg := run["result"].(map[string]any)["aggregate_metrics"].(map[string]any)
	n := int(agg["request_count"].(float64))
	if run["state"] != "succeeded" || n == 0 || agg["error_count"] != 0.0 || e.edge.count(loadID) != n {
		t.Fatalf("run %v; the edge saw %d", run, e.edge.count(loadID))
	}
	// The URL spelt the alias in upper case; the Host is as the URL gave it.
	if h := e.edge.hostsSeen(); h[alias]+h["Shop.Example.com"] != n || len(h) > 2 {
		t.Fatalf("hosts at the edge %v for %d requests", h, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 || dialed[e.deps.Edge.Addr] == 0 {
		t.Fatalf("dialled %v; only the edge %s may be", dialed, e.deps.Edge.Addr)
	}
}

// Run time checks again: a configuration stored with a host that is not
// (any more) an alias of the account's applications runs without it; its
// requests are errors, named in the result, and nothing is dialled for
// them.
func TestRunRefusesHostsThatAreNoLongerAliases(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.createApp(e.op.AccountID, "app2", "old.example.com")
	if r := e.raw(e.op, "PUT", "shop", tests.TypeTarBzip2, bz2(t, tarOf(t, referenceConfig(base, "http://old.example.com/gone")))); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Raw)
	}
	if _, err := e.st.Applications.DeleteApplication(ctx, e.op.AccountID, "app2"); err != nil {
		t.Fatal(err)
	}
	// A configuration written before uploads were checked, naming a
	// listener of this machine.
	trapAddr, accepted := trapListener(t)
	legacy := []byte(singleConfig("http://" + trapAddr))
	now := e.st.Now()
	lt := domain.AppTest{Account: e.op.AccountID, ID: "legacy", MediaType: tests.TypeJSON, Archive: store.NewAppTestBlob(ids.New(), legacy),
		ArchiveUpdated: now, Summary: "{}", Version: 1, Created: now, Updated: now}
	if err := e.st.Tests.CreateAppTest(ctx, lt, legacy, nil); err != nil {
		t.Fatal(err)
	}

	post := func(id string) string {
		r := e.call(e.op, "POST", "/v2/tests", map[string]string{"Content-Type": "application/json"}, []byte(`{"id":"`+id+`","duration":1,"virtualUsers":2}`))
		if r.Status != 200 {
			t.Fatalf("POST %s: %d %s", id, r.Status, r.Raw)
		}
		return lastRun(t, r)["load_id"].(string)
	}
	shopLoad, legacyLoad := post("shop"), post("legacy")
	e.drain()

	result := func(id string) (map[string]any, tests.RunResult) {
		run := lastRun(t, e.call(e.op, "GET", "/v2/tests/"+id, nil, nil))
		var res tests.RunResult
		b, _ := json.Marshal(run["result"])
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		return run, res
	}
	run, res := result("shop")
	if run["state"] != "succeeded" || len(res.Refused) != 1 || !strings.Contains(res.Refused[0], `"old.example.com"`) {
		t.Fatalf("shop run: %v", run)
	}
	var beacon tests.RequestTemplate
	sent := 0
	for _, st := range res.SessionTemplates {
		for _, rt := range st.RequestTemplates {
			if rt.Name == "beacon" {
				beacon = rt
			} else {
				sent += rt.Metrics.RequestCount
			}
		}
	}
	if beacon.Metrics.RequestCount == 0 || beacon.Metrics.ErrorCount != beacon.Metrics.RequestCount || !strings.Contains(beacon.Refused, "old.example.com") {
		t.Fatalf("the refused constant: %+v", beacon)
	}
	agg := res.AggregateMetrics
	if agg.ErrorCount != beacon.Metrics.ErrorCount || agg.RequestCount != sent+beacon.Metrics.RequestCount || e.edge.count(shopLoad) != sent || sent == 0 {
		t.Fatalf("aggregate %+v; sent %d, the edge saw %d", agg, sent, e.edge.count(shopLoad))
	}
	if h := e.edge.hostsSeen(); h["old.example.com"] != 0 {
		t.Fatalf("a refused host reached the edge: %v", h)
	}

	run, res = result("legacy")
	if run["state"] != "succeeded" || len(res.Refused) != 1 || !strings.Contains(res.Refused[0], trapAddr) || res.AggregateMetrics.RequestCount == 0 ||
		res.AggregateMetrics.ErrorCount != res.AggregateMetrics.RequestCount {
		t.Fatalf("legacy run: %v", run)
	}
	if n := accepted.Load(); n != 0 || e.edge.count(legacyLoad) != 0 {
		t.Fatalf("the legacy run connected %d times to the address its URL named, %d times to the edge", n, e.edge.count(legacyLoad))
	}
}

// The alias check of an upload reads the alias claims (the base table,
// consistently), never an index: an application created a moment ago
// is seen, so its alias is accepted by the very next PUT.
func TestUploadAliasCheckReadsConsistently(t *testing.T) {
	e := newEnv(t)
	e.createApp(e.op.AccountID, "fresh", "fresh.example.com")
	e.dyn.Counter.Reset()
	cfg := singleConfig("http://fresh.example.com")
	if r := e.raw(e.op, "PUT", "fresh", tests.TypeJSON, []byte(cfg)); r.Status != 200 {
		t.Fatalf("PUT right after the application: %d %s", r.Status, r.Raw)
	}
	if ev := e.dyn.Counter.Eventual(); len(ev) != 0 {
		t.Errorf("the upload read eventually consistently: %+v", ev)
	}
}
