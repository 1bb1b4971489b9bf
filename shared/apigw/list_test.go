package apigw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"cads/shared/caller"

	"github.com/aws/aws-lambda-go/events"
)

type member struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// sliceSource is a stored order held in memory: positions are the ids,
// zero-padded so that their string order is the stored order.
type sliceSource struct {
	all      []member
	reads    atomic.Int64
	examined atomic.Int64
}

func (s *sliceSource) read(_ context.Context, after string, desc bool, n int) ([]member, []string, bool, error) {
	s.reads.Add(1)
	ms := slices.Clone(s.all)
	if desc {
		slices.Reverse(ms)
	}
	i := 0
	if after != "" {
		i = slices.IndexFunc(ms, func(m member) bool {
			if desc {
				return m.ID < after
			}
			return m.ID > after
		})
		if i < 0 {
			i = len(ms)
		}
	}
	end := min(i+n, len(ms))
	page := ms[i:end]
	pos := make([]string, len(page))
	for j, m := range page {
		pos[j] = m.ID
	}
	s.examined.Add(int64(len(page)))
	return page, pos, end < len(ms), nil
}

var memberPos = regexp.MustCompile(`^m[0-9]{5}$`)

// listHandler lists src for a caller who may see the members hidden does
// not reject.
func listHandler(t *testing.T, src *sliceSource, hidden func(member) bool) func(rawQuery string) events.APIGatewayProxyResponse {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := NewMux()
	mux.HandleFunc("GET /v2/things", Handle(log, func(r *http.Request, p caller.Principal) (int, any, error) {
		page, err := ParsePage(r.URL.Query(), "name", "created")
		if err != nil {
			return 0, nil, err
		}
		c, err := List(r, page, Lister[member, member]{
			Name: "things", Indexed: "created", Read: src.read, ValidPosition: memberPos.MatchString,
			Allow: func(context.Context) (func(member) (bool, error), error) {
				return func(m member) (bool, error) { return !hidden(m), nil }, nil
			},
			Out: func(m member) (member, error) { return m, nil },
			Sort: func(ms []member, order []OrderKey) {
				Sort(ms, order, func(m member, _ string) any { return m.Name }, func(m member) string { return m.ID })
			},
		})
		return 200, c, err
	}))
	h := Lambda(log, mux)
	return func(rawQuery string) events.APIGatewayProxyResponse {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			t.Fatal(err)
		}
		qs := map[string]string{}
		for k := range q {
			qs[k] = q.Get(k)
		}
		req := events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/v2/things", QueryStringParameters: qs}
		req.RequestContext.Authorizer = (&caller.Principal{ID: "u1", AccountID: "a1", KeyID: "k1"}).Context()
		resp, err := h(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
}

func members(n int) []member {
	out := make([]member, n)
	for i := range out {
		out[i] = member{ID: fmt.Sprintf("m%05d", i), Name: fmt.Sprintf("n%05d", (i*7919)%n)}
	}
	return out
}

var linkRE = regexp.MustCompile(`^</v2/things\?([^>]*)>; rel="next"$`)

func header(r events.APIGatewayProxyResponse, k string) string {
	if v := r.MultiValueHeaders[k]; len(v) > 0 {
		return v[0]
	}
	return r.Headers[k]
}

// next is the query of the Link header, "" when there is none.
func next(t *testing.T, r events.APIGatewayProxyResponse) string {
	t.Helper()
	l := header(r, HeaderLink)
	if l == "" {
		return ""
	}
	m := linkRE.FindStringSubmatch(l)
	if m == nil {
		t.Fatalf("Link %q", l)
	}
	return m[1]
}

func pageIDs(t *testing.T, r events.APIGatewayProxyResponse) []string {
	t.Helper()
	if r.StatusCode != 200 {
		t.Fatalf("status %d: %s", r.StatusCode, r.Body)
	}
	var ms []member
	if err := json.Unmarshal([]byte(r.Body), &ms); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// A page of the stored order costs what the page needs, not what the
// collection holds, and its Link walks the whole collection exactly once.
func TestListPagesInTheStore(t *testing.T) {
	src := &sliceSource{all: members(10000)}
	call := listHandler(t, src, func(member) bool { return false })

	r := call("limit=5")
	if got := pageIDs(t, r); strings.Join(got, ",") != "m00000,m00001,m00002,m00003,m00004" {
		t.Fatalf("first page %v", got)
	}
	if src.reads.Load() != 1 || src.examined.Load() != 6 {
		t.Fatalf("first page: %d reads, %d examined; want 1 and 6", src.reads.Load(), src.examined.Load())
	}
	if header(r, HeaderCut) != "" {
		t.Fatalf("an uncut page says %q", header(r, HeaderCut))
	}
	// Deep pages through the cursor cost the same as the first.
	q := next(t, r)
	var seen []string
	seen = append(seen, pageIDs(t, r)...)
	for range 3 {
		src.reads.Store(0)
		src.examined.Store(0)
		r = call(q)
		seen = append(seen, pageIDs(t, r)...)
		if src.reads.Load() != 1 || src.examined.Load() != 6 {
			t.Fatalf("page after %s: %d reads, %d examined", seen[len(seen)-6], src.reads.Load(), src.examined.Load())
		}
		q = next(t, r)
	}
	if strings.Join(seen, ",") != strings.Join(idsOf(src.all[:20]), ",") {
		t.Fatalf("four pages by cursor: %v", seen)
	}
	// The last page has no Link.
	small := &sliceSource{all: members(7)}
	walkAll(t, listHandler(t, small, func(member) bool { return false }), "limit=3", idsOf(small.all))

	// -created is the reverse order.
	r = call("limit=2&order=-created")
	if got := pageIDs(t, r); strings.Join(got, ",") != "m09999,m09998" {
		t.Fatalf("-created %v", got)
	}
	if got := pageIDs(t, call(next(t, r))); strings.Join(got, ",") != "m09997,m09996" {
		t.Fatalf("-created, second page %v", got)
	}
}

func idsOf(ms []member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// walkAll follows Link from query q and requires exactly want.
func walkAll(t *testing.T, call func(string) events.APIGatewayProxyResponse, q string, want []string) []events.APIGatewayProxyResponse {
	t.Helper()
	var got []string
	var pages []events.APIGatewayProxyResponse
	for q != "" {
		if len(pages) > len(want)+10 {
			t.Fatalf("no end after %d pages", len(pages))
		}
		r := call(q)
		pages = append(pages, r)
		got = append(got, pageIDs(t, r)...)
		q = next(t, r)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("walked %d members %v..., want %d", len(got), got[:min(len(got), 5)], len(want))
	}
	return pages
}

// Members the caller may not see are skipped within the read budget;
// when it runs out the page is shorter, says so, and its cursor goes on
// where reading stopped: every visible member comes exactly once.
func TestListReadBudget(t *testing.T) {
	src := &sliceSource{all: members(5000)}
	// Visible: every 1,500th member.
	hidden := func(m member) bool { var i int; fmt.Sscanf(m.ID, "m%d", &i); return i%1500 != 0 }
	call := listHandler(t, src, hidden)
	pages := walkAll(t, call, "limit=2", []string{"m00000", "m01500", "m03000", "m04500"})
	for i, r := range pages[:len(pages)-1] {
		if header(r, HeaderCut) != CutRead && len(pageIDs(t, r)) < 2 {
			t.Fatalf("page %d is short without saying why: %v", i, r.Headers)
		}
	}
	src.examined.Store(0)
	src.reads.Store(0)
	r := call("limit=2")
	if header(r, HeaderCut) != CutRead || src.examined.Load() != ReadBudget {
		t.Fatalf("first page: cut %q after %d examined", header(r, HeaderCut), src.examined.Load())
	}
	// A start past what one request may read is reached across pages.
	walkAll(t, call, "limit=1&start=3", []string{"m03000", "m04500"})
	// Beyond the end: an empty page, no Link, nothing cut.
	few := listHandler(t, &sliceSource{all: members(30)}, func(member) bool { return false })
	if r := few("start=31"); r.Body != "[]" || next(t, r) != "" || header(r, HeaderCut) != "" {
		t.Fatalf("beyond the end: %+v", r)
	}
}

func TestListCursorIsChecked(t *testing.T) {
	src := &sliceSource{all: members(20)}
	call := listHandler(t, src, func(member) bool { return false })
	q, _ := url.ParseQuery(next(t, call("limit=5")))
	cur := q.Get(ParamCursor)
	raw, _ := base64.RawURLEncoding.DecodeString(cur)
	forge := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, bad := range map[string]string{
		"not base64":       "%%%",
		"empty":            "",
		"other collection": forge(strings.Replace(string(raw), `"things"`, `"users"`, 1)),
		"other order":      forge(strings.Replace(string(raw), `"o":"created"`, `"o":"-created"`, 1)),
		"bad position":     forge(strings.Replace(string(raw), `"m00004"`, `"APP#x"`, 1)),
		"extra field":      forge(strings.TrimSuffix(string(raw), "}") + `,"pk":"ACCOUNT#x"}`),
		"negative skip":    forge(strings.TrimSuffix(string(raw), "}") + `,"s":-1}`),
	} {
		r := call("cursor=" + url.QueryEscape(bad))
		if r.StatusCode != 400 || !strings.Contains(r.Body, `"bad_request"`) {
			t.Errorf("%s cursor: %d %s", name, r.StatusCode, r.Body)
		}
	}
	if r := call("cursor=" + cur + "&order=-created"); r.StatusCode != 400 {
		t.Errorf("cursor with another order: %d", r.StatusCode)
	}
	if r := call("cursor=" + cur + "&start=2"); r.StatusCode != 400 {
		t.Errorf("cursor with start: %d", r.StatusCode)
	}
	if r := call("cursor=" + cur + "&order=name"); r.StatusCode != 400 {
		t.Errorf("cursor with a sorted order: %d", r.StatusCode)
	}
}

// An order the store does not keep is served over a bounded read, and
// refused past it.
func TestListSortedIsBounded(t *testing.T) {
	src := &sliceSource{all: members(ReadBudget)}
	call := listHandler(t, src, func(member) bool { return false })
	r := call("order=name&limit=3")
	if got := pageIDs(t, r); len(got) != 3 {
		t.Fatalf("sorted page %v", got)
	}
	var ms []member
	_ = json.Unmarshal([]byte(r.Body), &ms)
	if ms[0].Name != "n00000" || ms[2].Name != "n00002" {
		t.Fatalf("sorted by name: %+v", ms)
	}
	if q := next(t, r); !strings.Contains(q, "start=4") || strings.Contains(q, ParamCursor) {
		t.Fatalf("sorted next %q", q)
	}
	src.all = members(ReadBudget + 1)
	if r := call("order=name"); r.StatusCode != 400 || !strings.Contains(r.Body, fmt.Sprint(ReadBudget)) {
		t.Fatalf("sorted past the budget: %d %s", r.StatusCode, r.Body)
	}
}
