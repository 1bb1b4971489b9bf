package tests_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/shared/store"
	"cads/shared/tests"
)

// platform is the whole system on loopback: the local API Gateway (with
// its base64 handling of binary media types), the authorizer, the tests
// function, the SQS server and the event source feeding the test runner.
type platform struct {
	t      *testing.T
	url    string
	secret string
	edge   *local.Edge
}

func startPlatform(t *testing.T) platform {
	t.Helper()
	p, _ := localtest.Start(t)
	return platform{t: t, url: p.URL, secret: p.Bootstrap.Secret, edge: p.Edge}
}

func (p platform) do(method, path string, header map[string]string, body []byte) (int, http.Header, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.url+path, bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.secret)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func (p platform) json(method, path string, body any) (int, map[string]any) {
	p.t.Helper()
	var raw []byte
	h := map[string]string{}
	if body != nil {
		raw, _ = json.Marshal(body)
		h["Content-Type"] = "application/json"
	}
	st, hdr, b := p.do(method, path, h, raw)
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		p.t.Fatalf("%s %s: Content-Type %q: %s", method, path, ct, b)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return st, m
}

func TestThroughTheLocalPlatform(t *testing.T) {
	p := startPlatform(t)
	// The fixtures' requests name this application's alias; the runs go
	// to the platform's stand-in edge, which answers for it.
	st, app := p.json("POST", "/v2/applications", map[string]any{"name": "Shop", "aliases": []string{alias}})
	if st != 200 {
		t.Fatalf("POST application: %d %v", st, app)
	}
	appID := app["id"].(string)

	// A tar.bz2 of several chunks goes in base64-encoded and comes back
	// byte for byte through the gateway.
	size := 1 << 20
	if raceEnabled {
		size = raceArchiveSize
	}
	tbz := largeTarBz2(t, size)
	if len(tbz) <= store.AppTestChunkBytes {
		t.Fatalf("fixture of %d bytes: not several chunks (%d)", len(tbz), store.AppTestChunkBytes)
	}
	st, _, b := p.do("PUT", "/v2/tests/big", map[string]string{"Content-Type": tests.TypeTarBzip2}, tbz)
	if st != 200 {
		t.Fatalf("PUT tar.bz2: %d %s", st, b)
	}
	st, hdr, b := p.do("GET", "/v2/tests/big", map[string]string{"Accept": tests.TypeTarBzip2}, nil)
	if st != 200 || hdr.Get("Content-Type") != tests.TypeTarBzip2 || !bytes.Equal(b, tbz) {
		t.Fatalf("GET archive: %d %s, %d bytes, identical %v", st, hdr.Get("Content-Type"), len(b), bytes.Equal(b, tbz))
	}
	if !strings.Contains(hdr.Get("Content-Disposition"), "big.tar.bz2") {
		t.Fatalf("Content-Disposition %q", hdr.Get("Content-Disposition"))
	}

	// A zip in a form comes back converted.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("desc", "the shop")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="shop.zip"`)
	h.Set("Content-Type", "application/zip")
	w, _ := mw.CreatePart(h)
	_, _ = w.Write(zipOf(t, configFiles(base)))
	_ = mw.Close()
	st, _, b = p.do("PUT", "/v2/tests/shop", map[string]string{"Content-Type": mw.FormDataContentType()}, form.Bytes())
	if st != 200 || !bytes.Contains(b, []byte(`"description":"the shop"`)) {
		t.Fatalf("PUT form: %d %s", st, b)
	}
	_, _, b = p.do("GET", "/v2/tests/shop", map[string]string{"Accept": tests.TypeTarBzip2 + ", application/json"}, nil)
	if files := untarBz2(t, b); files["test.json"] == "" || files["sessions/buy.json"] == "" {
		t.Fatalf("converted zip holds %v", names(files))
	}
	if st, m := p.json("GET", "/v2/tests/shop", nil); st != 200 || m["href"] != "/v2/tests/shop" {
		t.Fatalf("GET metadata: %d %v", st, m)
	}

	// Too large for the function, small enough for the gateway: the API's 413.
	st, hdr, b = p.do("PUT", "/v2/tests/huge", map[string]string{"Content-Type": tests.TypeTar}, make([]byte, tests.MaxArchiveBytes+1))
	if st != 413 || hdr.Get("Content-Type") != "application/json" || !bytes.Contains(b, []byte(`"payload_too_large"`)) {
		t.Fatalf("oversize PUT: %d %s", st, b)
	}
	// A corrupt archive: 400, and no test.
	st, _, _ = p.do("PUT", "/v2/tests/broken", map[string]string{"Content-Type": tests.TypeTarBzip2}, tbz[:len(tbz)/2])
	if st != 400 {
		t.Fatalf("corrupt PUT: %d", st)
	}
	if st, _ := p.json("GET", "/v2/tests/broken", nil); st != 404 {
		t.Fatalf("GET of the refused test: %d", st)
	}

	// A run: queued by the API, executed by the runner behind the SQS
	// event source, delivered to the stand-in edge, which counts what it
	// answers.
	st, m := p.json("POST", "/v2/tests", map[string]any{"id": "shop", "duration": 1, "virtualUsers": 2, "assignCost": true})
	if st != 200 {
		t.Fatalf("POST run: %d %v", st, m)
	}
	run := m["last_run"].(map[string]any)
	loadID := run["load_id"].(string)
	var final map[string]any
	waitFor(t, "the run to finish", func() bool {
		_, m := p.json("GET", "/v2/tests/shop", nil)
		final, _ = m["last_run"].(map[string]any)
		return final != nil && (final["state"] == "succeeded" || final["state"] == "failed")
	})
	if final["state"] != "succeeded" {
		t.Fatalf("run: %v", final)
	}
	agg := final["result"].(map[string]any)["aggregate_metrics"].(map[string]any)
	if n := int(agg["request_count"].(float64)); n == 0 || n != p.edge.Served(alias, loadID) || agg["error_count"] != 0.0 {
		t.Fatalf("the run counted %d requests (%v errors), the edge answered %d", n, agg["error_count"], p.edge.Served(alias, loadID))
	}

	// A run that targets an application feeds its access records to the
	// metrics pipeline: the application's request count becomes the run's.
	st, m = p.json("POST", "/v2/tests", map[string]any{"id": "shop", "duration": 1, "virtualUsers": 2, "targets": appID})
	if st != 200 {
		t.Fatalf("POST targeted run: %d %v", st, m)
	}
	loadID = m["last_run"].(map[string]any)["load_id"].(string)
	waitFor(t, "the targeted run to finish", func() bool {
		_, m := p.json("GET", "/v2/tests/shop", nil)
		final, _ = m["last_run"].(map[string]any)
		return final["load_id"] == loadID && (final["state"] == "succeeded" || final["state"] == "failed")
	})
	n := int(final["result"].(map[string]any)["aggregate_metrics"].(map[string]any)["request_count"].(float64))
	if n == 0 || n != p.edge.Served(alias, loadID) || final["access_records"].(map[string]any)["sent"] != float64(n) {
		t.Fatalf("targeted run: %d requests, the edge answered %d, records %v", n, p.edge.Served(alias, loadID), final["access_records"])
	}
	var requests float64
	waitFor(t, "the application's metrics to count the run", func() bool {
		st, m := p.json("GET", "/v2/applications/"+appID+"/metrics?names=requests&summarize=true", nil)
		if st != 200 {
			t.Fatalf("GET metrics: %d %v", st, m)
		}
		requests, _ = m["metrics"].(map[string]any)["requests"].(float64)
		return int(requests) == n
	})
}
