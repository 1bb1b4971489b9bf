package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"cads/shared/domain"

	"golang.org/x/sync/errgroup"
)

// ReadBudget is how many members one collection request may examine
// (read from the table, visible to the caller or not): past it, the page
// is answered shorter, with the cut stated and a continuation, instead of
// reading on (docs/api.md, Collections).
const ReadBudget = 1000

// CutRead names the read budget in X-Result-Cut.
const CutRead = "read_budget"

// ParamCursor is the query parameter that carries a continuation; a Link
// header (rel="next") hands it out.
const ParamCursor = "cursor"

// Source reads a collection in its stored order (desc: reversed): up to n
// members after the position after ("" from the beginning), each member's
// position, and whether the collection may go on past them.
type Source[T any] func(ctx context.Context, after string, desc bool, n int) (items []T, positions []string, more bool, err error)

// Lister is one collection's list pipeline: a bounded read of the stored
// order, the permission filter, the page and its continuation.
type Lister[T, O any] struct {
	// Name tells this collection's cursors from every other's.
	Name string
	// Indexed is the field the store keeps the collection ordered by (then
	// by id): `order` naming it alone (either direction), or no `order`,
	// pages in the store.
	Indexed string
	Read    Source[T]
	// ValidPosition checks a position taken from a cursor before it
	// reaches the store: a cursor is client input.
	ValidPosition func(string) bool
	// Allow returns the filter of the members the caller may see; it runs
	// in parallel with the first read. The filter may read (a permission
	// decision reads on for a refusal): its error ends the request.
	Allow func(ctx context.Context) (func(T) (bool, error), error)
	Out   func(T) (O, error)
	// Finish, when set, completes a page's members after the window
	// (reads that only the members shown need, made at once).
	Finish func(ctx context.Context, page []O) error
	// Sort orders a page read whole for an `order` the store does not
	// keep (nil: only Indexed may be ordered by).
	Sort func([]O, []OrderKey)
}

// AllowAll is the Allow of a collection whose every member the caller may
// see once the route allowed the request (or a read scoped to the
// caller's account found it).
func AllowAll[T any](context.Context) (func(T) (bool, error), error) {
	return func(T) (bool, error) { return true, nil }, nil
}

// Collection is a page of a collection with what goes on from it; Handle
// writes it as a JSON array with a Link header (rel="next") when more
// follows and X-Result-Cut when a budget cut it.
type Collection struct {
	Items any // a slice
	// next returns the query of the page after the first n items of Items.
	next func(n int) url.Values
	more bool   // members follow Items
	cut  string // the budget that cut the page, if one did
}

// cursor is a position in one collection's stored order: Skip visible
// members after After are still to be passed over (a `start` that the
// read budget did not reach).
type cursor struct {
	Name  string `json:"c"`
	Order string `json:"o"`
	After string `json:"a"`
	Skip  int    `json:"s,omitempty"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errCursor = domain.Errorf(domain.Invalid, "cursor: not a continuation of this collection and order; start again without it")

func decodeCursor(s, name, order string, valid func(string) bool) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errCursor
	}
	var c cursor
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if d.Decode(&c) != nil || d.More() || c.Name != name || c.Order != order || c.Skip < 0 || c.Skip > 1<<31-1 ||
		c.After == "" || !valid(c.After) {
		return cursor{}, errCursor
	}
	return c, nil
}

// List answers one page of l's collection for the request's start, limit,
// order and cursor (page from ParsePage).
//
// In the stored order (Indexed, or no order) it reads only what the page
// needs: start-1+limit+1 visible members, at most ReadBudget examined; a
// `start` past what the budget reaches, or members the caller may not see,
// end the page early with X-Result-Cut: read_budget and a cursor that goes
// on exactly where the reading stopped. Any other order reads the whole
// collection, refused with a 400 when it has more than ReadBudget members.
func List[T, O any](r *http.Request, page Page, l Lister[T, O]) (*Collection, error) {
	q := r.URL.Query()
	order, desc, indexed := orderKey(page.Order, l.Indexed)
	if !indexed {
		if q.Has(ParamCursor) {
			return nil, domain.Errorf(domain.Invalid, "cursor: continuations follow the stored order (%s or -%s); this order pages by start", l.Indexed, l.Indexed)
		}
		return listSorted(r, page, l)
	}
	c := cursor{Name: l.Name, Order: order, Skip: page.Start - 1}
	if s := q.Get(ParamCursor); s != "" || q.Has(ParamCursor) {
		if q.Has("start") {
			return nil, domain.Errorf(domain.Invalid, "start and cursor cannot be combined: the cursor holds the position")
		}
		var err error
		if c, err = decodeCursor(s, l.Name, order, l.ValidPosition); err != nil {
			return nil, err
		}
	}
	ctx := r.Context()
	var (
		allow    func(T) (bool, error)
		allowErr error
		g        errgroup.Group // the read's error comes first
	)
	g.Go(func() error { allow, allowErr = l.Allow(ctx); return nil })

	want := c.Skip + page.Limit + 1 // one more tells whether a next page exists
	var (
		vis      []T
		visPos   []string
		examined int
		pos      = c.After
		more     = true
		readErr  error
	)
	for n := 0; more && len(vis) < want && examined < ReadBudget; {
		// The first read asks for what the page needs; later ones (members
		// were hidden) double, within the budget.
		n = min(ReadBudget-examined, max(want-len(vis), n, examined))
		var (
			items []T
			ps    []string
		)
		items, ps, more, readErr = l.Read(ctx, pos, desc, n)
		if examined == 0 {
			_ = g.Wait()
		}
		if readErr != nil || allowErr != nil {
			break
		}
		examined += len(items)
		for i, it := range items {
			pos = ps[i]
			var ok bool
			if ok, allowErr = allow(it); allowErr != nil {
				break
			}
			if ok {
				vis, visPos = append(vis, it), append(visPos, ps[i])
				if len(vis) == want {
					break
				}
			}
		}
		if allowErr != nil {
			break
		}
		if len(items) == 0 {
			more = false
		}
	}
	_ = g.Wait()
	if readErr != nil || allowErr != nil {
		return nil, firstErr(readErr, allowErr)
	}

	from := min(c.Skip, len(vis))
	to := min(from+page.Limit, len(vis))
	out, err := outAll(vis[from:to], l.Out)
	if err != nil {
		return nil, err
	}
	if l.Finish != nil {
		if err := l.Finish(ctx, out); err != nil {
			return nil, err
		}
	}
	res := &Collection{Items: out}
	base := nextBase(q)
	after := func(p string, skip int) url.Values {
		v := cloneValues(base)
		v.Set(ParamCursor, cursor{Name: l.Name, Order: order, After: p, Skip: skip}.encode())
		return v
	}
	pagePos := visPos[from:to]
	switch {
	case len(vis) == want:
		res.more = true
	case more: // the budget ran out before the page was known to be whole
		res.more, res.cut = true, CutRead
	}
	tail := func() url.Values {
		if len(vis) == want {
			return after(pagePos[len(pagePos)-1], 0)
		}
		// Everything examined was shown or passed over, so going on
		// starts after the last member examined.
		return after(pos, max(0, c.Skip-len(vis)))
	}
	res.next = func(n int) url.Values {
		if n < len(pagePos) {
			return after(pagePos[n-1], 0)
		}
		return tail()
	}
	return res, nil
}

// listSorted serves an order the store does not keep: the collection read
// whole (at most ReadBudget members), sorted, windowed by start/limit.
func listSorted[T, O any](r *http.Request, page Page, l Lister[T, O]) (*Collection, error) {
	if l.Sort == nil {
		return nil, domain.Errorf(domain.Invalid, "order: this collection is ordered by %s only", l.Indexed)
	}
	ctx := r.Context()
	var (
		allow    func(T) (bool, error)
		allowErr error
		g        errgroup.Group // the read's error comes first
	)
	g.Go(func() error { allow, allowErr = l.Allow(ctx); return nil })
	items, _, _, err := l.Read(ctx, "", false, ReadBudget+1)
	_ = g.Wait()
	if err != nil || allowErr != nil {
		return nil, firstErr(err, allowErr)
	}
	if len(items) > ReadBudget {
		return nil, domain.Errorf(domain.Invalid, "order: a collection of more than %d members can be listed only in its stored order (%s or -%s), page by page; sort on the client or leave order out",
			ReadBudget, l.Indexed, l.Indexed)
	}
	var vis []T
	for _, it := range items {
		ok, err := allow(it)
		if err != nil {
			return nil, err
		}
		if ok {
			vis = append(vis, it)
		}
	}
	all, err := outAll(vis, l.Out)
	if err != nil {
		return nil, err
	}
	l.Sort(all, page.Order)
	win := Window(all, page)
	if l.Finish != nil {
		if err := l.Finish(ctx, win); err != nil {
			return nil, err
		}
	}
	base := nextBase(r.URL.Query())
	return &Collection{Items: win, more: page.Start-1+len(win) < len(all), next: func(n int) url.Values {
		v := cloneValues(base)
		v.Set("start", strconv.Itoa(page.Start+n))
		return v
	}}, nil
}

// orderKey reports whether order is the stored one (nothing, or Indexed
// alone in either direction), and names it as cursors record it.
func orderKey(order []OrderKey, indexed string) (name string, desc, ok bool) {
	switch {
	case len(order) == 0:
		return indexed, false, true
	case len(order) == 1 && order[0].Field == indexed:
		if order[0].Desc {
			return "-" + indexed, true, true
		}
		return indexed, false, true
	}
	return "", false, false
}

// nextBase is the query a next page keeps: the same limit and order, no
// start (the cursor holds it) and no credential.
func nextBase(q url.Values) url.Values {
	v := url.Values{}
	for k, vs := range q {
		switch k {
		case "start", ParamCursor, "authorization":
			continue
		}
		v[k] = vs
	}
	return v
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v)+1)
	for k, vs := range v {
		out[k] = vs
	}
	return out
}

func outAll[T, O any](items []T, f func(T) (O, error)) ([]O, error) {
	out := make([]O, 0, len(items))
	for _, it := range items {
		o, err := f(it)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// linkNext is the Link header value naming the page after n items.
func (c *Collection) linkNext(path string, n int) string {
	q := c.next(n)
	return "<" + path + "?" + strings.ReplaceAll(q.Encode(), ">", "%3E") + `>; rel="next"`
}
