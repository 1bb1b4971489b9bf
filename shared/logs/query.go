package logs

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cads/shared/store"
)

// Limits of one query (docs/logs.md).
const (
	DefaultLimit  = 100
	MaxJSONLimit  = 200
	MaxCSVLimit   = 10000
	DefaultSpan   = 24 * time.Hour
	MaxPartitions = 31 * 24 // a month of hourly partitions
	// ScanBudget is the most records one query reads, matching or not:
	// past it the query is refused rather than left to run long.
	ScanBudget = 20000
)

// Query is a parsed GET /v2/applications/{id}/logs.
type Query struct {
	Schema   *Schema
	From, To time.Time
	Fields   []string
	CSV      bool
	Filter   Expr // nil: every record
	Start    int  // 1-based
	Limit    int
	Desc     bool
	Group    *Grouping // nil: no grouping
	// budget is ScanBudget; tests lower it.
	budget int
}

// BadQuery is a query parameter the client got wrong.
type BadQuery struct{ Msg string }

func (e *BadQuery) Error() string { return e.Msg }

func bad(format string, args ...any) error { return &BadQuery{fmt.Sprintf(format, args...)} }

// ParseQuery validates the query string against the spec and the limits.
func ParseQuery(q url.Values, now time.Time) (*Query, error) {
	for k, v := range q {
		if len(v) > 1 {
			return nil, bad("%s: given more than once", k)
		}
	}
	typ := q.Get("type")
	if typ == "" {
		typ = TypeAccess
	}
	s, ok := SchemaOf(typ)
	if !ok {
		return nil, bad("type: %q is not one of %s", typ, strings.Join(Types(), ", "))
	}
	out := &Query{Schema: s, Start: 1, Limit: DefaultLimit, budget: ScanBudget}

	out.To = now
	if v := q.Get("to"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, bad("to: %q is not an RFC 3339 time", v)
		}
		out.To = t.UTC()
	}
	out.From = out.To.Add(-DefaultSpan)
	if v := q.Get("from"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, bad("from: %q is not an RFC 3339 time", v)
		}
		out.From = t.UTC()
	}
	// Stored times have millisecond precision.
	out.From, out.To = out.From.Truncate(time.Millisecond), out.To.Truncate(time.Millisecond)
	if !out.From.Before(out.To) {
		return nil, bad("from must be before to")
	}
	if n := len(partitions(out.From, out.To, false)); n > MaxPartitions {
		return nil, bad("from-to spans %d hours; at most %d per query", n, MaxPartitions)
	}

	out.Fields = s.Names()
	if v, ok := q["select"]; ok {
		out.Fields = nil
		for _, name := range strings.Split(v[0], ",") {
			name = strings.TrimSpace(name)
			if _, ok := s.Field(name); !ok {
				return nil, bad("select: unknown field %q for %s logs", name, typ)
			}
			out.Fields = append(out.Fields, name)
		}
	}

	switch f := q.Get("format"); f {
	case "", "json":
	case "csv":
		out.CSV = true
	default:
		return nil, bad("format: %q is not json or csv", f)
	}

	if v := q.Get("filter"); strings.TrimSpace(v) != "" {
		e, err := ParseFilter(v, s)
		if err != nil {
			return nil, bad("%s", err.Error())
		}
		out.Filter = e
	}

	var err error
	if out.Start, err = intParam(q, "start", 1, 1, ScanBudget); err != nil {
		return nil, err
	}
	maxLimit := MaxJSONLimit
	if out.CSV {
		maxLimit = MaxCSVLimit
	}
	if out.Limit, err = intParam(q, "limit", DefaultLimit, 0, maxLimit); err != nil {
		return nil, err
	}

	if v := q.Get("order"); v != "" {
		name, desc := v, false
		switch v[0] {
		case '-':
			name, desc = v[1:], true
		case '+':
			name = v[1:]
		}
		if name != s.TimeField {
			return nil, bad("order: records are stored in time order and can be ordered only by %s or -%s", s.TimeField, s.TimeField)
		}
		out.Desc = desc
	}

	if out.Group, err = parseGrouping(q, out); err != nil {
		return nil, err
	}
	return out, nil
}

func intParam(q url.Values, name string, def, min, max int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, bad("%s: %q is not an integer from %d to %d", name, v, min, max)
	}
	return n, nil
}

// partitions lists the hours [from, to) touches, in reading order.
func partitions(from, to time.Time, desc bool) []time.Time {
	var out []time.Time
	last := to.Add(-time.Millisecond).Truncate(store.LogPartitionSpan)
	for h := from.Truncate(store.LogPartitionSpan); !h.After(last); h = h.Add(store.LogPartitionSpan) {
		out = append(out, h)
		if len(out) > MaxPartitions {
			break
		}
	}
	if desc {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// ScanStore is what queries read.
type ScanStore interface {
	LogHours(ctx context.Context, app, typ string, from, to time.Time) ([]time.Time, error)
	ScanLogs(ctx context.Context, r store.LogRange, yield func(store.LogItem) bool) error
}

// filled is the set of hours (unix seconds of their start) of a query's
// range that received records, from the hour index.
type filled map[int64]bool

// filledHours reads the hour index for the query's range: one Query,
// whatever the range's length.
func (q *Query) filledHours(ctx context.Context, st ScanStore, app string) (filled, error) {
	hs, err := st.LogHours(ctx, app, q.Schema.Type, q.From, q.To)
	if err != nil {
		return nil, err
	}
	out := make(filled, len(hs))
	for _, h := range hs {
		out[h.Unix()] = true
	}
	return out, nil
}

// walk lists the partitions to read, in reading order: those of the range
// that the index names. An empty hour costs nothing.
func (q *Query) walk(f filled, desc bool) []time.Time {
	var out []time.Time
	for _, h := range partitions(q.From, q.To, desc) {
		if f[h.Unix()] {
			out = append(out, h)
		}
	}
	return out
}

// Result is a query's answer before rendering.
type Result struct {
	Records []Record
	More    bool // a matching record follows the last one returned
	Groups  [][]any
}

// chunkPage is the chunks one Query call asks for: a chunk holds up to a
// message's records (about 150 access records), so a few cover most pages
// and a query that needs few records reads few.
const chunkPage = 8

// Run executes the query: the hour index, then the partitions it names in
// time order, each read page by page, stopping once it holds
// start-1+limit matching records and knows whether one more exists, or at
// the scan budget.
func (q *Query) Run(ctx context.Context, st ScanStore, app string) (*Result, error) {
	f, err := q.filledHours(ctx, st, app)
	if err != nil {
		return nil, err
	}
	return q.run(ctx, st, app, f)
}

// run is Run once the hour index is read.
func (q *Query) run(ctx context.Context, st ScanStore, app string, f filled) (*Result, error) {
	if q.Group != nil {
		return q.runGroups(ctx, st, app, f)
	}
	skip := q.Start - 1
	want := skip + q.Limit + 1 // one more than returned: is there a next page?
	var (
		res     Result
		matched int
		read    int
		decErr  error
		over    bool
	)
	for _, h := range q.walk(f, q.Desc) {
		// A chunk holds many records: a few items per page suffice.
		page := chunkPage
		// From the partition's start: a chunk that starts before from may
		// hold records after it.
		err := st.ScanLogs(ctx, store.LogRange{App: app, Type: q.Schema.Type, Hour: h, From: h, To: q.To, Desc: q.Desc, PageSize: page}, func(it store.LogItem) bool {
			recs, err := decodeChunk(it, q.Desc)
			if err != nil {
				decErr = err
				return false
			}
			for _, r := range recs {
				if read >= q.budget {
					over = true
					return false
				}
				read++
				if r.t.Before(q.From) || !r.t.Before(q.To) {
					continue
				}
				if q.Filter != nil && !q.Filter.Match(r.rec) {
					continue
				}
				matched++
				if matched > skip && len(res.Records) < q.Limit {
					res.Records = append(res.Records, r.rec)
				} else if matched > skip+q.Limit {
					res.More = true
					return false
				}
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		if decErr != nil {
			return nil, decErr
		}
		if matched >= want {
			return &res, nil
		}
		if over {
			return nil, bad("the query read %d records, its scan budget, before finding the records asked for: narrow from/to or the filter, or lower start", q.budget)
		}
	}
	return &res, nil
}
