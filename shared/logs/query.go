package logs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/store"
)

// Limits of one query (docs/logs.md).
const (
	DefaultLimit  = 100
	MaxJSONLimit  = 200
	MaxCSVLimit   = 10000
	DefaultSpan   = 24 * time.Hour
	MaxPartitions = 31 * 24 // a month of hourly partitions
	// ScanBudget is the most records one query reads, matching or not.
	ScanBudget = 20000
	// WorkBudget bounds the filter work of one query (Meter units: bytes
	// a predicate reads times its cost per byte, a regular expression's
	// program size). About 7 ns of CPU a unit at worst
	// (BenchmarkRegexpWorkUnit): a few seconds of CPU.
	WorkBudget = 300_000_000
	// MaxQueryTime is the longest a query scans, well below API Gateway's
	// 29-second integration timeout; the request's own deadline (the
	// Lambda's), less deadlineMargin, applies when it is earlier.
	MaxQueryTime   = 10 * time.Second
	deadlineMargin = 2 * time.Second
	// ResponseBudget bounds a page's rows as they travel in the Lambda
	// response (jsontext.EnvelopeLen), less room for the document's frame.
	ResponseBudget = jsontext.ResponseBudget - 64<<10
)

// The budgets a cut names (the cut's "budget" field, docs/logs.md).
const (
	CutRecords = "scan_records"   // ScanBudget records read
	CutWork    = "scan_work"      // WorkBudget units spent
	CutTime    = "scan_time"      // MaxQueryTime or the request's deadline
	CutBytes   = "response_bytes" // ResponseBudget bytes of rows
)

// Query is a parsed GET /v2/applications/{id}/logs.
type Query struct {
	Schema   *Schema
	From, To time.Time
	Fields   []string
	CSV      bool
	// Arrays: JSON result rows are arrays in fields order (rows=arrays)
	// rather than objects keyed by field (docs/logs.md#responses).
	Arrays bool
	Filter Expr // nil: every record
	Start  int  // 1-based
	Limit  int
	Desc   bool
	Group  *Grouping // nil: no grouping
	Resume *Cursor   // nil: from the beginning
	// The budgets (ScanBudget, WorkBudget, MaxQueryTime, ResponseBudget);
	// tests lower them.
	budget     int
	work       int64
	timeLimit  time.Duration
	byteBudget int
	now        func() time.Time
}

// BadQuery is a query parameter the client got wrong.
type BadQuery struct{ Msg string }

func (e *BadQuery) Error() string { return e.Msg }

func bad(format string, args ...any) error { return &BadQuery{fmt.Sprintf(format, args...)} }

// ParseQuery validates the query string against the API's parameters and the limits.
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
	out := &Query{Schema: s, Start: 1, Limit: DefaultLimit, budget: ScanBudget, work: WorkBudget,
		timeLimit: MaxQueryTime, byteBudget: ResponseBudget, now: time.Now}

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

	switch v := q.Get("rows"); v {
	case "", RowsObjects:
	case RowsArrays:
		out.Arrays = true
	default:
		return nil, bad("rows: %q is not %s or %s", v, RowsObjects, RowsArrays)
	}
	if out.CSV && q.Has("rows") {
		return nil, bad("rows: applies to JSON only; CSV rows are lines")
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
	if v := q.Get("resume"); v != "" {
		if out.Group != nil {
			return nil, bad("resume: a grouped query is never cut, so it cannot resume")
		}
		if out.Resume, err = decodeCursor(v); err != nil {
			return nil, err
		}
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
	ScanLogs(ctx context.Context, r store.LogRange, yield func(domain.LogItem) bool) error
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
	// Cut is set when a budget stopped the query before it had its page.
	Cut *Cut
	// Examined and Work are what the query spent: records read and filter
	// work (Meter units).
	Examined int
	Work     int64
}

// Cut says which budget stopped a query and how to go on: the same query
// with From, To and Start returns the matching records that follow the
// ones this answer returned or skipped, none twice and none lost.
type Cut struct {
	Budget   string
	Limit    int64 // the budget's number (records, units, milliseconds, bytes)
	From, To time.Time
	Start    int
	Resume   Cursor
}

// chunkPage is the chunks one Query call asks for: a chunk holds up to a
// message's records (about 150 access records), so a few cover most pages
// and a query that needs few records reads few.
const chunkPage = 8

// Run executes the query: the hour index, then the partitions it names in
// time order, each read page by page, stopping once it holds
// start-1+limit matching records and knows whether one more exists, or at
// a budget.
func (q *Query) Run(ctx context.Context, st ScanStore, app string) (*Result, error) {
	f, err := q.filledHours(ctx, st, app)
	if err != nil {
		return nil, err
	}
	return q.run(ctx, st, app, f)
}

// stopAt is when a scan stops: MaxQueryTime from now, or the request's
// deadline less a margin to answer in, whichever is first.
func (q *Query) stopAt(ctx context.Context) time.Time {
	at := q.now().Add(q.timeLimit)
	if d, ok := ctx.Deadline(); ok && d.Add(-deadlineMargin).Before(at) {
		at = d.Add(-deadlineMargin)
	}
	return at
}

// rowCost is what one record adds to the response in the Lambda payload:
// its JSON row, or its CSV line, as jsontext.EnvelopeLen counts it.
func (q *Query) rowCost(rec Record) int {
	var b []byte
	if q.CSV {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		row := make([]string, len(q.Fields))
		for i, f := range q.Fields {
			row[i] = render(rec[f])
		}
		_ = w.Write(row)
		w.Flush()
		b = buf.Bytes()
	} else {
		b, _ = json.Marshal(q.jsonRow(q.Fields, row(q, rec)))
	}
	return jsontext.EnvelopeLen(b) + 1
}

// Cursor is where a cut query goes on: in the partition Hour, after the
// first Index records (in reading order) of the chunk whose sort key is
// (ChunkTime, Chunk); Chunk "" is the partition's beginning. Chunks are
// immutable and read in sort-key order, so resuming skips exactly what
// was examined, without examining it again.
type Cursor struct {
	Hour      time.Time
	ChunkTime time.Time
	Chunk     string
	Index     int
}

// Encode is the cursor as the resume parameter.
func (c Cursor) Encode() string {
	s := fmt.Sprintf("%d.%d.%s.%d", c.Hour.Unix(), c.ChunkTime.UnixMilli(), c.Chunk, c.Index)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func decodeCursor(v string) (*Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) > 200 {
		return nil, bad("resume: not a value this service gave")
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 4 {
		return nil, bad("resume: not a value this service gave")
	}
	h, e1 := strconv.ParseInt(parts[0], 10, 64)
	ms, e2 := strconv.ParseInt(parts[1], 10, 64)
	idx, e3 := strconv.Atoi(parts[3])
	if e1 != nil || e2 != nil || e3 != nil || idx < 0 || h%3600 != 0 || strings.ContainsAny(parts[2], "# ") {
		return nil, bad("resume: not a value this service gave")
	}
	return &Cursor{Hour: time.Unix(h, 0).UTC(), ChunkTime: time.UnixMilli(ms).UTC(), Chunk: parts[2], Index: idx}, nil
}

// before reports whether a chunk comes before the cursor's in reading
// order.
func (c *Cursor) before(it domain.LogItem, desc bool) bool {
	if c.Chunk == "" {
		return false
	}
	if x := it.Time.Compare(c.ChunkTime); x != 0 {
		return (x < 0) != desc
	}
	if x := strings.Compare(it.ID, c.Chunk); x != 0 {
		return (x < 0) != desc
	}
	return false
}

// skipHour reports whether partition h comes before the cursor's.
func (c *Cursor) skipHour(h time.Time, desc bool) bool {
	if desc {
		return h.After(c.Hour)
	}
	return h.Before(c.Hour)
}

// run is Run once the hour index is read.
//
// A budget reached before the page is complete cuts the query: the answer
// holds the records found so far and a continuation, the same query with
// a cursor at the first record not examined and start reduced by the
// matches already skipped.
func (q *Query) run(ctx context.Context, st ScanStore, app string, f filled) (*Result, error) {
	if q.Group != nil {
		return q.runGroups(ctx, st, app, f)
	}
	skip := q.Start - 1
	scanCtx, cancel := context.WithDeadline(ctx, q.stopAt(ctx))
	defer cancel()
	var (
		res     Result
		meter   Meter
		matched int
		size    int
		decErr  error
		pos     Cursor // the first record not examined
	)
	cut := func(budget string, limit int64) {
		res.Cut = &Cut{Budget: budget, Limit: limit, From: q.From, To: q.To, Start: skip - min(matched, skip) + 1, Resume: pos}
	}
	for _, h := range q.walk(f, q.Desc) {
		if q.Resume != nil && q.Resume.skipHour(h, q.Desc) {
			continue
		}
		pos = Cursor{Hour: h}
		if err := scanCtx.Err(); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			cut(CutTime, q.timeLimit.Milliseconds())
			break
		}
		resume := q.Resume
		if resume != nil && !resume.Hour.Equal(h) {
			resume = nil
		}
		// From the partition's start: a chunk that starts before from may
		// hold records after it.
		err := st.ScanLogs(scanCtx, store.LogRange{App: app, Type: q.Schema.Type, Hour: h, From: h, To: q.To, Desc: q.Desc, PageSize: chunkPage}, func(it domain.LogItem) bool {
			if resume != nil && resume.before(it, q.Desc) {
				return true
			}
			if scanCtx.Err() != nil {
				cut(CutTime, q.timeLimit.Milliseconds())
				return false
			}
			recs, err := decodeChunk(it, q.Desc)
			if err != nil {
				decErr = err
				return false
			}
			pos = Cursor{Hour: h, ChunkTime: it.Time, Chunk: it.ID}
			if resume != nil && resume.Chunk == it.ID && resume.ChunkTime.Equal(it.Time) {
				pos.Index = min(resume.Index, len(recs))
			}
			resume = nil
			for ; pos.Index < len(recs); pos.Index++ {
				r := recs[pos.Index]
				if res.Examined >= q.budget {
					cut(CutRecords, int64(q.budget))
					return false
				}
				if meter.Units >= q.work {
					cut(CutWork, q.work)
					return false
				}
				res.Examined++
				if r.t.Before(q.From) || !r.t.Before(q.To) {
					continue
				}
				if q.Filter != nil && !q.Filter.eval(r.rec, &meter) {
					continue
				}
				if matched >= skip+q.Limit {
					res.More = true
					return false
				}
				if matched >= skip {
					c := q.rowCost(r.rec)
					if size+c > q.byteBudget && len(res.Records) > 0 {
						// The response is full: this record starts the
						// next page.
						res.More = true
						cut(CutBytes, int64(q.byteBudget))
						return false
					}
					size += c
					res.Records = append(res.Records, r.rec)
				}
				matched++
			}
			return true
		})
		res.Work = meter.Units
		if err != nil {
			if ctx.Err() == nil && scanCtx.Err() != nil {
				// Our own deadline ended a read in flight.
				cut(CutTime, q.timeLimit.Milliseconds())
				return &res, nil
			}
			return nil, err
		}
		if decErr != nil {
			return nil, decErr
		}
		if res.More || res.Cut != nil {
			return &res, nil
		}
	}
	res.Work = meter.Units
	return &res, nil
}
