package apigw

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"cads/shared/domain"
)

// Page is the collection window of docs/api.md#collections: `start` is
// 1-based (default 1), `limit` defaults to 100, `order` is a comma list of
// field names with an optional -/+ prefix.
type Page struct {
	Start int
	Limit int
	Order []OrderKey
}

// OrderKey is one field of an `order` list.
type OrderKey struct {
	Field string
	Desc  bool
}

const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// ParsePage reads start/limit/order; orderable lists the fields `order` may
// name (an unknown one is a 400 that lists the allowed ones).
func ParsePage(q url.Values, orderable ...string) (Page, error) {
	p := Page{Start: 1, Limit: DefaultLimit}
	var err error
	if p.Start, err = intParam(q, "start", 1, 1, 1<<31-1); err != nil {
		return p, err
	}
	if p.Limit, err = intParam(q, "limit", DefaultLimit, 1, MaxLimit); err != nil {
		return p, err
	}
	if o := q.Get("order"); o != "" {
		allowed := map[string]bool{}
		for _, f := range orderable {
			allowed[f] = true
		}
		for _, part := range strings.Split(o, ",") {
			k := OrderKey{Field: strings.TrimSpace(part)}
			switch {
			case strings.HasPrefix(k.Field, "-"):
				k.Field, k.Desc = k.Field[1:], true
			case strings.HasPrefix(k.Field, "+"):
				k.Field = k.Field[1:]
			}
			if !allowed[k.Field] {
				return p, domain.Errorf(domain.Invalid, "order: cannot order by %q; use one of %s", k.Field, strings.Join(orderable, ", "))
			}
			p.Order = append(p.Order, k)
		}
	}
	return p, nil
}

func intParam(q url.Values, name string, def, min, max int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		return 0, domain.Errorf(domain.Invalid, "%s must be an integer from %d to %d", name, min, max)
	}
	return n, nil
}

// Window returns the part of items that p selects.
func Window[T any](items []T, p Page) []T {
	from := p.Start - 1
	if from >= len(items) {
		return []T{}
	}
	to := from + p.Limit
	if to > len(items) {
		to = len(items)
	}
	return items[from:to]
}

// Sort orders a collection as order asks (ParsePage's, whose fields it
// checked), or as dflt when order is empty, then by id, so that the order
// is total and a page never shifts. value returns an item's value of one
// of the orderable fields: a string, a time.Time or an int.
func Sort[T any](items []T, order []OrderKey, value func(item T, field string) any, id func(T) string, dflt ...OrderKey) {
	if len(order) == 0 {
		order = dflt
	}
	slices.SortStableFunc(items, func(x, y T) int {
		for _, k := range order {
			c := compareValues(value(x, k.Field), value(y, k.Field))
			if k.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return strings.Compare(id(x), id(y))
	})
}

func compareValues(a, b any) int {
	switch a := a.(type) {
	case string:
		b, _ := b.(string)
		return strings.Compare(a, b)
	case time.Time:
		b, _ := b.(time.Time)
		return a.Compare(b)
	case int:
		b, _ := b.(int)
		return cmp.Compare(a, b)
	}
	return 0
}
