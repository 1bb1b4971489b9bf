package tests_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/testenv"
	"cads/shared/caller"
	"cads/shared/loadgen"
	"cads/shared/metrics"
	"cads/shared/store"
	"cads/shared/tests"
)

const tbzAccept = "application/x-tar+x-bzip2"

func (e *env) getArchive(p caller.Principal, id string) reply {
	e.t.Helper()
	return e.call(p, "GET", "/v2/tests/"+id, map[string]string{"Accept": tbzAccept}, nil)
}

// items counts what the table holds for a test of the operator's account.
func (e *env) items(id string) int {
	e.t.Helper()
	out, err := e.dyn.Client.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(e.dyn.Table), KeyConditionExpression: aws.String("PK = :pk"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "APPTEST#" + e.op.AccountID + "#" + id}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(out.Items)
}

func configOf(t *testing.T, r reply) map[string]any {
	t.Helper()
	c, ok := r.Body["configuration"].(map[string]any)
	if !ok {
		t.Fatalf("no configuration in %s", r.Raw)
	}
	return c
}

func TestEveryContentTypeInAndOut(t *testing.T) {
	e := newEnv(t)
	i := 0
	for name, up := range uploads(t, base) {
		for _, viaForm := range []bool{false, true} {
			i++
			id := "t" + strings.Repeat("x", i)
			var r reply
			if viaForm {
				// The part's own type is one way to say what the file is.
				r = e.form(e.op, "PUT", id, part{name: "desc", data: []byte("about " + name)}, part{name: "file", filename: "upload.bin", contentType: up.mediaType, data: up.data})
			} else {
				r = e.raw(e.op, "PUT", id, up.mediaType, up.data)
			}
			if r.Status != 200 {
				t.Fatalf("%s (form %v): %d %s", name, viaForm, r.Status, r.Raw)
			}
			c := configOf(t, r)
			if r.str("id") != id || r.str("href") != "/v2/tests/"+id || c["media_type"] != up.mediaType || int(c["size"].(float64)) != len(up.data) || c["file"] != "test.json" {
				t.Fatalf("%s: %s", name, r.Raw)
			}
			if viaForm && r.str("description") != "about "+name {
				t.Fatalf("%s: description %q", name, r.str("description"))
			}
			if bytes.Contains(r.Raw, []byte("secret-pw")) {
				t.Fatalf("the summary shows a password: %s", r.Raw)
			}
			meta := e.call(e.op, "GET", "/v2/tests/"+id, map[string]string{"Accept": "application/json"}, nil)
			if meta.Status != 200 || !bytes.Equal(meta.Raw, r.Raw) {
				t.Fatalf("%s: GET %d %s\nPUT said %s", name, meta.Status, meta.Raw, r.Raw)
			}
			a := e.getArchive(e.op, id)
			if a.Status != 200 || a.contentType() != tbzAccept {
				t.Fatalf("%s: archive %d %s", name, a.Status, a.contentType())
			}
			identical := up.mediaType == tests.TypeTarBzip2 || name == "bzip2 of tar"
			if bytes.Equal(a.Raw, up.data) != identical {
				t.Fatalf("%s: archive byte-identical = %v", name, !identical)
			}
			files := untarBz2(t, a.Raw)
			if up.whole && files["sessions/buy.json"] == "" || !up.whole && len(files) != 1 {
				t.Fatalf("%s: archive holds %v", name, names(files))
			}
			if b := e.getArchive(e.op, id); !bytes.Equal(b.Raw, a.Raw) {
				t.Fatalf("%s: two GETs differ", name)
			}
		}
	}
	// A form file with no useful part type: its name, then its content, tell.
	up := uploads(t, base)["tar.gz"]
	for i, p := range []part{
		{name: "file", filename: "cfg.tgz", contentType: "application/octet-stream", data: up.data},
		{name: "file", filename: "blob", data: up.data},
	} {
		id := "sniff" + strings.Repeat("x", i+1)
		r := e.form(e.op, "PUT", id, p)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if mt := configOf(t, r)["media_type"]; mt != tests.TypeTarGzip && mt != tests.TypeGzip {
			t.Fatalf("media type %v", mt)
		}
	}
}

func TestIDRules(t *testing.T) {
	e := newEnv(t)
	cfg := []byte(singleConfig(base))
	for _, id := range []string{"a", "a1", "load-test-2", strings.Repeat("a", 50)} {
		if r := e.raw(e.op, "PUT", id, tests.TypeJSON, cfg); r.Status != 200 {
			t.Fatalf("%q: %d %s", id, r.Status, r.Raw)
		}
	}
	for _, id := range []string{strings.Repeat("a", 51), "A", "Abc", "1abc", "abc-", "-abc", "a_b", "a.b", "a%20b", "ab%2Fc"} {
		// Percent-encoded ids are refused before the handler (no id needs it).
		want := "must match"
		if strings.Contains(id, "%") {
			want = "percent-encoding"
		}
		for _, m := range []string{"PUT", "PATCH", "GET", "DELETE"} {
			body := cfg
			if m == "GET" || m == "DELETE" {
				body = nil // a GET or DELETE with a body is a 400 of its own
			}
			r := e.raw(e.op, m, id, tests.TypeJSON, body)
			if r.Status != 400 || !strings.Contains(r.Message, want) {
				t.Fatalf("%s %q: %d %s", m, id, r.Status, r.Raw)
			}
		}
	}
	if r := e.call(e.op, "POST", "/v2/tests", map[string]string{"Content-Type": "application/json"}, []byte(`{"id":"A","duration":1,"virtualUsers":1}`)); r.Status != 400 {
		t.Fatalf("POST with a bad id: %d %s", r.Status, r.Raw)
	}
}

func TestCorruptAndOversizeStoreNothing(t *testing.T) {
	e := newEnv(t)
	files := configFiles(base)
	tgz := gz(t, tarOf(t, files))
	big := bytes.Repeat([]byte{0}, tests.MaxArchiveBytes+1)
	cases := []struct {
		name   string
		send   func(id string) reply
		status int
		msg    string
	}{
		{"zip sent as tar.gz", func(id string) reply { return e.raw(e.op, "PUT", id, tests.TypeTarGzip, zipOf(t, files)) }, 400, "not gzip"},
		{"truncated tar.gz", func(id string) reply { return e.raw(e.op, "PUT", id, tests.TypeTarGzip, tgz[:len(tgz)-10]) }, 400, "gzip"},
		{"tar.gz sent as tar.bz2 in a form", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "x.tar.bz2", data: tgz})
		}, 400, "not bzip2"},
		{"no test.json", func(id string) reply {
			return e.raw(e.op, "PUT", id, tests.TypeTar, tarOf(t, []file{{"other.json", "{}"}}))
		}, 400, "no test.json"},
		{"invalid configuration", func(id string) reply { return e.raw(e.op, "PUT", id, tests.TypeJSON, []byte(`{"probabilities":2}`)) }, 400, "probabilities"},
		{"JSON that is not JSON", func(id string) reply { return e.raw(e.op, "PUT", id, tests.TypeJSON, []byte(`{"probabilities":`)) }, 400, "incomplete"},
		{"form without file", func(id string) reply { return e.form(e.op, "PUT", id, part{name: "desc", data: []byte("d")}) }, 400, "file is required"},
		{"form with an unknown field", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tgz", data: tgz}, part{name: "name", data: []byte("x")})
		}, 400, "unknown form field"},
		{"form file sent twice", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tgz", data: tgz}, part{name: "file", filename: "t.tgz", data: tgz})
		}, 400, "twice"},
		{"description with control characters", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tgz", data: tgz}, part{name: "desc", data: []byte("a\x00b")})
		}, 400, "control"},
		{"description with ESC", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tgz", data: tgz}, part{name: "desc", data: []byte("\x1b[31mred")})
		}, 400, "desc holds the control character U+001B"},
		{"description with a newline", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tgz", data: tgz}, part{name: "desc", data: []byte("two\nlines")})
		}, 400, "desc holds the control character U+000A"},
		{"description with a C1 control", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tgz", data: tgz}, part{name: "desc", data: []byte("a\u009bb")})
		}, 400, "desc holds the control character U+009B"},
		{"description with DEL", func(id string) reply {
			return e.form(e.op, "PATCH", id, part{name: "desc", data: []byte("a\x7f")})
		}, 400, "desc holds the control character U+007F"},
		{"description not UTF-8", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tgz", data: tgz}, part{name: "desc", data: []byte("caf\xe9")})
		}, 400, "desc is not valid UTF-8 (byte 0xE9 at offset 3)"},
		{"multipart without boundary", func(id string) reply {
			return e.call(e.op, "PUT", "/v2/tests/"+id, map[string]string{"Content-Type": "multipart/form-data"}, tgz)
		}, 400, "boundary"},
		{"oversize raw body", func(id string) reply { return e.raw(e.op, "PUT", id, tests.TypeTar, big) }, 413, "exceeds"},
		{"oversize form file", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tar", data: big})
		}, 413, "at most"},
		{"oversize body", func(id string) reply {
			return e.form(e.op, "PUT", id, part{name: "file", filename: "t.tar", data: bytes.Repeat([]byte{0}, tests.MaxBodyBytes)})
		}, 413, "exceeds"},
		{"unsupported type", func(id string) reply { return e.raw(e.op, "PUT", id, "text/plain", []byte("x")) }, 415, "text/plain"},
		{"no content type", func(id string) reply { return e.call(e.op, "PUT", "/v2/tests/"+id, nil, []byte("x")) }, 415, "missing Content-Type"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if raceEnabled && strings.HasPrefix(c.name, "oversize") {
				t.Skip("megabytes through one goroutine: run without the race detector (make test-unraced-light)")
			}
			id := "bad" + strings.Repeat("x", i+1)
			r := c.send(id)
			if r.Status != c.status || !strings.Contains(r.Message, c.msg) {
				t.Fatalf("%d %s, want %d containing %q", r.Status, r.Raw, c.status, c.msg)
			}
			if n := e.items(id); n != 0 {
				t.Fatalf("%d items stored", n)
			}
			if g := e.call(e.op, "GET", "/v2/tests/"+id, nil, nil); g.Status != 404 {
				t.Fatalf("GET after the refused PUT: %d", g.Status)
			}
		})
	}
	// A refused PATCH changes nothing either.
	up := uploads(t, base)["tar.bz2"]
	if r := e.raw(e.op, "PUT", "kept", up.mediaType, up.data); r.Status != 200 {
		t.Fatal(r.Status)
	}
	if r := e.raw(e.op, "PATCH", "kept", tests.TypeTarGzip, tgz[:40]); r.Status != 400 {
		t.Fatalf("corrupt PATCH: %d", r.Status)
	}
	if r := e.raw(e.op, "PATCH", "kept", tests.TypeTar, big); r.Status != 413 {
		t.Fatalf("oversize PATCH: %d", r.Status)
	}
	if a := e.getArchive(e.op, "kept"); !bytes.Equal(a.Raw, up.data) || e.items("kept") != 2 {
		t.Fatalf("the refused PATCHes changed the test (%d items)", e.items("kept"))
	}
}

// largeTarBz2 is a tar.bz2 of size bytes of data that bzip2 can hardly
// shrink. Each size is made once per test binary and shared (nobody
// writes to it): compressing a few hundred KB takes seconds under the
// race detector.
func largeTarBz2(t *testing.T, size int) []byte {
	t.Helper()
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	if b, ok := fixtures.largeBz2[size]; ok {
		return b
	}
	noise := make([]byte, size)
	x := uint64(88172645463325252)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		noise[i] = byte(x)
	}
	b := bz2(t, tarOf(t, []file{{"test.json", singleConfig(base)}, {"data.bin", string(noise)}}))
	fixtures.largeBz2[size] = b
	return b
}

// raceArchiveSize is the size of the large archive fixture under the race
// detector, where bzip2 is some 40 times slower: the same for every test
// that needs one, so that it is compressed once, and still more than one
// chunk in the store.
const raceArchiveSize = 300 * 1024

func TestLifecycleAndRoundTrips(t *testing.T) {
	e := newEnv(t)
	c := e.dyn.Counter
	// The delay makes calls made in parallel overlap; 10 ms was too short
	// for a goroutine to start under the race detector on a loaded
	// machine (a GET list once counted 3 for 2).
	c.SetDelay(25 * time.Millisecond)
	up := uploads(t, base)
	measure := func(what string, want int, f func() reply, status int) reply {
		t.Helper()
		for attempt := 0; ; attempt++ {
			c.Reset()
			r := f()
			if r.Status != status {
				t.Fatalf("%s: %d %s", what, r.Status, r.Raw)
			}
			got := c.Sequential()
			if got == want || testenv.Realistic() {
				return r
			}
			// A late-starting goroutine can only make parallel calls look
			// sequential, never the reverse: a read counted high is
			// measured again (a write is not repeatable).
			if got < want || !strings.HasPrefix(what, "GET") || attempt == 2 {
				t.Fatalf("%s: %d sequential round trips, want %d (%v)", what, got, want, c.ByOperation())
			}
		}
	}

	// The largest accepted upload goes in one transaction and comes back
	// byte for byte (a smaller one, still several chunks, under the race
	// detector).
	size := tests.MaxArchiveBytes - 4096
	if raceEnabled {
		size = raceArchiveSize
	}
	large := largeTarBz2(t, size)
	if len(large) > tests.MaxArchiveBytes || len(large) <= store.AppTestChunkBytes {
		t.Fatalf("fixture of %d bytes: not within the limit (%d) or not several chunks (%d)", len(large), tests.MaxArchiveBytes, store.AppTestChunkBytes)
	}
	// Every PUT also reads the account's aliases (the request URLs must
	// name them), then the tests quota's allowance (beside the converted
	// form's chunks, where there is one).
	measure("PUT large", 3, func() reply { return e.raw(e.op, "PUT", "large", tests.TypeTarBzip2, large) }, 200)
	a := measure("GET large archive", 2, func() reply { return e.getArchive(e.op, "large") }, 200)
	if !bytes.Equal(a.Raw, large) {
		t.Fatal("large archive differs")
	}

	// Not a tar.bz2: its converted form is written first.
	measure("PUT", 3, func() reply { return e.raw(e.op, "PUT", "web", up["tar.gz"].mediaType, up["tar.gz"].data) }, 200)
	if r := e.raw(e.op, "PUT", "web", up["zip"].mediaType, up["zip"].data); r.Status != 409 {
		t.Fatalf("second PUT: %d %s", r.Status, r.Raw)
	}
	measure("GET", 1, func() reply { return e.call(e.op, "GET", "/v2/tests/web", nil, nil) }, 200)
	measure("GET archive", 2, func() reply { return e.getArchive(e.op, "web") }, 200)
	r := measure("PATCH desc", 1, func() reply { return e.form(e.op, "PATCH", "web", part{name: "desc", data: []byte("the shop")}) }, 200)
	if r.str("description") != "the shop" || configOf(t, r)["media_type"] != tests.TypeTarGzip {
		t.Fatalf("PATCH desc: %s", r.Raw)
	}
	r = measure("PATCH file", 4, func() reply { return e.raw(e.op, "PATCH", "web", up["zip"].mediaType, up["zip"].data) }, 200)
	if r.str("description") != "the shop" || configOf(t, r)["media_type"] != tests.TypeZip || e.items("web") != 3 {
		t.Fatalf("PATCH file: %s (%d items)", r.Raw, e.items("web"))
	}
	if files := untarBz2(t, e.getArchive(e.op, "web").Raw); files["sessions/buy.json"] == "" {
		t.Fatalf("converted zip: %v", names(files))
	}
	r = e.form(e.op, "PATCH", "web", part{name: "desc", data: []byte("")}, part{name: "file", filename: "c.json", data: []byte(singleConfig(base))})
	if r.Status != 200 || r.str("description") != "" || configOf(t, r)["media_type"] != tests.TypeJSON {
		t.Fatalf("PATCH both: %d %s", r.Status, r.Raw)
	}
	if r := e.form(e.op, "PATCH", "web"); r.Status != 400 || !strings.Contains(r.Message, "nothing to change") {
		t.Fatalf("empty PATCH: %d %s", r.Status, r.Raw)
	}
	if r := e.form(e.op, "PATCH", "nope", part{name: "desc", data: []byte("x")}); r.Status != 404 {
		t.Fatalf("PATCH missing: %d", r.Status)
	}
	if r := e.raw(e.op, "PATCH", "nope", up["json"].mediaType, up["json"].data); r.Status != 404 {
		t.Fatalf("PATCH missing with a file: %d", r.Status)
	}

	l := measure("GET list", 2, func() reply { return e.call(e.op, "GET", "/v2/tests?order=-id", nil, nil) }, 200)
	if len(l.List) != 2 || l.List[0]["id"] != "web" || l.List[1]["id"] != "large" {
		t.Fatalf("list: %s", l.Raw)
	}
	// Another account sees none of it; its own roles decide nothing here.
	if r := e.call(other(), "GET", "/v2/tests", nil, nil); r.Status != 200 || len(r.List) != 0 {
		t.Fatalf("other account's list: %s", r.Raw)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := e.call(other(), m, "/v2/tests/web", nil, nil); r.Status != 404 {
			t.Fatalf("other account %s: %d", m, r.Status)
		}
	}
	// The same account, without a role that lets it read tests: filtered.
	peer := other()
	peer.AccountID = e.op.AccountID
	if r := e.call(peer, "GET", "/v2/tests", nil, nil); r.Status != 200 || len(r.List) != 0 {
		t.Fatalf("role-less list: %s", r.Raw)
	}
	noAccount := e.op
	noAccount.AccountID = ""
	if r := e.call(noAccount, "GET", "/v2/tests", nil, nil); r.Status != 403 {
		t.Fatalf("no account: %d", r.Status)
	}

	// The test's consistent read, the transaction deleting it with its
	// account's usage count (the account's deletion reads that count),
	// then its chunks.
	r = measure("DELETE", 3, func() reply { return e.call(e.op, "DELETE", "/v2/tests/web", nil, nil) }, 200)
	if r.str("id") != "web" || e.items("web") != 0 {
		t.Fatalf("DELETE: %s (%d items left)", r.Raw, e.items("web"))
	}
	if r := e.call(e.op, "DELETE", "/v2/tests/web", nil, nil); r.Status != 404 {
		t.Fatalf("second DELETE: %d", r.Status)
	}
	if r := e.getArchive(e.op, "web"); r.Status != 404 || r.contentType() != "application/json" {
		t.Fatalf("archive of a deleted test: %d %s", r.Status, r.contentType())
	}
	// The id can be used again.
	if r := e.raw(e.op, "PUT", "web", up["json"].mediaType, up["json"].data); r.Status != 200 {
		t.Fatalf("PUT after DELETE: %d %s", r.Status, r.Raw)
	}
}

// countingServer is a stand-in edge on loopback that counts requests by
// load id and by Host.
type countingServer struct {
	*httptest.Server
	mu      sync.Mutex
	byLoad  map[string]int
	methods map[string]int
	hosts   map[string]int
}

func newCountingServer(t *testing.T) *countingServer {
	s := &countingServer{byLoad: map[string]int{}, methods: map[string]int{}, hosts: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hosts[r.Host]++
		s.byLoad[r.Header.Get(loadgen.LoadIDHeader)]++
		s.methods[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		if r.URL.Path == "/cart" {
			w.WriteHeader(http.StatusCreated)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) count(loadID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byLoad[loadID]
}

// hostsSeen is a copy of the Host headers the edge got, with counts.
func (s *countingServer) hostsSeen() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.hosts)
}

func lastRun(t *testing.T, r reply) map[string]any {
	t.Helper()
	run, ok := r.Body["last_run"].(map[string]any)
	if !ok {
		t.Fatalf("no last_run in %s", r.Raw)
	}
	return run
}

func TestRunAgainstALocalServer(t *testing.T) {
	e := newEnv(t)
	srv := e.edge
	up := uploads(t, base)["tar.bz2"]
	if r := e.raw(e.op, "PUT", "shop", up.mediaType, up.data); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Raw)
	}
	post := func(body string) reply {
		return e.call(e.op, "POST", "/v2/tests", map[string]string{"Content-Type": "application/json"}, []byte(body))
	}
	for body, want := range map[string]int{
		`{"duration":1,"virtualUsers":1}`:                                     400,
		`{"id":"shop","virtualUsers":1}`:                                      400,
		`{"id":"shop","duration":0,"virtualUsers":1}`:                         400,
		`{"id":"shop","duration":601,"virtualUsers":1}`:                       400,
		`{"id":"shop","duration":1,"virtualUsers":0}`:                         400,
		`{"id":"shop","duration":1.5,"virtualUsers":1}`:                       400,
		`{"id":"shop","duration":1,"virtualUsers":1,"colour":"red"}`:          400,
		`{"id":"shop","duration":1,"virtualUsers":1,"targets":"Bad Id"}`:      400,
		`{"id":"shop","duration":1,"virtualUsers":1,"targets":"noapp"}`:       404,
		`{"id":"nope","duration":1,"virtualUsers":1}`:                         404,
		`{"id":"shop","duration":1,"virtualUsers":1,"targets":"/v2/users/x"}`: 400,
	} {
		if r := post(body); r.Status != want {
			t.Fatalf("POST %s: %d %s, want %d", body, r.Status, r.Raw, want)
		}
	}
	e.dyn.Counter.Reset()
	r := post(`{"id":"shop","duration":1,"virtualUsers":3,"assignCost":false}`)
	if r.Status != 200 {
		t.Fatalf("POST: %d %s", r.Status, r.Raw)
	}
	// The account's entitlements (the runs it may start); the run, its
	// outbox marker and its counts in one transaction; then the answer's
	// read of the test alongside the send, and the marker's delete once
	// the send succeeded.
	if n := e.dyn.Counter.Total(); n != 4 {
		t.Fatalf("POST took %d round trips, want 4 (%v)", n, e.dyn.Counter.ByOperation())
	}
	run := lastRun(t, r)
	loadID, _ := run["load_id"].(string)
	if run["state"] != "queued" || run["id"] != loadID || loadID == "" || run["assignCost"] != false || run["virtualUsers"] != 3.0 || run["requested_by"] != "/v2/users/"+e.op.ID {
		t.Fatalf("run: %v", run)
	}
	if r := post(`{"id":"shop","duration":1,"virtualUsers":1}`); r.Status != 409 || !strings.Contains(r.Message, loadID) {
		t.Fatalf("second run while one is queued: %d %s", r.Status, r.Raw)
	}

	e.dyn.Counter.Reset()
	if n := e.drain(); n != 1 {
		t.Fatalf("runner got %d messages", n)
	}
	// Read the test, mark it running, read the archive and the account's
	// applications; run; record the result. Each of the two updates of
	// the test puts its journal item in parallel (the tests' list shows
	// the run: docs/data-model.md, Read your writes).
	if n, ops := e.dyn.Counter.Total(), e.dyn.Counter.ByOperation(); n != 7 || ops["PutItem"] != 2 {
		t.Fatalf("the runner made %d round trips, want 7 (%v)", n, ops)
	}
	g := e.call(e.op, "GET", "/v2/tests/shop", nil, nil)
	run = lastRun(t, g)
	if run["state"] != "succeeded" || run["started"] == nil || run["completed"] == nil {
		t.Fatalf("after the run: %v", run)
	}
	var res tests.RunResult
	b, _ := json.Marshal(run["result"])
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	agg := res.AggregateMetrics
	if seen := srv.count(loadID); agg.RequestCount != seen || seen == 0 || agg.ErrorCount != 0 {
		t.Fatalf("the run counted %d requests (%d errors), the server saw %d with its load id", agg.RequestCount, agg.ErrorCount, seen)
	}
	// Delivered to the edge, by the alias.
	if h := srv.hostsSeen(); h[alias] != agg.RequestCount || len(h) != 1 {
		t.Fatalf("the edge saw hosts %v for %d requests", h, agg.RequestCount)
	}
	sum := 0
	for _, rc := range agg.ResponseCounts {
		sum += rc.Count
	}
	if sum != agg.RequestCount || res.VirtualUsers != 3 || res.Duration < 1 || len(res.SessionTemplates) != 2 {
		t.Fatalf("result: %+v", res)
	}
	perTemplate := 0
	for _, st := range res.SessionTemplates {
		for _, rt := range st.RequestTemplates {
			perTemplate += rt.Metrics.RequestCount
		}
	}
	srv.mu.Lock()
	carts := srv.methods["POST /cart"]
	srv.mu.Unlock()
	if perTemplate != agg.RequestCount || carts == 0 {
		t.Fatalf("templates count %d of %d; POST /cart %d", perTemplate, agg.RequestCount, carts)
	}
	if run["access_records"] != nil {
		t.Fatalf("a run without targets sent access records: %v", run["access_records"])
	}

	// Targeting an application: its access records go to the metrics
	// queue, one per request, tagged with the run's load id.
	// The delay makes parallel calls overlap on a loaded machine under
	// -race (10 ms did not, in a CI run at 9acabf6).
	e.dyn.Counter.SetDelay(30 * time.Millisecond)
	e.dyn.Counter.Reset()
	r = post(`{"id":"shop","duration":1,"virtualUsers":2,"targets":"/v2/applications/app1"}`)
	// The decision's data and the application in parallel, then the
	// account's entitlements, then the write (run, outbox marker and
	// counts), then the answer's read alongside the send and the marker's
	// delete.
	if n := e.dyn.Counter.Sequential(); n != 5 && !testenv.Realistic() {
		t.Fatalf("POST with targets: %d sequential round trips, want 5 (%v)", n, e.dyn.Counter.ByOperation())
	}
	e.dyn.Counter.SetDelay(0)
	if r.Status != 200 || lastRun(t, r)["load_id"] == loadID || lastRun(t, r)["targets"] != "/v2/applications/app1" {
		t.Fatalf("next run: %d %s", r.Status, r.Raw)
	}
	loadID = lastRun(t, r)["load_id"].(string)
	e.drain()
	run = lastRun(t, e.call(e.op, "GET", "/v2/tests/shop", nil, nil))
	n := int(run["result"].(map[string]any)["aggregate_metrics"].(map[string]any)["request_count"].(float64))
	if sent := run["access_records"].(map[string]any); int(sent["sent"].(float64)) != n || sent["failed"] != 0.0 || n != srv.count(loadID) {
		t.Fatalf("access records %v for %d requests (server saw %d)", sent, n, srv.count(loadID))
	}
	recs, batches := e.metricsRecords()
	if len(recs) != n || len(batches) == 0 {
		t.Fatalf("the metrics queue got %d records in %d batches, want %d", len(recs), len(batches), n)
	}
	for _, rec := range recs {
		if rec.Type != metrics.TypeAccess || rec.App != "app1" || rec.LoadID != loadID || rec.Arrival == "" || rec.RequestMethod == "" || rec.StatusCode == 0 || !strings.HasPrefix(rec.RequestURL, base) || rec.RequestHost != alias {
			t.Fatalf("record %+v", rec)
		}
	}
	for _, b := range batches {
		if !strings.HasPrefix(b, loadID+"-") {
			t.Fatalf("batch id %q does not derive from the load id", b)
		}
	}

	// Finished: the next run may start, and it gets its own load id.
	r = post(`{"id":"shop","duration":1,"virtualUsers":1}`)
	if r.Status != 200 || lastRun(t, r)["load_id"] == loadID {
		t.Fatalf("next run: %d %s", r.Status, r.Raw)
	}
	// Deleted before the runner got to it: nothing runs.
	before := srv.count(lastRun(t, r)["load_id"].(string))
	if d := e.call(e.op, "DELETE", "/v2/tests/shop", nil, nil); d.Status != 200 {
		t.Fatal(d.Status)
	}
	e.drain()
	if after := srv.count(lastRun(t, r)["load_id"].(string)); after != before {
		t.Fatalf("a deleted test ran: %d requests", after)
	}
}
