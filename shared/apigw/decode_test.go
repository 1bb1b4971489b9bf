package apigw

import (
	"cads/shared/domain"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type sample struct {
	Name  *string `json:"name"`
	Count int     `json:"count"`
}

func TestDecodeJSON(t *testing.T) {
	cases := []struct {
		name, ct, body string
		status         int
		msg            string
	}{
		{"ok", "application/json", `{"name":"a","count":2}`, 0, ""},
		{"charset param", "application/json; charset=utf-8", `{"name":"a"}`, 0, ""},
		{"unknown field", "application/json", `{"name":"a","parent":"x"}`, 400, `unknown field "parent"`},
		{"wrong type", "application/json", `{"count":"x"}`, 400, `field "count" must be a number`},
		{"syntax", "application/json", `{"name":`, 400, "ends before"},
		{"trailing data", "application/json", `{"name":"a"} {}`, 400, "unexpected data"},
		{"empty", "application/json", ``, 400, "required"},
		{"no content type", "", `{}`, 415, "missing Content-Type"},
		{"wrong content type", "text/plain", `{}`, 415, "text/plain"},
		{"too large", "application/json", `{"name":"` + strings.Repeat("a", MaxJSONBody) + `"}`, 413, "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v2/x", strings.NewReader(c.body))
			if c.ct != "" {
				r.Header.Set("Content-Type", c.ct)
			}
			var v sample
			err := DecodeJSON(r, &v)
			if c.status == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			e, ok := domain.AsError(err)
			if !ok || Status(err) != c.status || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v; want %d containing %q", err, c.status, c.msg)
			}
		})
	}
}

func TestParsePageAndWindow(t *testing.T) {
	q := map[string][]string{"start": {"2"}, "limit": {"2"}, "order": {"-name,+created"}}
	p, err := ParsePage(q, "name", "created")
	if err != nil || p.Start != 2 || p.Limit != 2 || len(p.Order) != 2 || !p.Order[0].Desc || p.Order[1].Desc {
		t.Fatalf("ParsePage = %+v, %v", p, err)
	}
	if got := Window([]int{1, 2, 3, 4}, p); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("Window = %v", got)
	}
	if got := Window([]int{1}, p); len(got) != 0 {
		t.Fatalf("Window past the end = %v", got)
	}
	for _, bad := range []map[string][]string{{"start": {"0"}}, {"limit": {"x"}}, {"limit": {"100000"}}, {"order": {"secret"}}} {
		if _, err := ParsePage(bad, "name"); err == nil {
			t.Errorf("ParsePage(%v) accepted", bad)
		}
	}
}

// Sort follows the page's keys in turn, then the id; with no keys, the
// default.
func TestSort(t *testing.T) {
	type item struct {
		id, name string
		at       time.Time
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	items := func() []item {
		return []item{{"c", "x", t0}, {"a", "y", t0.Add(time.Hour)}, {"b", "x", t0.Add(2 * time.Hour)}, {"d", "y", t0}}
	}
	value := func(it item, field string) any {
		if field == "name" {
			return it.name
		}
		return it.at
	}
	ids := func(its []item) string {
		var s string
		for _, it := range its {
			s += it.id
		}
		return s
	}
	for _, c := range []struct {
		order []OrderKey
		want  string
	}{
		{[]OrderKey{{Field: "name"}}, "bcad"},
		{[]OrderKey{{Field: "name", Desc: true}, {Field: "created"}}, "dacb"},
		{[]OrderKey{{Field: "created", Desc: true}}, "bacd"},
		{nil, "cdab"}, // the default: created
	} {
		its := items()
		Sort(its, c.order, value, func(it item) string { return it.id }, OrderKey{Field: "created"})
		if got := ids(its); got != c.want {
			t.Errorf("order %+v: %s, want %s", c.order, got, c.want)
		}
	}
}
