package logs_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A custom log record's message may hold tab and newline, and nothing else
// of the control characters; every other field is single-line text. A
// refused batch stores nothing.
func TestCustomLogsTextRule(t *testing.T) {
	e := newEnv(t)
	created := e.deps.Store.Now().Add(-time.Minute).Format(time.RFC3339)
	record := func(field, value string) string {
		f := map[string]string{"stream": `"app"`, "message": `"ok"`, "address": `"10.0.0.1"`, "filename": `"app.log"`, "hostname": `"web-1"`}
		f[field] = value
		return fmt.Sprintf(`{"created":%q,"stream":%s,"message":%s,"address":%s,"filename":%s,"hostname":%s}`,
			created, f["stream"], f["message"], f["address"], f["filename"], f["hostname"])
	}
	post := func(body string) reply {
		return e.call(e.op, "POST", "/v2/applications/"+e.app+"/logs", nil, body)
	}
	stored := func() int {
		g := e.get(url.Values{"type": {"custom"}})
		if g.status != 200 {
			t.Fatalf("read: %s", g.raw)
		}
		return g.doc.Records.Count
	}

	for _, c := range []struct{ body, want string }{
		{record("message", `"a\u0000b"`), `field "message" holds the control character U+0000; this field may contain tab and newline`},
		{record("message", `"line\r\n"`), `U+000D`},
		{record("message", `"\u001b[31mred"`), `U+001B`},
		{record("message", "\"a\u0085\""), `U+0085`},
		{record("message", `"\ud800"`), `U+D800`},
		{record("message", "\"caf\xe9\""), `field "message" is not valid UTF-8 (byte 0xE9)`},
		{record("stream", `"app\n"`), `field "stream" holds the control character U+000A; text may not contain`},
		{record("hostname", `"web\t1"`), `field "hostname" holds the control character U+0009`},
		{record("filename", `"a\u0007.log"`), `U+0007`},
		{"[" + record("message", `"ok\n"`) + "," + record("message", `"bell\u0007"`) + "]", `field "[1].message" holds the control character U+0007`},
		{"[" + record("message", `"ok"`) + "," + record("stream", `"a\tb"`) + "]", `field "[1].stream" holds the control character U+0009`},
	} {
		r := post(c.body)
		e.wantError(r, 400, c.want)
		if !strings.Contains(r.raw, `"bad_request"`) {
			t.Errorf("%s: %s", c.body, r.raw)
		}
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d records stored by refused posts", n)
	}

	multi := "first line\n\tindented second line"
	if r := post("[" + record("message", fmt.Sprintf("%q", multi)) + "]"); r.status != 200 {
		t.Fatalf("tab and newline in a message: %d %s", r.status, r.raw)
	}
	g := e.get(url.Values{"type": {"custom"}, "select": {"message"}})
	if g.status != 200 || g.doc.Records.Count != 1 || g.doc.Records.Result[0][0] != multi {
		t.Fatalf("stored message: %s", g.raw)
	}
}
