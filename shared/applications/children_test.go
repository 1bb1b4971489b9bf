package applications_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"cads/infra/testenv"
)

func selfSigned(t *testing.T, host string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestActions(t *testing.T) {
	a := newAPI(t)
	app := a.create(shop).Body["id"].(string)
	base := "/v2/applications/" + app + "/actions"
	secret := "c2VjcmV0LXNlY3JldC1zZWNyZXQ="

	a.d.Counter.Reset()
	r := a.do("POST", base, `{"id":"purge-cache","url":"https://ops.example.com/hooks/purge","name":"Purge","secret_key":"`+secret+`","description":"Purges"}`)
	if r.Status != 200 || r.Body["href"] != base+"/purge-cache" || r.Body["http_method"] != "POST" || strings.Contains(r.Raw, "secret") || a.d.Counter.Total() != 2 { // the actions quota, then the transaction
		t.Fatalf("create: %d %s (%d round trips)", r.Status, r.Raw, a.d.Counter.Total())
	}
	if r := a.do("POST", base, `{"id":"purge-cache","url":"https://ops.example.com/x"}`); r.Status != 409 {
		t.Fatalf("duplicate: %d %s", r.Status, r.Raw)
	}
	for _, c := range []struct{ body, msg string }{
		{`{"url":"https://ops.example.com/x"}`, "id is required"},
		{`{"id":"Bad","url":"https://ops.example.com/x"}`, "must start with a letter"},
		{`{"id":"ok"}`, "url is required"},
		{`{"id":"ok","url":"ftp://ops.example.com/x"}`, "http or https"},
		{`{"id":"ok","url":"https://ops.example.com"}`, "with a path"},
		{`{"id":"ok","url":"https://u:p@ops.example.com/x"}`, "credentials"},
		{`{"id":"ok","url":"https://ops.example.com/x","http_method":"TRACE"}`, "http_method"},
		{`{"id":"ok","url":"https://ops.example.com/x","secret_key":"not base64!"}`, "base64"},
		{`{"id":"ok","url":"https://ops.example.com/x","secret_key":"c2hvcnQ="}`, "at least 16 bytes"},
		{`{"id":"ok","url":"https://ops.example.com/x","certificates":"junk"}`, "certificates"},
		{`{"id":"ok","url":"https://ops.example.com/x","extra":1}`, "unknown field"},
	} {
		if r := a.do("POST", base, c.body); r.Status != 400 || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("%s: %d %s, want 400 with %q", c.body, r.Status, r.Raw, c.msg)
		}
	}
	if r := a.do("POST", "/v2/applications/nosuch/actions", `{"id":"ok","url":"https://ops.example.com/x"}`); r.Status != 404 {
		t.Fatalf("missing application: %d", r.Status)
	}

	a.d.Counter.Reset()
	if r := a.do("GET", base+"/purge-cache", ""); r.Status != 200 || r.Body["name"] != "Purge" || strings.Contains(r.Raw, "secret") || a.d.Counter.Total() != 1 && !testenv.Realistic() {
		t.Fatalf("get: %d %s (%d round trips)", r.Status, r.Raw, a.d.Counter.Total())
	}
	r = a.do("PATCH", base+"/purge-cache", `{"http_method":"put","description":null,"certificates":`+jsonString(selfSigned(t, "ops.example.com"))+`}`)
	if r.Status != 200 || r.Body["http_method"] != "PUT" || r.Body["description"] != "" || r.Body["certificates"] == nil || r.Body["name"] != "Purge" {
		t.Fatalf("patch: %d %s", r.Status, r.Raw)
	}
	if r := a.do("PATCH", base+"/purge-cache", `{"id":"other"}`); r.Status != 400 || !strings.Contains(r.Raw, "read-only") {
		t.Fatalf("patch id: %d %s", r.Status, r.Raw)
	}
	if r := a.do("PATCH", base+"/purge-cache", `{"url":null}`); r.Status != 400 {
		t.Fatalf("patch url away: %d %s", r.Status, r.Raw)
	}
	a.do("POST", base, `{"id":"flush","url":"http://127.0.0.1:9/flush","http_method":"GET"}`)
	var list []map[string]any
	r = a.do("GET", base+"?order=-id", "")
	if err := json.Unmarshal([]byte(r.Raw), &list); err != nil || len(list) != 2 || list[0]["id"] != "purge-cache" {
		t.Fatalf("list: %s", r.Raw)
	}
	if r := a.do("DELETE", base+"/flush", ""); r.Status != 200 || r.Body["id"] != "flush" {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	if r := a.do("GET", base+"/flush", ""); r.Status != 404 {
		t.Fatalf("deleted: %d", r.Status)
	}
	if r := a.do("DELETE", base+"/flush", ""); r.Status != 404 {
		t.Fatalf("deleted twice: %d", r.Status)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// Page controls are modelled on the reference document's web controls:
// conditions and actions validated against their field shapes, a version
// that grows on every change and the earlier versions in history.
func TestPageControls(t *testing.T) {
	a := newAPI(t)
	app := a.create(shop).Body["id"].(string)
	base := "/v2/applications/" + app + "/pagecontrols"
	block := `{"name":"Block bots","mode":"request","conditions":{"is_crawler":{}},"actions":[{"type":"deny","status_code":"403","body":"no"}]}`

	a.d.Counter.Reset()
	r := a.do("POST", base, block)
	if r.Status != 200 || r.Body["id"] != "1" || r.Body["href"] != base+"/1" || r.Body["version"] != 1.0 || r.Body["enabled"] != true || a.d.Counter.Total() != 3 { // id, quota, transaction
		t.Fatalf("create: %d %s (%d round trips)", r.Status, r.Raw, a.d.Counter.Total())
	}
	for _, c := range []struct{ body, msg string }{
		{`{"actions":[]}`, "name is required"},
		{`{"name":"x"}`, "actions is required"},
		{`{"name":"x","actions":[{"type":"explode"}]}`, "actions[0].type must be one of"},
		{`{"name":"x","actions":[{"type":"redirect","status_code":"200","location":"/"}]}`, "actions[0].status_code"},
		{`{"name":"x","actions":[],"conditions":{"moon_is_full":{}}}`, "moon_is_full"},
		{`{"name":"x","actions":[],"conditions":[]}`, "conditions must be an object"},
		{`{"name":"x","actions":[],"mode":"sometimes"}`, "mode"},
		{`{"name":"` + strings.Repeat("n", 51) + `","actions":[]}`, "at most 50"},
	} {
		if r := a.do("POST", base, c.body); r.Status != 400 || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("%s: %d %s, want 400 with %q", c.body, r.Status, r.Raw, c.msg)
		}
	}
	if r := a.do("POST", base, `{"name":"Maintenance page","mode":"maintenance","enabled":false,"actions":[{"type":"redirect","status_code":"302","location":"https://status.example.com/"}]}`); r.Status != 200 || r.Body["id"] != "2" || r.Body["enabled"] != false {
		t.Fatalf("second: %d %s", r.Status, r.Raw)
	}

	r = a.do("PATCH", base+"/1", `{"enabled":false,"conditions":{"country_is":{"list":["US"]}}}`)
	if r.Status != 200 || r.Body["version"] != 2.0 || r.Body["enabled"] != false || !strings.Contains(r.Raw, `"is_crawler":{}`) || !strings.Contains(r.Raw, `"country_is"`) {
		t.Fatalf("patch: %d %s", r.Status, r.Raw)
	}
	hist, _ := r.Body["history"].([]any)
	if len(hist) != 1 || hist[0].(map[string]any)["version"] != 1.0 || hist[0].(map[string]any)["enabled"] != true {
		t.Fatalf("history: %s", r.Raw)
	}
	if r := a.do("PATCH", base+"/1", `{"enabled":false}`); r.Status != 200 || r.Body["version"] != 2.0 {
		t.Fatalf("no-op patch made a version: %s", r.Raw)
	}
	if r := a.do("PATCH", base+"/1", `{"version":7}`); r.Status != 400 {
		t.Fatalf("patch version: %d", r.Status)
	}
	if r := a.do("PATCH", base+"/1", `{"actions":[{"type":"nope"}]}`); r.Status != 400 {
		t.Fatalf("invalid patch: %d", r.Status)
	}
	// The application check and the control's Query run in parallel.
	a.d.Counter.SetDelay(25 * time.Millisecond)
	a.d.Counter.Reset()
	if r := a.do("GET", base+"/1", ""); r.Status != 200 || r.Body["version"] != 2.0 || a.d.Counter.Sequential() != 1 || a.d.Counter.Total() != 2 {
		t.Fatalf("get: %d %s (%d sequential round trips)", r.Status, r.Raw, a.d.Counter.Sequential())
	}
	a.d.Counter.SetDelay(0)
	var list []map[string]any
	if r := a.do("GET", base, ""); json.Unmarshal([]byte(r.Raw), &list) != nil || len(list) != 2 || list[0]["id"] != "1" {
		t.Fatalf("list: %s", r.Raw)
	}
	r = a.do("DELETE", base+"/1", "")
	if r.Status != 200 || r.Body["deleted"] == nil || r.Body["version"] != 2.0 {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	for _, p := range []string{base + "/1", base + "/01", base + "/x", base + "/0"} {
		if r := a.do("GET", p, ""); r.Status != 404 {
			t.Errorf("%s: %d", p, r.Status)
		}
	}
	// Ids are not reused.
	if r := a.do("POST", base, block); r.Body["id"] != "3" {
		t.Fatalf("after a delete: %s", r.Raw)
	}
}
