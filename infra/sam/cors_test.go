package sam_test

import (
	"path/filepath"
	"testing"

	"cads/infra/sam"
	"cads/infra/testenv"
)

// TestTemplateCORS: CorsAllowOrigin (default none) reaches every place a
// response is made: the preflights SAM adds (without the authorizer),
// every gateway response (a customised type does not inherit
// DEFAULT_4XX's headers) and the functions' environment.
func TestTemplateCORS(t *testing.T) {
	path := filepath.Join(testenv.Root(t), "template.yaml")
	for _, origin := range []string{"", "https://app.example.com", "*"} {
		tpl, err := sam.LoadWith(path, map[string]string{"CorsAllowOrigin": origin})
		if err != nil {
			t.Fatal(err)
		}
		pfs := tpl.Preflights()
		if len(pfs) != len(pathsOf(tpl)) {
			t.Errorf("origin %q: %d preflights for %d paths", origin, len(pfs), len(pathsOf(tpl)))
		}
		for _, pf := range pfs {
			if pf.Authorizer != "" {
				t.Errorf("preflight %s runs the authorizer %s", pf.Path, pf.Authorizer)
			}
			if got := pf.Headers["Access-Control-Allow-Origin"]; got != origin {
				t.Errorf("origin %q: preflight %s allows %q", origin, pf.Path, got)
			}
		}
		for _, a := range tpl.Apis {
			for typ, r := range a.GatewayResponses {
				if got := r.Headers["Access-Control-Allow-Origin"]; got != origin {
					t.Errorf("origin %q: gateway response %s allows %q", origin, typ, got)
				}
			}
		}
		for id, f := range tpl.Functions {
			if got := f.Environment["CORS_ALLOW_ORIGIN"]; got != origin {
				t.Errorf("origin %q: function %s has CORS_ALLOW_ORIGIN %q", origin, id, got)
			}
		}
	}
	if _, err := sam.LoadWith(path, map[string]string{"NoSuchParameter": "x"}); err == nil {
		t.Error("a value for an undeclared parameter was taken")
	}
}

func pathsOf(t *sam.Template) map[string]bool {
	out := map[string]bool{}
	for _, r := range t.Routes() {
		out[r.Path] = true
	}
	return out
}
