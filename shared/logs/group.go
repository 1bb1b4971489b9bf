package logs

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

// Grouping is the groupby/groupfilters/groupselect/grouplimit/grouporder
// part of a query.
type Grouping struct {
	Interval time.Duration // 0: no interval level
	Attr     string        // "": no attribute level
	Filters  []groupFilter
	Selects  []aggregate
	Limit    int
	Order    []groupOrder
	Fields   []string // the result's columns
}

type groupFilter struct {
	name  string // the filter's text, or "other"
	expr  Expr   // nil for other
	other bool
}

type aggregate struct {
	name string // count, sum(x), ...
	fn   string
	attr string
}

type groupOrder struct {
	col  int
	desc bool
}

// DefaultGroupLimit is grouplimit's default.
const DefaultGroupLimit = 100

// MaxGroupFilters bounds groupfilters: each record is tested against
// every one of them.
const MaxGroupFilters = 20

var groupParams = []string{"groupfilters", "grouplimit", "groupselect", "grouporder"}

func parseGrouping(q url.Values, qq *Query) (*Grouping, error) {
	by := q.Get("groupby")
	if strings.TrimSpace(by) == "" {
		for _, p := range groupParams {
			if q.Get(p) != "" {
				return nil, bad("%s: needs groupby", p)
			}
		}
		return nil, nil
	}
	s := qq.Schema
	g := &Grouping{Limit: DefaultGroupLimit}
	parts := strings.Split(by, ",")
	if len(parts) > 2 {
		return nil, bad("groupby: at most two elements, the first interval(n)")
	}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if arg, ok := strings.CutPrefix(p, "interval("); ok && strings.HasSuffix(arg, ")") {
			if i != 0 {
				return nil, bad("groupby: interval(n) must come first")
			}
			n, err := strconv.Atoi(strings.TrimSuffix(arg, ")"))
			if err != nil || n < 1 || n > 31*24*3600 {
				return nil, bad("groupby: interval(n) takes a number of seconds from 1 to %d", 31*24*3600)
			}
			g.Interval = time.Duration(n) * time.Second
			g.Fields = append(g.Fields, p)
			continue
		}
		if i == 1 && g.Interval == 0 {
			return nil, bad("groupby: two elements only when the first is interval(n)")
		}
		if _, ok := s.Field(p); !ok {
			return nil, bad("groupby: unknown field %q for %s logs", p, s.Type)
		}
		g.Attr = p
		g.Fields = append(g.Fields, p)
	}
	if v := q.Get("groupfilters"); strings.TrimSpace(v) != "" {
		texts := splitTopLevel(v)
		if len(texts) > MaxGroupFilters {
			return nil, bad("groupfilters: at most %d filters (MaxGroupFilters)", MaxGroupFilters)
		}
		for i, t := range texts {
			t = strings.TrimSpace(t)
			if strings.EqualFold(t, "other") {
				if i != len(texts)-1 {
					return nil, bad("groupfilters: other must be the last filter")
				}
				g.Filters = append(g.Filters, groupFilter{name: "other", other: true})
				continue
			}
			e, err := ParseFilter(t, s)
			if err != nil {
				return nil, bad("groupfilters: filter %d: %s", i+1, err.Error())
			}
			g.Filters = append(g.Filters, groupFilter{name: t, expr: e})
		}
		g.Fields = append(g.Fields, "filter")
	}
	sel := q.Get("groupselect")
	if strings.TrimSpace(sel) == "" {
		sel = "count"
	}
	for _, p := range strings.Split(sel, ",") {
		p = strings.TrimSpace(p)
		if p == "count" {
			g.Selects = append(g.Selects, aggregate{name: p, fn: p})
			g.Fields = append(g.Fields, p)
			continue
		}
		fn, rest, ok := strings.Cut(p, "(")
		attr, closed := strings.CutSuffix(rest, ")")
		switch {
		case !ok || !closed || (fn != "sum" && fn != "min" && fn != "max" && fn != "avg"):
			return nil, bad("groupselect: %q is not count, sum(name), min(name), max(name) or avg(name)", p)
		}
		if f, ok := s.Field(attr); !ok || f.Kind != KindNumber {
			return nil, bad("groupselect: %q needs a numeric field of %s logs", p, s.Type)
		}
		g.Selects = append(g.Selects, aggregate{name: p, fn: fn, attr: attr})
		g.Fields = append(g.Fields, p)
	}
	var err error
	if g.Limit, err = intParam(q, "grouplimit", DefaultGroupLimit, 1, 200); err != nil {
		return nil, err
	}
	if v := q.Get("grouporder"); strings.TrimSpace(v) != "" {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			desc := false
			if strings.HasPrefix(p, "-") || strings.HasPrefix(p, "+") {
				desc, p = p[0] == '-', p[1:]
			}
			col := slices.Index(g.Fields, p)
			if col < 0 {
				return nil, bad("grouporder: %q is not one of %s", p, strings.Join(g.Fields, ", "))
			}
			g.Order = append(g.Order, groupOrder{col, desc})
		}
	}
	return g, nil
}

// splitTopLevel splits on commas outside parentheses and quotes, so
// filters with in (...) lists stay whole.
func splitTopLevel(s string) []string {
	var (
		out   []string
		depth int
		quote rune
		start int
	)
	for i, r := range s {
		switch {
		case quote != 0:
			if r == '\\' {
				continue
			}
			if r == quote && (i == 0 || s[i-1] != '\\') {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

type groupAcc struct {
	key   []any
	count int
	sum   []float64
	n     []int
	min   []float64
	max   []float64
}

// runGroups reads every matching record of the range (within the scan
// budget), from the partitions the hour index names, and aggregates it
// into its groups.
func (q *Query) runGroups(ctx context.Context, st ScanStore, app string, f filled) (*Result, error) {
	g := q.Group
	groups := map[string]*groupAcc{}
	scanCtx, cancel := context.WithDeadline(ctx, q.stopAt(ctx))
	defer cancel()
	var (
		read   int
		meter  Meter
		decErr error
		over   error
	)
	// A grouped answer is only right over the whole range, so a budget
	// refuses it rather than cutting it.
	timeUp := func() error {
		return bad("grouping reads every matching record and did not finish within the time limit of %s (MaxQueryTime): narrow from/to or the filter", q.timeLimit)
	}
	for _, h := range q.walk(f, false) {
		err := st.ScanLogs(scanCtx, store.LogRange{App: app, Type: q.Schema.Type, Hour: h, From: h, To: q.To, PageSize: 100}, func(it domain.LogItem) bool {
			if scanCtx.Err() != nil {
				over = timeUp()
				return false
			}
			recs, err := decodeChunk(it, false)
			if err != nil {
				decErr = err
				return false
			}
			for _, r := range recs {
				if read >= q.budget {
					over = bad("grouping reads every matching record and this range holds more than the scan budget of %d records (ScanBudget): narrow from/to or the filter", q.budget)
					return false
				}
				if meter.Units >= q.work {
					over = bad("grouping reads every matching record and its filters spent the work budget of %d units (WorkBudget): narrow from/to or simplify the filters", q.work)
					return false
				}
				read++
				if r.t.Before(q.From) || !r.t.Before(q.To) {
					continue
				}
				if q.Filter == nil || q.Filter.eval(r.rec, &meter) {
					g.add(groups, q.From, r.t, r.rec, &meter)
				}
			}
			return true
		})
		if err != nil {
			if ctx.Err() == nil && scanCtx.Err() != nil {
				return nil, timeUp()
			}
			return nil, err
		}
		if decErr != nil {
			return nil, decErr
		}
		if over != nil {
			return nil, over
		}
	}
	return &Result{Groups: g.rows(groups), Examined: read, Work: meter.Units}, nil
}

func (g *Grouping) add(groups map[string]*groupAcc, from, t time.Time, rec Record, m *Meter) {
	var base []any
	if g.Interval > 0 {
		start := from.Add(t.Sub(from) / g.Interval * g.Interval)
		base = append(base, start.UTC().Format(time.RFC3339Nano))
	}
	if g.Attr != "" {
		base = append(base, jsonValue(rec[g.Attr]))
	}
	if len(g.Filters) == 0 {
		g.fold(groups, base, rec)
		return
	}
	matchedAny := false
	for _, f := range g.Filters {
		if f.other {
			if !matchedAny {
				g.fold(groups, append(slices.Clip(base), f.name), rec)
			}
			continue
		}
		if f.expr.eval(rec, m) {
			matchedAny = true
			g.fold(groups, append(slices.Clip(base), f.name), rec)
		}
	}
}

func (g *Grouping) fold(groups map[string]*groupAcc, key []any, rec Record) {
	var b strings.Builder
	for _, k := range key {
		b.WriteString(render(k))
		b.WriteByte(0)
	}
	acc := groups[b.String()]
	if acc == nil {
		n := len(g.Selects)
		acc = &groupAcc{key: key, sum: make([]float64, n), n: make([]int, n), min: make([]float64, n), max: make([]float64, n)}
		groups[b.String()] = acc
	}
	acc.count++
	for i, a := range g.Selects {
		if a.fn == "count" {
			continue
		}
		v, ok := rec[a.attr].(float64)
		if !ok {
			continue
		}
		if acc.n[i] == 0 || v < acc.min[i] {
			acc.min[i] = v
		}
		if acc.n[i] == 0 || v > acc.max[i] {
			acc.max[i] = v
		}
		acc.sum[i] += v
		acc.n[i]++
	}
}

func (g *Grouping) rows(groups map[string]*groupAcc) [][]any {
	rows := make([][]any, 0, len(groups))
	for _, acc := range groups {
		row := slices.Clone(acc.key)
		for i, a := range g.Selects {
			switch {
			case a.fn == "count":
				row = append(row, float64(acc.count))
			case acc.n[i] == 0:
				row = append(row, nil)
			case a.fn == "sum":
				row = append(row, acc.sum[i])
			case a.fn == "min":
				row = append(row, acc.min[i])
			case a.fn == "max":
				row = append(row, acc.max[i])
			default:
				row = append(row, acc.sum[i]/float64(acc.n[i]))
			}
		}
		rows = append(rows, row)
	}
	nkey := len(g.Fields) - len(g.Selects)
	slices.SortFunc(rows, func(a, b []any) int {
		for _, o := range g.Order {
			c := compareValues(a[o.col], b[o.col])
			if o.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		for i := range nkey { // then by key, ascending: a stable answer
			if c := compareValues(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	if len(rows) > g.Limit {
		rows = rows[:g.Limit]
	}
	return rows
}

// compareValues orders nil first, then numbers, then text.
func compareValues(a, b any) int {
	af, aNum := a.(float64)
	bf, bNum := b.(float64)
	switch {
	case a == nil || b == nil:
		return cmp.Compare(boolInt(a != nil), boolInt(b != nil))
	case aNum && bNum:
		return cmp.Compare(af, bf)
	case aNum != bNum:
		return cmp.Compare(boolInt(!aNum), boolInt(!bNum))
	}
	return strings.Compare(render(a), render(b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// jsonValue is a record value as it appears in a JSON result.
func jsonValue(v any) any {
	if l, ok := v.([]string); ok {
		return strings.Join(l, ",")
	}
	return v
}
