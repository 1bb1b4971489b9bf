package addresssets_test

import (
	"fmt"
	"testing"
)

// A domains set, as a client of the reference document creates it: type
// domains and parameters.domains. It holds no entries; its domains are
// read back in parameters, can be changed by PATCH, and are validated.
func TestDomainsSet(t *testing.T) {
	a := newAPI(t)
	post := func(body string) reply {
		return a.call(a.sets, a.op, "POST", "/v2/address-sets", "/v2/address-sets", body, "application/json")
	}
	r := a.must(post(`{"name":"crawlers","type":"domains","parameters":{"domains":["Googlebot.com","search.msn.com."]}}`), 200, "create")
	params, _ := r.body["parameters"].(map[string]any)
	if got := fmt.Sprint(params["domains"]); got != "[googlebot.com search.msn.com]" || fmt.Sprint(r.body["entries"]) != "[]" {
		t.Fatalf("create: %s", r.raw)
	}
	href := r.body["href"].(string)
	got := a.must(a.call(a.sets, a.op, "GET", href, "/v2/address-sets/{id}", "", ""), 200, "get")
	if fmt.Sprint(got.body["parameters"]) != fmt.Sprint(r.body["parameters"]) {
		t.Fatalf("GET: %s", got.raw)
	}
	r = a.must(a.call(a.sets, a.op, "PATCH", href, "/v2/address-sets/{id}", `{"parameters":{"domains":["example.org"]}}`, "application/merge-patch+json"), 200, "patch")
	if fmt.Sprint(r.body["parameters"]) != "map[domains:[example.org]]" {
		t.Fatalf("PATCH: %s", r.raw)
	}
	for _, c := range []struct{ body, msg string }{
		{`{"name":"d","type":"domains"}`, "parameters.domains is required"},
		{`{"name":"d","type":"domains","parameters":{"domains":[]}}`, "at least one domain"},
		{`{"name":"d","type":"domains","parameters":{"domains":["a.com","A.com"]}}`, "listed twice"},
		{`{"name":"d","type":"domains","parameters":{"domains":["localhost"]}}`, "not a domain name"},
		{`{"name":"d","type":"domains","parameters":{"domains":["a b.com"]}}`, "not a domain name"},
		{`{"name":"d","type":"domains","parameters":{"domains":["a.com"],"url":"http://x"}}`, `unknown field "url"`},
		{`{"name":"d","type":"domains","parameters":{"domains":["a.com"]},"entries":[{"address":"10.0.0.1"}]}`, "has none"},
		{`{"name":"d","type":"manual","parameters":{"domains":["a.com"]}}`, "parameters apply only to domains sets"},
		{`{"name":"d","type":"text-file","parameters":{"url":"http://x"}}`, "not supported"},
	} {
		a.errType(post(c.body), 400, c.msg, c.body)
	}
	a.errType(a.call(a.sets, a.op, "PATCH", href, "/v2/address-sets/{id}", `{"type":"manual","parameters":null}`, "application/merge-patch+json"), 400, "type cannot change", "PATCH type")
}
