package local_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"cads/infra/local/localtest"
	"cads/shared/apigw"
)

// TestFinding6_TextIsText replays, through the local gateway and the whole
// platform, what a hostile tenant did: role names that display exactly as
// the control roles ("Account\u00a0owner", "Editor\u200b"), address-set
// names and descriptions holding NUL, ESC and BEL, and a body that is not
// valid UTF-8. Each is a 400 in the API's error body naming the field (and
// the code point, or the clash), and nothing of them is stored. The
// operator's key stands in for the tenant: neither rule depends on who
// asks, and the operator may create everything tried here.
func TestFinding6_TextIsText(t *testing.T) {
	p, _ := localtest.Start(t)
	op := p.Bootstrap.Secret
	roles := "/v2/accounts/" + p.Bootstrap.RootAccount + "/roles"
	send := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+op)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, raw
	}
	names := func(path string) []string {
		t.Helper()
		status, raw := send("GET", path, "")
		var list []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		if status != 200 || json.Unmarshal(raw, &list) != nil {
			t.Fatalf("GET %s: %d %s", path, status, raw)
		}
		var out []string
		for _, x := range list {
			out = append(out, x.Name+"|"+x.Description)
		}
		slices.Sort(out)
		return out
	}
	rolesBefore, setsBefore := names(roles), names("/v2/address-sets")

	for _, c := range []struct {
		what, path, body string
		want             []string // in the error message
	}{
		{"role named with a no-break space", roles, `{"name":"Account\u00a0owner"}`,
			[]string{`name "Account\u00a0owner" is reserved`, `built-in role "Account owner"`}},
		{"role named with a zero-width space", roles, `{"name":"Editor\u200b"}`,
			[]string{`reads as the built-in role "Editor"`}},
		{"role named in full-width letters", roles, `{"name":"ＲＥＡＤＥＲ"}`,
			[]string{`reads as the built-in role "Reader"`}},
		{"role named with a soft hyphen", roles, `{"name":"Editor\u00ad"}`,
			[]string{`reads as the built-in role "Editor"`}},
		{"address-set name with NUL", "/v2/address-sets", `{"name":"office\u0000","type":"manual"}`,
			[]string{`field "name"`, "U+0000"}},
		{"address-set description with ESC", "/v2/address-sets", `{"name":"office","type":"manual","description":"\u001b[2J\u001b[31mhacked"}`,
			[]string{`field "description"`, "U+001B"}},
		{"address-set description with BEL", "/v2/address-sets", `{"name":"office","type":"manual","description":"ding\u0007"}`,
			[]string{`field "description"`, "U+0007"}},
		{"address-set entry description with NUL", "/v2/address-sets", `{"name":"office","type":"manual","entries":[{"address":"192.0.2.1","description":"\u0000"}]}`,
			[]string{`field "entries[0].description"`, "U+0000"}},
		{"address-set name not UTF-8", "/v2/address-sets", "{\"name\":\"caf\xe9\",\"type\":\"manual\"}",
			[]string{`field "name" is not valid UTF-8 (byte 0xE9)`}},
		{"role name not UTF-8", roles, "{\"name\":\"Edit\xffor\"}",
			[]string{`field "name" is not valid UTF-8 (byte 0xFF)`}},
		{"role name with a lone surrogate", roles, `{"name":"Reader\udbff"}`,
			[]string{`field "name"`, "U+DBFF"}},
	} {
		status, raw := send("POST", c.path, c.body)
		var b apigw.Body
		if err := json.Unmarshal(raw, &b); err != nil || status != 400 || b.Status != 400 || b.Error.Type != "bad_request" {
			t.Errorf("%s: %d %s; want 400 bad_request", c.what, status, raw)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(b.Error.Message, w) {
				t.Errorf("%s: message %q does not contain %q", c.what, b.Error.Message, w)
			}
		}
	}

	if got := names(roles); !slices.Equal(got, rolesBefore) {
		t.Errorf("roles changed by refused requests:\n%q\nwas\n%q", got, rolesBefore)
	}
	if got := names("/v2/address-sets"); !slices.Equal(got, setsBefore) {
		t.Errorf("address sets changed by refused requests:\n%q\nwas\n%q", got, setsBefore)
	}

	// The same requests with good text succeed: the refusals were the text.
	for _, c := range []struct{ path, body string }{
		{roles, `{"name":"Editors","description":"Zoë’s team"}`},
		{"/v2/address-sets", `{"name":"café","type":"manual","description":"ding ☎"}`},
	} {
		if status, raw := send("POST", c.path, c.body); status != 200 {
			t.Errorf("POST %s %s: %d %s", c.path, c.body, status, raw)
		}
	}
	if got := names("/v2/address-sets"); !slices.Contains(got, "café|ding ☎") {
		t.Errorf("good text not stored as sent: %q", got)
	}
}
