package applications_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// Application text fields keep the text rule on create and on both kinds
// of patch; nothing is stored from a refused request.
func TestApplicationTextRule(t *testing.T) {
	a := newAPI(t)
	id := a.create(shop).Body["id"].(string)
	path := "/v2/applications/" + id
	count := func() int {
		t.Helper()
		r := a.do("GET", "/v2/applications", "")
		var list []any
		if r.Status != 200 || json.Unmarshal([]byte(r.Raw), &list) != nil {
			t.Fatalf("list: %d %s", r.Status, r.Raw)
		}
		return len(list)
	}
	before := count()
	for _, c := range []struct{ body, msg string }{
		{`{"name":"Sh\u0000op","aliases":["a.example.com"]}`, `field \"name\" holds the control character U+0000`},
		{`{"name":"Shop\u001b[1m","aliases":["a.example.com"]}`, `U+001B`},
		{`{"name":"Shop","aliases":["a.example.com\u0007"]}`, `field \"aliases[0]\" holds the control character U+0007`},
		{`{"name":"\udfff","aliases":["a.example.com"]}`, `U+DFFF`},
		{"{\"name\":\"Sh\xc3\",\"aliases\":[\"a.example.com\"]}", `field \"name\" is not valid UTF-8 (byte 0xC3)`},
	} {
		if r := a.do("POST", "/v2/applications", c.body); r.Status != 400 || r.Body["error"].(map[string]any)["type"] != "bad_request" || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("POST %q: %d %s, want 400 with %s", c.body, r.Status, r.Raw, c.msg)
		}
	}
	for _, c := range []struct{ ct, body, msg string }{
		{"application/json", `{"name":"Shop\u0085"}`, `U+0085`},
		{"application/json-patch+json", `[{"op":"replace","path":"/name","value":"\u007f"}]`, `field \"[0].value\" holds the control character U+007F`},
		{"application/json", "{\"name\":\"\xf0\x9f\"}", `not valid UTF-8 (byte 0xF0)`},
		// PEM fields take line breaks, and nothing else does: a JSON
		// Patch's value is judged where it lands.
		{"application/json-patch+json", `[{"op":"replace","path":"/name","value":"two\nlines"}]`, `field \"name\" holds the control character U+000A`},
		{"application/json", `{"tls_configuration":{"certificate_chain":"-----BEGIN CERTIFICATE-----\r\n"}}`, `field \"tls_configuration.certificate_chain\" holds the control character U+000D; this field may contain tab and newline`},
		{"application/json", `{"tls_configuration":{"certificate_chain":"\u0000"}}`, `U+0000`},
	} {
		if r := a.call(a.op, "PATCH", path, c.ct, c.body); r.Status != 400 || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("PATCH %q: %d %s, want 400 with %s", c.body, r.Status, r.Raw, c.msg)
		}
	}
	if n := count(); n != before {
		t.Errorf("%d applications after refused creates; want %d", n, before)
	}
	if r := a.do("GET", path, ""); r.Body["name"] != "Shop" {
		t.Errorf("a refused patch changed the application: %s", r.Raw)
	}
}
