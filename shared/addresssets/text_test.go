package addresssets_test

import (
	"strings"
	"testing"
)

// Address-set names and descriptions are text: NUL, ESC, BEL, DEL, C1
// controls, lone surrogates and invalid UTF-8 are a 400 naming the field
// and the code point, on create and on either kind of patch, and nothing
// is stored.
func TestAddressSetTextRule(t *testing.T) {
	a := newAPI(t)
	const coll, item = "/v2/address-sets", "/v2/address-sets/{id}"
	c := a.must(a.call(a.sets, a.op, "POST", coll, coll, `{"name":"office","type":"manual","description":"VPN exits"}`, "application/json"), 200, "create")
	href := c.body["href"].(string)
	count := func() int { return len(a.must(a.call(a.sets, a.op, "GET", coll, coll, "", ""), 200, "list").list) }
	before := count()

	for _, x := range []struct{ body, msg string }{
		{`{"name":"off\u0000ice","type":"manual"}`, `field "name" holds the control character U+0000`},
		{`{"name":"office","type":"manual","description":"\u001b]0;pwned\u0007"}`, `field "description" holds the control character U+001B`},
		{`{"name":"bell\u0007","type":"manual"}`, `U+0007`},
		{"{\"name\":\"del\x7f\",\"type\":\"manual\"}", `U+007F`},
		{"{\"name\":\"csi\u009b\",\"type\":\"manual\"}", `U+009B`},
		{`{"name":"x","type":"manual","entries":[{"address":"192.0.2.1","description":"a\nb"}]}`, `field "entries[0].description" holds the control character U+000A`},
		{`{"name":"\ud83d","type":"manual"}`, `lone UTF-16 surrogate (U+D83D)`},
		{"{\"name\":\"caf\xe9\",\"type\":\"manual\"}", `field "name" is not valid UTF-8 (byte 0xE9)`},
	} {
		r := a.call(a.sets, a.op, "POST", coll, coll, x.body, "application/json")
		a.errType(r, 400, x.msg, "POST "+x.body)
		if r.body["error"].(map[string]any)["type"] != "bad_request" {
			t.Errorf("POST %s: %s", x.body, r.raw)
		}
	}
	for _, x := range []struct{ body, ct, msg string }{
		{`{"description":"\u0000"}`, "application/json", `field "description" holds the control character U+0000`},
		{`{"name":"\u001b[2J"}`, "application/merge-patch+json", `U+001B`},
		{`[{"op":"replace","path":"/description","value":"ding\u0007"}]`, "application/json-patch+json", `field "[0].value" holds the control character U+0007`},
		{"{\"description\":\"\xff\"}", "application/json", `not valid UTF-8 (byte 0xFF)`},
	} {
		a.errType(a.call(a.sets, a.op, "PATCH", href, item, x.body, x.ct), 400, x.msg, "PATCH "+x.body)
	}
	if n := count(); n != before {
		t.Errorf("%d address sets after refused creates; want %d", n, before)
	}
	got := a.must(a.call(a.sets, a.op, "GET", href, item, "", ""), 200, "get")
	if got.body["name"] != "office" || got.body["description"] != "VPN exits" {
		t.Errorf("a refused patch changed the set: %s", got.raw)
	}
	// Text that merely looks unusual is text.
	ok := a.must(a.call(a.sets, a.op, "PATCH", href, item, `{"description":"Zoë’s ☕ \ud83d\ude00 office"}`, "application/json"), 200, "good text")
	if !strings.Contains(ok.raw, "Zoë’s ☕ 😀 office") {
		t.Errorf("good text: %s", ok.raw)
	}
}
