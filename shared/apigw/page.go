package apigw

import (
	"net/url"
	"strconv"
	"strings"
)

// Page is the collection window of DECISIONS.md section 1: `start` is
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
				return p, BadRequest("order: cannot order by %q; use one of %s", k.Field, strings.Join(orderable, ", "))
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
		return 0, BadRequest("%s must be an integer from %d to %d", name, min, max)
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
