package apigw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/jsontext"

	"github.com/aws/aws-lambda-go/events"
)

type textSample struct {
	Name    string            `json:"name"`
	Message string            `json:"message"`
	Entries []textEntry       `json:"entries"`
	Labels  map[string]string `json:"labels"`
}

type textEntry struct {
	Description string `json:"description"`
}

// The control characters of the rule are exactly U+0000–U+001F and
// U+007F–U+009F; the code points either side of each boundary decide it.
func TestTextRuleBoundaries(t *testing.T) {
	for _, c := range []struct {
		r       rune
		refused bool
	}{
		{0x00, true}, {0x09, true}, {0x0a, true}, {0x1f, true}, {0x20, false},
		{0x7e, false}, {0x7f, true}, {0x80, true}, {0x9f, true}, {0xa0, false},
		{0xad, false}, // soft hyphen: a format character, not a control
		{0x2028, false}, {0xfffd, false}, {0x1f600, false},
	} {
		t.Run(fmt.Sprintf("U+%04X", c.r), func(t *testing.T) {
			// Raw in the body where JSON allows it (from U+0020 on), and
			// always as a \u escape.
			bodies := []string{fmt.Sprintf(`{"name":"a\u%04x"}`, c.r)}
			if c.r > 0x10000 {
				bodies = nil
			}
			if c.r >= 0x20 {
				bodies = append(bodies, `{"name":"a`+string(c.r)+`"}`)
			}
			for _, body := range bodies {
				var v textSample
				err := jsontext.UnmarshalStrict([]byte(body), &v)
				if !c.refused {
					if err != nil {
						t.Fatalf("%q refused: %v", body, err)
					}
					if v.Name != "a"+string(c.r) {
						t.Fatalf("%q decoded as %q", body, v.Name)
					}
					continue
				}
				want := fmt.Sprintf(`field "name" holds the control character U+%04X`, c.r)
				e, ok := domain.AsError(err)
				if !ok || Status(err) != 400 || e.Code != domain.Invalid || !strings.Contains(e.Message, want) {
					t.Fatalf("%q: got %v; want a 400 containing %q", body, err, want)
				}
			}
			if err := jsontext.CheckText("form field \"desc\"", "a"+string(c.r)); (err != nil) != c.refused {
				t.Fatalf("CheckText: %v, refused want %v", err, c.refused)
			}
		})
	}
}

func TestCheckJSONText(t *testing.T) {
	cases := []struct {
		name, body string
		opts       []jsontext.TextOption
		msg        string // "" if accepted
	}{
		{"plain", `{"name":"Zoë 😀","entries":[{"description":"x"}]}`, nil, ""},
		{"escaped pair", `{"name":"\ud83d\ude00"}`, nil, ""},
		{"escaped quote and slash", `{"name":"a\"b\\c\/d"}`, nil, ""},
		{"literal U+FFFD", `{"name":"\ufffd�"}`, nil, ""},
		{"invalid UTF-8", "{\"name\":\"a\xffb\"}", nil, `field "name" is not valid UTF-8 (byte 0xFF)`},
		{"truncated sequence", "{\"name\":\"a\xe2\x82\"}", nil, `field "name" is not valid UTF-8 (byte 0xE2)`},
		{"overlong encoding", "{\"name\":\"\xc0\xaf\"}", nil, `not valid UTF-8 (byte 0xC0)`},
		{"encoded surrogate", "{\"name\":\"\xed\xa0\x80\"}", nil, `not valid UTF-8 (byte 0xED)`},
		{"escaped NUL", `{"name":"a\u0000"}`, nil, `field "name" holds the control character U+0000`},
		{"escaped ESC upper case", `{"name":"\u001B[31m"}`, nil, `U+001B`},
		{"short escape", `{"name":"a\bb"}`, nil, `U+0008`},
		{"tab", `{"name":"a\tb"}`, nil, `U+0009`},
		{"newline", `{"name":"a\nb"}`, nil, `U+000A`},
		{"carriage return", `{"name":"a\rb"}`, nil, `U+000D`},
		{"raw DEL", "{\"name\":\"a\x7f\"}", nil, `U+007F`},
		{"raw C1", "{\"name\":\"a\u0085\"}", nil, `U+0085`},
		{"lone high surrogate", `{"name":"a\ud800"}`, nil, `field "name" holds the escape \ud800, a lone UTF-16 surrogate (U+D800)`},
		{"high surrogate then letter", `{"name":"\ud800\u0041"}`, nil, `U+D800`},
		{"two high surrogates", `{"name":"\ud800\ud800"}`, nil, `U+D800`},
		{"lone low surrogate", `{"name":"\udc00x"}`, nil, `U+DC00`},
		{"nested path", `{"entries":[{"description":"ok"},{"description":"\u0007"}]}`, nil, `field "entries[1].description" holds the control character U+0007`},
		{"map value", `{"labels":{"a b":"\u0000"}}`, nil, `field "labels[\"a b\"]"`},
		{"field name", `{"labels":{"k\u0000":"v"}}`, nil, `a field name in "labels" holds the control character U+0000`},
		{"top-level field name", `{"na\u0001me":"v"}`, nil, `a field name in (body)`},
		{"string body", `"\u0000"`, nil, `field (body) holds`},
		{"array body", `[{"message":"ok"},{"message":"\u0000"}]`, nil, `field "[1].message"`},
		// The exception: only tab and newline, only where it is given.
		{"message tab newline", `{"message":"a\tb\nc"}`, []jsontext.TextOption{jsontext.AllowTabNewline("message")}, ""},
		{"message raw C1", "{\"message\":\"a\u0085\"}", []jsontext.TextOption{jsontext.AllowTabNewline("message")}, `U+0085`},
		{"message CR", `{"message":"a\r\n"}`, []jsontext.TextOption{jsontext.AllowTabNewline("message")}, `field "message" holds the control character U+000D; this field may contain tab and newline`},
		{"message NUL", `{"message":"a\u0000"}`, []jsontext.TextOption{jsontext.AllowTabNewline("message")}, `U+0000`},
		{"exception is per field", `{"message":"a\n","name":"b\n"}`, []jsontext.TextOption{jsontext.AllowTabNewline("message")}, `field "name" holds the control character U+000A`},
		{"exception in array", `[{"message":"a\n"},{"message":"b\t"}]`, []jsontext.TextOption{jsontext.AllowTabNewline("[*].message")}, ""},
		{"exception not deeper", `{"entries":[{"description":"a\n"}]}`, []jsontext.TextOption{jsontext.AllowTabNewline("message", "[*].message")}, `entries[0].description`},
		// Not JSON: the decoder, not the text rule, says why.
		{"syntax error", `{"name":"\u0000`, nil, "ends before"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v any
			if strings.HasPrefix(c.body, "{") && !strings.Contains(c.name, "syntax") {
				v = &textSample{}
			} else {
				v = new(any)
			}
			err := jsontext.UnmarshalStrict([]byte(c.body), v, c.opts...)
			if c.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := domain.AsError(err)
			if !ok || Status(err) != 400 || e.Code != domain.Invalid || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v; want a 400 containing %q", err, c.msg)
			}
		})
	}
}

// DecodeJSON, the reader of every family's bodies, applies the rule.
func TestDecodeJSONRefusesBadText(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/v2/x", strings.NewReader(`{"name":"Editor\u001b[0m"}`))
	r.Header.Set("Content-Type", "application/json")
	var v textSample
	err := DecodeJSON(r, &v)
	if e, ok := domain.AsError(err); !ok || Status(err) != 400 || !strings.Contains(e.Message, `"name"`) || !strings.Contains(e.Message, "U+001B") {
		t.Fatalf("got %v", err)
	}
}

func TestCheckText(t *testing.T) {
	for _, c := range []struct{ s, msg string }{
		{"ok text 😀", ""},
		{"bad\xff", "not valid UTF-8 (byte 0xFF at offset 3)"},
		{"line\nbreak", "U+000A"},
		{"\u009b[2J", "U+009B"},
	} {
		err := jsontext.CheckText(`form field "desc"`, c.s)
		if c.msg == "" {
			if err != nil {
				t.Errorf("%q refused: %v", c.s, err)
			}
			continue
		}
		if e, ok := domain.AsError(err); !ok || Status(err) != 400 || !strings.Contains(e.Message, `form field "desc"`) || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%q: got %v; want %q", c.s, err, c.msg)
		}
	}
}

// Through the function adapter, as API Gateway calls it: query parameters
// are judged before any endpoint runs, and a JSON body delivered as binary
// (base64, as the API's binary media types make it) reaches the text rule
// with its bytes as sent.
func TestLambdaRefusesBadText(t *testing.T) {
	called := 0
	mux := NewMux()
	mux.HandleFunc("POST /v2/x", Handle(slog.New(slog.DiscardHandler), func(r *http.Request, p caller.Principal) (int, any, error) {
		called++
		var v textSample
		if err := DecodeJSON(r, &v); err != nil {
			return 0, nil, err
		}
		return 200, v, nil
	}))
	fn := Lambda(slog.New(slog.DiscardHandler), mux)
	p := caller.Principal{ID: "u1", KeyID: "k1", AccountID: "a1"}
	call := func(query map[string][]string, body string, b64 bool) events.APIGatewayProxyResponse {
		t.Helper()
		req := events.APIGatewayProxyRequest{
			HTTPMethod: http.MethodPost, Path: "/v2/x", Resource: "/v2/x",
			Headers:                         map[string]string{"Content-Type": "application/json"},
			MultiValueQueryStringParameters: query,
			Body:                            body, IsBase64Encoded: b64,
			RequestContext: events.APIGatewayProxyRequestContext{RequestID: "r1", Authorizer: p.Context()},
		}
		if b64 {
			req.Body = base64.StdEncoding.EncodeToString([]byte(body))
		}
		resp, err := fn(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, c := range []struct {
		name  string
		query map[string][]string
		body  string
		b64   bool
		msg   string
	}{
		{"NUL in a filter", map[string][]string{"filter": {"name eq \"a\x00\""}}, `{"name":"a"}`, false, `query parameter \"filter\" holds the control character U+0000`},
		{"control in a parameter name", map[string][]string{"na\x01me": {"x"}}, `{"name":"a"}`, false, `a query parameter name holds the control character U+0001`},
		{"C1 in a value", map[string][]string{"name": {"\u0085"}}, `{"name":"a"}`, false, `U+0085`},
		{"invalid UTF-8 body", nil, "{\"name\":\"caf\xe9\"}", true, `field \"name\" is not valid UTF-8 (byte 0xE9)`},
	} {
		resp := call(c.query, c.body, c.b64)
		var body Body
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || resp.StatusCode != 400 || body.Status != 400 ||
			body.Error.Type != "bad_request" || !strings.Contains(resp.Body, c.msg) {
			t.Errorf("%s: %d %s; want a 400 containing %s", c.name, resp.StatusCode, resp.Body, c.msg)
		}
	}
	if called != 1 { // only the body case reaches the endpoint, and stops at its decoder
		t.Errorf("the endpoint ran %d times; want 1", called)
	}
	ok := call(map[string][]string{"filter": {"name eq \"Zoë\""}}, `{"name":"Zoë\t"}`, true)
	if ok.StatusCode != 400 || !strings.Contains(ok.Body, "U+0009") {
		t.Errorf("tab in a name: %d %s", ok.StatusCode, ok.Body)
	}
	ok = call(map[string][]string{"filter": {"name eq \"Zoë\""}}, `{"name":"Zoë"}`, true)
	if ok.StatusCode != 200 || !strings.Contains(ok.Body, "Zoë") {
		t.Errorf("good text: %d %s", ok.StatusCode, ok.Body)
	}
}
