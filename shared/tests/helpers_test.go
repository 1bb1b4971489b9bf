package tests_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"sort"
	"sync"
	"testing"
	"time"

	dsbzip2 "github.com/dsnet/compress/bzip2"

	"cads/shared/tests"
)

// file is an archive entry of a test fixture.
type file struct {
	name, body string
}

// configFiles is a valid configuration: test.json with an inline session
// and one kept in its own file, sending to base.
//
// Every request waits fixtureWaitMS after it: the runs' assertions count
// requests (what the run reports against what the edge saw), which holds
// for any number, and a virtual user that never waits sends thousands a
// second, each costing CPU on both ends (and an access record when the
// run targets an application) and asserting nothing more.
func configFiles(base string) []file {
	cfg := map[string]any{
		"probabilities": 1,
		"users":         []map[string]string{{"username": "ann", "password": "secret-pw"}},
		"parameters":    map[string]any{"region": map[string]string{"type": "string", "title": "Region", "description": "where"}},
		"models": map[string]any{
			"browse": map[string]any{
				"type": "user.StaticSession", "name": "browse", "wait-time": fixtureWaitMS,
				"requests": []map[string]any{
					{"name": "home", "method": "GET", "url": base + "/", "headers": map[string][]string{"X-Test": {"1"}}, "wait": true},
					{"name": "item", "method": "GET", "url": base + "/item", "cookies": []map[string]string{{"name": "sid", "value": "abc"}}, "wait": true},
				},
			},
			"buy": map[string]string{"file": "sessions/buy.json"},
		},
	}
	buy := map[string]any{"type": "user.RandomSession", "length": 2, "wait-time": fixtureWaitMS, "requests": []map[string]any{
		{"name": "cart", "method": "POST", "url": base + "/cart", "probability": 1, "wait": true},
	}}
	return []file{{"test.json", mustJSON(cfg)}, {"sessions/buy.json", mustJSON(buy)}, {"README", "a test\n"}}
}

// fixtureWaitMS is the fixture's wait after each request: a virtual user
// sends at most some 200 requests a second, still over a hundred per run
// (several ingest messages of access records) on a loaded machine.
const fixtureWaitMS = 4

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func tarOf(t testing.TB, files []file) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: mt, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gz compresses at the fastest level: what the fixtures decompress to is
// what the tests are about, and the default level takes some three times
// as long for the 16 MB of a gzip bomb under the race detector.
func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func bz2(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := dsbzip2.NewWriter(&buf, &dsbzip2.WriterConfig{Level: 9})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t testing.TB, files []file) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// upload is a configuration in one media type.
type upload struct {
	mediaType string
	data      []byte
	// whole says the upload holds every file of the fixture (JSON ones
	// hold only test.json, and then no session file may be referenced).
	whole bool
}

// uploads returns the fixture in every accepted media type. JSON-only
// forms get a configuration without a session file. The fixtures are
// made once per base and shared (nobody writes to them): compressing
// them costs tens of milliseconds under the race detector, and many
// tests need them.
func uploads(t testing.TB, base string) map[string]upload {
	t.Helper()
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	u, ok := fixtures.uploads[base]
	if !ok {
		u = makeUploads(t, base)
		fixtures.uploads[base] = u
	}
	return maps.Clone(u)
}

// fixtures are the test binary's fixtures that are costly to make: made
// on first use, then shared.
var fixtures = struct {
	mu       sync.Mutex
	uploads  map[string]map[string]upload
	largeBz2 map[int][]byte
}{uploads: map[string]map[string]upload{}, largeBz2: map[int][]byte{}}

func makeUploads(t testing.TB, base string) map[string]upload {
	files := configFiles(base)
	tr := tarOf(t, files)
	single := singleConfig(base)
	return map[string]upload{
		"tar":          {tests.TypeTar, tr, true},
		"zip":          {tests.TypeZip, zipOf(t, files), true},
		"tar.gz":       {tests.TypeTarGzip, gz(t, tr), true},
		"tar.bz2":      {tests.TypeTarBzip2, bz2(t, tr), true},
		"bzip2 of tar": {tests.TypeBzip2, bz2(t, tr), true},
		"gzip of tar":  {tests.TypeGzip, gz(t, tr), true},
		"bzip2 json":   {tests.TypeBzip2, bz2(t, []byte(single)), false},
		"gzip json":    {tests.TypeGzip, gz(t, []byte(single)), false},
		"json":         {tests.TypeJSON, []byte(single), false},
	}
}

// singleConfig is a configuration that is test.json alone.
func singleConfig(base string) string {
	return mustJSON(map[string]any{"probabilities": 1, "models": map[string]any{
		"only": map[string]any{"type": "user.StaticSession", "requests": []map[string]any{{"name": "home", "method": "GET", "url": base + "/"}}},
	}})
}

// untarBz2 reads a tar.bz2 with the standard library and returns its
// regular files by name.
func untarBz2(t testing.TB, b []byte) map[string]string {
	t.Helper()
	plain, err := io.ReadAll(bzip2.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatalf("not bzip2: %v", err)
	}
	tr := tar.NewReader(bytes.NewReader(plain))
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not a tar: %v", err)
		}
		body, _ := io.ReadAll(tr)
		out[h.Name] = string(body)
	}
}

func names(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
