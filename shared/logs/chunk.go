package logs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

// Records are stored in chunks: one item holds the records of one write
// (an ingest message, a POST) that fall into one partition, sorted by
// time, up to maxChunkBytes. An ingest message is at most 256 KiB (SQS),
// so it makes one item per partition it touches instead of one per
// record: a hundredth of the writes' request overhead and of the items a
// query pages through. A chunk's sort key is its first record's time, so
// chunks of one partition are read in the order of their first records;
// a query reads each partition of its range from the partition's start
// and drops the records outside [from, to).
const maxChunkBytes = 300 << 10

// pending is a record on its way into a chunk.
type pending struct {
	app, typ string
	t        time.Time
	id       string
	rec      Record
}

// entry is a record inside a chunk.
type entry struct {
	ID   string `json:"i"`
	Time string `json:"t"`
	Rec  Record `json:"r"`
}

// chunkItems groups records by partition (in the order partitions first
// appear), sorts each group by time (stable: equal times keep their
// order) and cuts it into items; chunkID names the n-th chunk of a
// partition.
func chunkItems(recs []pending, chunkID func(partition string, n int) string) ([]domain.LogItem, error) {
	groups := map[string][]pending{}
	var order []string
	for _, r := range recs {
		k := r.app + "#" + r.typ + "#" + r.t.Truncate(store.LogPartitionSpan).Format("2006010215")
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var items []domain.LogItem
	for _, k := range order {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b pending) int { return a.t.Compare(b.t) })
		var (
			buf   []byte
			first pending
			last  time.Time
			n     int
		)
		flush := func() {
			if len(buf) == 0 {
				return
			}
			buf = append(buf, ']')
			items = append(items, domain.LogItem{App: first.app, Type: first.typ, Time: first.t, ID: chunkID(k, n), Data: string(buf), TTL: expiry(last)})
			buf, n = nil, n+1
		}
		for _, r := range g {
			b, err := json.Marshal(entry{ID: r.id, Time: r.t.Format(time.RFC3339Nano), Rec: r.rec})
			if err != nil {
				return nil, fmt.Errorf("encode log record: %w", err)
			}
			if len(buf) > 0 && len(buf)+len(b)+2 > maxChunkBytes {
				flush()
			}
			if len(buf) == 0 {
				buf, first = append(buf, '['), r
			} else {
				buf = append(buf, ',')
			}
			buf, last = append(buf, b...), r.t
		}
		flush()
	}
	return items, nil
}

// expiry is the TTL (epoch seconds) of stored log data whose newest record
// is at t: t plus the retention. Chunks take their last record's time,
// hour index entries the end of their day (which outlives every chunk of
// the day).
func expiry(t time.Time) int64 { return t.Add(Retention).Unix() }

// PutStore is where records are written.
type PutStore interface {
	Now() time.Time
	PutLogs(ctx context.Context, recs []domain.LogItem, index []store.LogDay) error
}

// putChunks writes chunks and the hour index entries naming their hours,
// in one parallel round (store.PutLogs); any failure fails the whole write,
// to be retried whole.
func putChunks(ctx context.Context, st PutStore, items []domain.LogItem) error {
	if len(items) == 0 {
		return nil
	}
	return st.PutLogs(ctx, items, hourIndex(items))
}

// hourIndex lists, per application, type and UTC day of the chunks, the
// hours they fall into, in the order the days first appear.
func hourIndex(items []domain.LogItem) []store.LogDay {
	type dayKey struct {
		app, typ string
		day      int64
	}
	at := map[dayKey]int{}
	var out []store.LogDay
	for _, it := range items {
		h := it.Time.UTC().Truncate(store.LogPartitionSpan)
		day := h.Truncate(24 * time.Hour)
		k := dayKey{it.App, it.Type, day.Unix()}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, store.LogDay{App: it.App, Type: it.Type, Day: day, TTL: expiry(day.Add(24 * time.Hour))})
		}
		if n := int(h.Sub(day) / time.Hour); !slices.Contains(out[i].Hours, n) {
			out[i].Hours = append(out[i].Hours, n)
		}
	}
	return out
}

// stored is a record read back.
type stored struct {
	t   time.Time
	rec Record
}

// decodeChunk reads a chunk's records in time order (newest first with
// desc). Custom records show their id as the field id.
func decodeChunk(it domain.LogItem, desc bool) ([]stored, error) {
	var raw []struct {
		ID   string         `json:"i"`
		Time string         `json:"t"`
		Rec  map[string]any `json:"r"`
	}
	if err := json.Unmarshal([]byte(it.Data), &raw); err != nil {
		return nil, fmt.Errorf("decode log chunk %s: %w", it.ID, err)
	}
	out := make([]stored, 0, len(raw))
	for _, e := range raw {
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			return nil, fmt.Errorf("decode log chunk %s: %w", it.ID, err)
		}
		rec := make(Record, len(e.Rec)+1)
		for k, v := range e.Rec {
			if l, ok := v.([]any); ok {
				ss := make([]string, 0, len(l))
				for _, x := range l {
					if s, ok := x.(string); ok {
						ss = append(ss, s)
					}
				}
				rec[k] = ss
				continue
			}
			rec[k] = v
		}
		if it.Type == TypeCustom {
			rec["id"] = e.ID
		}
		out = append(out, stored{t: t, rec: rec})
	}
	if desc {
		slices.Reverse(out)
	}
	return out, nil
}
