package applications_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"cads/shared/authz"
)

// Web controls are the stored page controls, read through the other view:
// same ids and versions, conditions as a typed list, history on request,
// paged in id order with a cursor.
func TestWebControlsViewPageControls(t *testing.T) {
	a := newAPI(t)
	app := a.create(`{"name":"Shop","aliases":["wc.example.com"]}`).Body["id"].(string)
	base := "/v2/applications/" + app
	var ids []string
	for i := range 5 {
		r := a.do("POST", base+"/pagecontrols", fmt.Sprintf(`{"name":"Control %d","mode":"request","conditions":{"is_crawler":{},"country_is":{"list":["US","CA"]}},"actions":[{"type":"deny","status_code":"403","body":"no"}]}`, i))
		if r.Status != 200 {
			t.Fatalf("create page control: %d %s", r.Status, r.Raw)
		}
		ids = append(ids, r.Body["id"].(string))
	}
	if r := a.do("PATCH", base+"/pagecontrols/"+ids[0], `{"enabled":false}`); r.Status != 200 || r.Body["version"] != float64(2) {
		t.Fatalf("patch: %d %s", r.Status, r.Raw)
	}

	r := a.do("GET", base+"/webcontrols/"+ids[0], "")
	if r.Status != 200 {
		t.Fatalf("get: %d %s", r.Status, r.Raw)
	}
	if r.Body["href"] != base+"/webcontrols/"+ids[0] || r.Body["version"] != float64(2) || r.Body["enabled"] != false || r.Body["name"] != "Control 0" {
		t.Errorf("web control: %s", r.Raw)
	}
	conds, _ := json.Marshal(r.Body["conditions"])
	if string(conds) != `[{"type":"is_crawler"},{"list":["US","CA"],"type":"country_is"}]` {
		t.Errorf("conditions as a list, in the object's order: %s", conds)
	}
	if _, ok := r.Body["history"]; ok {
		t.Errorf("history is not in the default attributes: %s", r.Raw)
	}
	r = a.do("GET", base+"/webcontrols/"+ids[0]+"?attributes=+history,-actions,-conditions", "")
	hist, _ := r.Body["history"].([]any)
	if r.Status != 200 || len(hist) != 1 || hist[0].(map[string]any)["version"] != float64(1) {
		t.Errorf("+history: %d %s", r.Status, r.Raw)
	}
	if _, ok := r.Body["actions"]; ok || r.Body["conditions"] != nil {
		t.Errorf("-actions,-conditions left them in: %s", r.Raw)
	}

	// Clear 400s and 404s.
	for _, c := range []struct {
		path string
		want int
		msg  string
	}{
		{base + "/webcontrols?attributes=history", 400, "+name or -name"},
		{base + "/webcontrols?attributes=+secret", 400, `no attribute`},
		{base + "/webcontrols?filter=deleted", 400, "only the empty filter"},
		{base + "/webcontrols?order=name", 400, "order"},
		{base + "/webcontrols?limit=0", 400, "limit"},
		{base + "/webcontrols/abc", 404, "no web control"},
		{base + "/webcontrols/01", 404, "no web control"},
		{base + "/webcontrols/99", 404, "no web control"},
		{"/v2/applications/nosuchapp/webcontrols", 404, "no application"},
	} {
		if r := a.do("GET", c.path, ""); r.Status != c.want || !strings.Contains(r.Raw, c.msg) {
			t.Errorf("GET %s: %d %s, want %d naming %q", c.path, r.Status, r.Raw, c.want, c.msg)
		}
	}
	if r := a.do("GET", base+"/webcontrols?filter=", ""); r.Status != 200 {
		t.Errorf("filter= (every web control): %d %s", r.Status, r.Raw)
	}

	// Paging: two at a time, by cursor, in id order; and newest first.
	var seen []string
	next := base + "/webcontrols?limit=2"
	for next != "" {
		out, link := a.page(next)
		for _, w := range out {
			seen = append(seen, w["id"].(string))
		}
		next = link
	}
	if strings.Join(seen, ",") != strings.Join(ids, ",") {
		t.Errorf("pages: %v, want %v", seen, ids)
	}
	out, _ := a.page(base + "/webcontrols?order=-id&limit=2&attributes=+history")
	if len(out) != 2 || out[0]["id"] != ids[4] || out[1]["id"] != ids[3] {
		t.Errorf("order=-id: %v", out)
	}

	// A deleted page control is no web control.
	if r := a.do("DELETE", base+"/pagecontrols/"+ids[2], ""); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	if r := a.do("GET", base+"/webcontrols/"+ids[2], ""); r.Status != 404 {
		t.Errorf("deleted: %d %s", r.Status, r.Raw)
	}
	if out, _ := a.page(base + "/webcontrols?limit=100"); len(out) != 4 {
		t.Errorf("after a delete: %d web controls", len(out))
	}

	// Only what the caller may GET is listed.
	reader := a.user(a.root, authz.Permission{Method: "GET", Effect: "permit", Spec: []string{base + "/webcontrols", base + "/webcontrols/" + ids[1]}})
	r = a.call(reader, "GET", base+"/webcontrols", "", "")
	var list []map[string]any
	_ = json.Unmarshal([]byte(r.Raw), &list)
	if r.Status != 200 || len(list) != 1 || list[0]["id"] != ids[1] {
		t.Errorf("filtered list: %d %s", r.Status, r.Raw)
	}
}

// page reads one page of a collection and the path of the next (from the
// Link header), "" at the end.
func (a *api) page(path string) ([]map[string]any, string) {
	a.t.Helper()
	r := a.do("GET", path, "")
	var items []map[string]any
	if err := json.Unmarshal([]byte(r.Raw), &items); r.Status != 200 || err != nil {
		a.t.Fatalf("GET %s: %d %v: %s", path, r.Status, err, r.Raw)
	}
	if r.Link == "" {
		return items, ""
	}
	p, err := url.Parse(strings.TrimPrefix(strings.Split(r.Link, ">")[0], "<"))
	if err != nil {
		a.t.Fatalf("Link %q: %v", r.Link, err)
	}
	q, _ := url.ParseQuery(p.RawQuery)
	// call passes query values as written: send them decoded.
	var parts []string
	for k, vs := range q {
		parts = append(parts, k+"="+vs[0])
	}
	return items, p.Path + "?" + strings.Join(parts, "&")
}
