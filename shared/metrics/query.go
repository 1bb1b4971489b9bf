package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"cads/shared/domain"
	"cads/shared/jsontext"
	"cads/shared/store"
)

// Bounds of one query: the points returned per metric, and the chunk items
// read (10 BatchGetItem calls of 100, made in parallel).
const (
	MaxPoints = 10000
	// MaxResponsePoints bounds the points of one response, over all the
	// metrics it names (a map metric's point holds up to a few hundred
	// keys, so the response byte budget applies too).
	MaxResponsePoints = 100000
	// MaxResolution is the coarsest resolution, ten years: any range is
	// at most one point at it, and range arithmetic on it cannot overflow.
	MaxResolution = 10 * 366 * 86400
	MaxChunks     = 1000
	// defaultPoints is what the default resolution aims at.
	defaultPoints = 360
	// DefaultSpan is the range when neither from nor to is given.
	DefaultSpan = time.Hour
)

// defaultResolutions are tried in order when the query names none.
var defaultResolutions = []int64{10, 60, 300, 600, 1800, 3600, 21600, 86400, 604800}

// Query is a validated metrics request.
type Query struct {
	Defs       []*Definition
	From, To   time.Time
	Resolution int64 // seconds; 0 with Summarize or when defaulted
	Summarize  bool
}

// ParseQuery reads names, from, to, resolution and summarize
// (docs/api.md#metrics). Its errors are fit for a 400 and name the
// offending parameter. Other parameters are ignored.
func ParseQuery(q url.Values, f Family, now time.Time) (Query, error) {
	var out Query
	defs, err := ParseNames(q["names"], f)
	if err != nil {
		return out, err
	}
	out.Defs = defs
	out.To = now
	if s := q.Get("to"); s != "" {
		if out.To, err = parseParamTime("to", s); err != nil {
			return out, err
		}
	}
	out.From = out.To.Add(-DefaultSpan)
	if s := q.Get("from"); s != "" {
		if out.From, err = parseParamTime("from", s); err != nil {
			return out, err
		}
	}
	if !out.From.Before(out.To) {
		return out, fmt.Errorf("from (%s) must be before to (%s); from is inclusive, to exclusive", out.From.Format(time.RFC3339), out.To.Format(time.RFC3339))
	}
	if s := q.Get("summarize"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return out, fmt.Errorf("summarize must be true or false, not %q", domain.Clip(s, 32))
		}
		out.Summarize = b
	}
	if s := q.Get("resolution"); s != "" {
		if out.Summarize {
			return out, fmt.Errorf("resolution and summarize are mutually exclusive: send one of them")
		}
		r, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return out, fmt.Errorf("resolution must be a whole number of seconds, not %q", domain.Clip(s, 32))
		}
		if r < 5 {
			return out, fmt.Errorf("resolution must be at least 5 seconds, not %d", r)
		}
		if r > MaxResolution {
			return out, fmt.Errorf("resolution must be at most %d seconds (MaxResolution, ten years), not %d", MaxResolution, r)
		}
		if r%FinestBucket != 0 {
			return out, fmt.Errorf("resolution must be a multiple of %d seconds (the finest stored bucket), not %d", FinestBucket, r)
		}
		out.Resolution = r
	}
	return out, nil
}

func parseParamTime(name, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s must be an RFC 3339 timestamp such as 2026-05-01T00:00:00Z, not %q", name, domain.Clip(s, 64))
	}
	if t.Year() < 2000 || t.Year() > 9999 {
		return time.Time{}, fmt.Errorf("%s is out of range: %q", name, domain.Clip(s, 64))
	}
	return t.UTC(), nil
}

// segment is a range [Start, End) read from one tier.
type segment struct {
	tier       int
	start, end int64
}

// Plan is how a query is answered: the aligned range, the response's
// bucket size, and the tier segments to read.
type Plan struct {
	From, To   int64 // unix seconds, aligned
	Resolution int64 // seconds per point (the whole range when summarizing)
	Points     int
	Summarize  bool
	segments   []segment
}

// Plan chooses the tiers. With a resolution, one tier: the coarsest whose
// bucket divides the resolution and still holds data for from; from is
// rounded down to that bucket and to up to a whole number of points. To
// summarize, the range is covered with the coarsest buckets that fit it
// exactly (finer ones only at its edges); from is rounded down and to up
// to the finest tier that still holds them.
func (q Query) Plan(now time.Time) (Plan, error) {
	from, to := q.From.Unix(), ceilUnix(q.To)
	if q.Summarize {
		return summarizePlan(from, to, now)
	}
	res := q.Resolution
	if res == 0 {
		res = defaultResolution(from, to, now)
	}
	ti := -1
	for i := len(Tiers) - 1; i >= 0; i-- {
		t := Tiers[i]
		if res%t.Bucket == 0 && t.Retains(floorTo(from, t.Bucket), now) {
			ti = i
			break
		}
	}
	if ti < 0 {
		keep := finestRetaining(from, now)
		return Plan{}, fmt.Errorf("resolution: data from %s is kept only in buckets of %d seconds; use a multiple of %d",
			time.Unix(from, 0).UTC().Format(time.RFC3339), Tiers[keep].Bucket, Tiers[keep].Bucket)
	}
	t := Tiers[ti]
	start := floorTo(from, t.Bucket)
	// Checked so that no operand can overflow: times are years 2000-9999
	// (about 2.5e11 seconds) and res at most MaxResolution, but a plan is
	// never trusted to have come through ParseQuery.
	if res <= 0 || res > MaxResolution || to <= start {
		return Plan{}, fmt.Errorf("resolution: %d seconds is outside 5 to %d (MaxResolution)", res, MaxResolution)
	}
	points := (to-start-1)/res + 1
	if points > MaxPoints {
		return Plan{}, fmt.Errorf("resolution: %d points per metric; at most %d are returned (MaxPoints): use a larger resolution or a shorter range", points, MaxPoints)
	}
	if total := points * int64(len(q.Defs)); total > MaxResponsePoints {
		return Plan{}, fmt.Errorf("resolution: %d points for %d metrics; at most %d per response (MaxResponsePoints): ask for fewer names, a larger resolution or a shorter range", total, len(q.Defs), MaxResponsePoints)
	}
	p := Plan{From: start, To: start + points*res, Resolution: res, Points: int(points)}
	p.segments = []segment{{tier: ti, start: p.From, end: p.To}}
	if n := p.chunkCount(); n > MaxChunks {
		return Plan{}, fmt.Errorf("resolution: this range and resolution read %d stored items (at most %d, MaxChunks): use a larger resolution or a shorter range", n, MaxChunks)
	}
	return p, nil
}

func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func defaultResolution(from, to int64, now time.Time) int64 {
	span := to - from
	for _, r := range defaultResolutions {
		if (span+r-1)/r > defaultPoints {
			continue
		}
		for _, t := range Tiers {
			if r%t.Bucket == 0 && t.Retains(floorTo(from, t.Bucket), now) {
				return r
			}
		}
	}
	// Too long for defaultPoints: days, which every range can be read at.
	return max(86400, ((span/MaxPoints)/86400+1)*86400)
}

// finestRetaining is the finest tier that still holds second sec.
func finestRetaining(sec int64, now time.Time) int {
	for i, t := range Tiers {
		if t.Retains(floorTo(sec, t.Bucket), now) {
			return i
		}
	}
	return len(Tiers) - 1
}

func summarizePlan(from, to int64, now time.Time) (Plan, error) {
	start := floorTo(from, Tiers[finestRetaining(from, now)].Bucket)
	end := ceilTo(to, Tiers[finestRetaining(to, now)].Bucket)
	p := Plan{From: start, To: end, Resolution: end - start, Points: 1, Summarize: true}
	p.segments = cover(start, end, len(Tiers)-1, now)
	if n := p.chunkCount(); n > MaxChunks {
		return Plan{}, fmt.Errorf("from/to: summarizing this range reads %d stored items (at most %d, MaxChunks): shorten the range", n, MaxChunks)
	}
	return p, nil
}

// cover splits [a, z) into segments of the coarsest tiers (index at most
// top) that fit it exactly and still hold the data.
func cover(a, z int64, top int, now time.Time) []segment {
	if a >= z {
		return nil
	}
	for i := top; i >= 0; i-- {
		t := Tiers[i]
		s, e := ceilTo(a, t.Bucket), floorTo(z, t.Bucket)
		if s < e && t.Retains(s, now) {
			out := cover(a, s, i-1, now)
			out = append(out, segment{tier: i, start: s, end: e})
			return append(out, cover(e, z, i-1, now)...)
		}
	}
	// a and z are aligned to a tier that holds them, so this is not
	// reached; cover the rest with the finest tier rather than drop it.
	return []segment{{tier: 0, start: a, end: z}}
}

func (p Plan) chunkCount() int {
	n := 0
	for _, s := range p.segments {
		t := Tiers[s.tier]
		span := t.Bucket * t.PerChunk
		n += int((t.Chunk(s.end-1)-t.Chunk(s.start))/span) + 1
	}
	return n
}

// Keys lists the chunk items the plan reads for a scope: every write
// shard of every chunk (Evaluate sums them).
func (p Plan) Keys(scope string) []store.MetricChunkKey {
	var out []store.MetricChunkKey
	seen := map[store.MetricChunkKey]bool{}
	shards := shardsOf(scope)
	for _, s := range p.segments {
		t := Tiers[s.tier]
		span := t.Bucket * t.PerChunk
		for c := t.Chunk(s.start); c < s.end; c += span {
			k := store.MetricChunkKey{Scope: scope, Tier: t.Name, Start: c}
			if seen[k] {
				continue
			}
			seen[k] = true
			for sh := range shards {
				k.Shard = sh
				out = append(out, k)
			}
		}
	}
	return out
}

// Result is the Metrics body of docs/api.md#metrics: per metric an
// array with one value per point, or one value when summarized; values are
// numbers, or objects for distributions.
type Result struct {
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	Resolution int64     `json:"resolution"`
	Metrics    Values    `json:"metrics"`
}

// Values keeps the metrics in the order the query named them.
type Values struct {
	Names  []string
	Values []any
}

// MarshalJSON writes the metrics as an object whose keys are in order.
func (v Values) MarshalJSON() ([]byte, error) {
	return jsontext.MarshalObject(v.Names, v.Values)
}

// UnmarshalJSON reads the object back (clients and tests), in key order.
func (v *Values) UnmarshalJSON(data []byte) error {
	*v = Values{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("metrics: want an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var val any
		if err := dec.Decode(&val); err != nil {
			return err
		}
		v.Names = append(v.Names, t.(string))
		v.Values = append(v.Values, val)
	}
	_, err := dec.Token()
	return err
}

// Get returns the value of a metric.
func (v Values) Get(name string) (any, bool) {
	for i, n := range v.Names {
		if n == name {
			return v.Values[i], true
		}
	}
	return nil, false
}

// Evaluate computes the result from the chunks read for the plan.
func (p Plan) Evaluate(defs []*Definition, chunks map[store.MetricChunkKey]map[string]int64) Result {
	points := make([]Bucket, p.Points)
	for _, s := range p.segments {
		t := Tiers[s.tier]
		for k, attrs := range chunks {
			if k.Tier != t.Name || k.Start+t.Bucket*t.PerChunk <= s.start || k.Start >= s.end {
				continue
			}
			for name, v := range attrs {
				off, c, d, key, isDist, ok := parseAttr(name)
				if !ok || int64(off) >= t.PerChunk {
					continue
				}
				sec := k.Start + int64(off)*t.Bucket
				if sec < s.start || sec >= s.end {
					continue
				}
				i := 0
				if !p.Summarize {
					i = int((sec - p.From) / p.Resolution)
				}
				b := &points[i]
				if isDist {
					if b.D[d] == nil {
						b.D[d] = map[string]int64{}
					}
					b.D[d][key] += v
				} else {
					b.C[c] += v
				}
			}
		}
	}
	r := Result{From: time.Unix(p.From, 0).UTC(), To: time.Unix(p.To, 0).UTC(), Resolution: p.Resolution}
	for _, d := range defs {
		r.Metrics.Names = append(r.Metrics.Names, d.Name)
		if p.Summarize {
			r.Metrics.Values = append(r.Metrics.Values, d.Value(&points[0], p.Resolution))
			continue
		}
		vals := make([]any, len(points))
		for i := range points {
			vals[i] = d.Value(&points[i], p.Resolution)
		}
		r.Metrics.Values = append(r.Metrics.Values, vals)
	}
	return r
}
