package patch

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/jsontext"
)

func read(mt, body string, accepted ...string) (*Body, error) {
	r := httptest.NewRequest("PATCH", "/v2/x", strings.NewReader(body))
	if mt != "" {
		r.Header.Set("Content-Type", mt)
	}
	return Read(apigw.ReadJSON(r, jsontext.TextOption{}, accepted...))
}

func status(err error) int {
	if _, ok := domain.AsError(err); ok {
		return apigw.Status(err)
	}
	return 0
}

func TestReadRefusesWhatCannotApply(t *testing.T) {
	all := []string{MediaJSON, MediaMergePatch, MediaJSONPatch}
	many := "[" + strings.Repeat(`{"op":"remove","path":"/a"},`, MaxOperations) + `{"op":"remove","path":"/a"}]`
	for _, c := range []struct {
		name, mt, body string
		accepted       []string
		want           int
		msg            string
	}{
		{"no content type", "", `{}`, all, 415, "missing Content-Type"},
		{"merge-patch+json where only application/json is named", MediaMergePatch, `{}`, []string{MediaJSON}, 415, "not accepted"},
		{"empty", MediaJSON, "  ", all, 400, "body is required"},
		{"merge patch not an object", MediaJSON, `[1]`, all, 400, "JSON object of the fields"},
		{"merge patch null", MediaMergePatch, `null`, all, 400, "JSON object of the fields"},
		{"JSON Patch not an array", MediaJSONPatch, `{"op":"add"}`, all, 400, "array of operations"},
		{"JSON Patch too long", MediaJSONPatch, many, all, 400, "at most 1000 operations"},
		{"JSON Patch unknown op", MediaJSONPatch, `[{"op":"frobnicate","path":"/a"}]`, all, 400, "invalid JSON Patch"},
		// Text is judged as sent: decoding would have replaced it.
		{"merge patch with NUL", MediaJSON, `{"name":"a\u0000"}`, all, 400, `field "name" holds the control character U+0000`},
		{"merge patch not UTF-8", MediaMergePatch, "{\"name\":\"\xff\"}", all, 400, `field "name" is not valid UTF-8 (byte 0xFF)`},
		{"JSON Patch value with ESC", MediaJSONPatch, `[{"op":"add","path":"/d","value":"\u001b"}]`, all, 400, `field "[0].value" holds the control character U+001B`},
		{"JSON Patch lone surrogate", MediaJSONPatch, `[{"op":"add","path":"/d","value":"\udbff"}]`, all, 400, `U+DBFF`},
	} {
		_, err := read(c.mt, c.body, c.accepted...)
		if status(err) != c.want || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %d containing %q", c.name, err, c.want, c.msg)
		}
	}
}

func TestApply(t *testing.T) {
	doc := []byte(`{"name":"a","tags":["x","y"],"n":1}`)
	for _, c := range []struct {
		name, mt, body, want string
		status               int
	}{
		{"merge sets and removes", MediaJSON, `{"name":"b","n":null}`, `{"name":"b","tags":["x","y"]}`, 0},
		{"merge under its own name", MediaMergePatch, `{"tags":[]}`, `{"n":1,"name":"a","tags":[]}`, 0},
		{"JSON Patch", MediaJSONPatch, `[{"op":"add","path":"/tags/-","value":"z"},{"op":"test","path":"/n","value":1}]`, `{"n":1,"name":"a","tags":["x","y","z"]}`, 0},
		{"JSON Patch failing test", MediaJSONPatch, `[{"op":"test","path":"/n","value":2}]`, "", 400},
		{"no negative indices (RFC 6902)", MediaJSONPatch, `[{"op":"remove","path":"/tags/-1"}]`, "", 400},
	} {
		b, err := read(c.mt, c.body, MediaJSON, MediaMergePatch, MediaJSONPatch)
		if err != nil {
			t.Fatalf("%s: read: %v", c.name, err)
		}
		out, err := b.Apply(doc)
		if c.status != 0 {
			if status(err) != c.status {
				t.Errorf("%s: %v, want %d", c.name, err, c.status)
			}
			continue
		}
		if err != nil || !sameJSON(t, out, c.want) {
			t.Errorf("%s: %s %v, want %s", c.name, out, err, c.want)
		}
	}
}

func TestDecodeNamesThePatchedResource(t *testing.T) {
	var out struct {
		Name string `json:"name"`
	}
	err := apigw.UnmarshalPatched([]byte(`{"name":"a","extra":1}`), &out, "role")
	if status(err) != 400 || !strings.Contains(err.Error(), "the patched role is invalid") {
		t.Fatalf("UnmarshalPatched: %v", err)
	}
}

// TestCopyLimitIsTheBodyLimit: a JSON Patch's copies may grow a document
// only as far as a request body may be (patch cannot name apigw's limit
// without linking the HTTP layer).
func TestCopyLimitIsTheBodyLimit(t *testing.T) {
	if MaxCopyBytes != apigw.MaxJSONBody {
		t.Fatalf("MaxCopyBytes %d, apigw.MaxJSONBody %d: keep them equal", MaxCopyBytes, apigw.MaxJSONBody)
	}
	doc := []byte(`{"a":"` + strings.Repeat("x", MaxCopyBytes/2) + `"}`)
	b, err := read(MediaJSONPatch, `[{"op":"copy","from":"/a","path":"/b"},{"op":"copy","from":"/a","path":"/c"}]`, MediaJSONPatch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Apply(doc); status(err) != 400 {
		t.Fatalf("copies past the limit: %v, want a 400", err)
	}
}

func sameJSON(t *testing.T, a []byte, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// FuzzPatch: no PATCH body, of any media type, against any document, may
// panic or end in anything but a 4xx of the API or a result that is JSON.
func FuzzPatch(f *testing.F) {
	f.Add(0, `{"name":"b","n":null}`, `{"name":"a","tags":["x"]}`)
	f.Add(1, `{"tags":[]}`, `{"tags":["x","y"]}`)
	f.Add(2, `[{"op":"add","path":"/tags/-","value":"z"}]`, `{"tags":["x"]}`)
	f.Add(2, `[{"op":"copy","from":"/a","path":"/b"},{"op":"move","from":"/b","path":"/c/0"}]`, `{"a":{"x":[1,2,3]}}`)
	f.Add(2, `[{"op":"remove","path":"/tags/-1"}]`, `{"tags":["x"]}`)
	// Text the body reader refuses: escaped and raw controls, lone
	// surrogates, invalid UTF-8.
	f.Add(0, `{"name":"a\u0000"}`, `{"name":"a"}`)
	f.Add(1, "{\"name\":\"a\xc2\x9b\"}", `{"name":"a"}`)
	f.Add(2, `[{"op":"replace","path":"/name","value":"\ud800"}]`, `{"name":"a"}`)
	f.Add(0, "{\"name\":\"caf\xe9\"}", `{"name":"a"}`)
	media := []string{MediaJSON, MediaMergePatch, MediaJSONPatch, "text/plain"}
	f.Fuzz(func(t *testing.T, m int, body, doc string) {
		mt := media[(m%len(media)+len(media))%len(media)]
		b, err := read(mt, body, MediaJSON, MediaMergePatch, MediaJSONPatch)
		if err != nil {
			if s := status(err); s < 400 || s > 499 {
				t.Fatalf("Read(%s, %q): %v, want a 4xx", mt, body, err)
			}
			return
		}
		if !json.Valid([]byte(doc)) {
			return // documents are the service's own JSON
		}
		out, err := b.Apply([]byte(doc))
		if err != nil {
			if s := status(err); s < 400 || s > 499 {
				t.Fatalf("Apply(%q) to %q: %v, want a 4xx", body, doc, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Apply(%q) to %q gave invalid JSON %q", body, doc, out)
		}
	})
}
