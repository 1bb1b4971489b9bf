package logs

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/metrics"
)

// maxFuture is how far ahead of the clock a record's time may be: clocks
// at the edge drift, but a record far in the future is a bad clock.
const maxFuture = time.Hour

// Ingester stores the log records of the edge's ingest batches (the same
// messages the metrics aggregator folds, docs/metrics.md).
type Ingester struct {
	st      PutStore
	log     *slog.Logger
	parsers fastjson.ParserPool
}

// NewIngester returns an Ingester writing to st.
func NewIngester(st PutStore, log *slog.Logger) *Ingester {
	return &Ingester{st: st, log: log}
}

// IngestLogs stores the log records of ingest messages, and their hours in
// the hour index, in one parallel round (BatchWriteItem of the chunks
// beside an UpdateItem per application, type and day). A message's batch
// id makes record ids stable, so a batch delivered twice writes the same
// items again (and adds hours already there). Records that are not logs
// (sessions, address) or invalid are skipped, as the fold skips them; an
// error means nothing can be assumed written and the messages should be
// retried.
func (in *Ingester) IngestLogs(ctx context.Context, msgs []metrics.LogMessage) error {
	p := in.parsers.Get()
	defer in.parsers.Put(p)
	now := in.st.Now()
	var items []domain.LogItem
	for _, m := range msgs {
		v, err := p.Parse(m.Body)
		if err != nil {
			in.log.WarnContext(ctx, "ingest message is not JSON; no log records", "batch", m.Batch)
			continue
		}
		var recs []pending
		for i, o := range v.GetArray("records") {
			r, ok := ingestRecord(o, now)
			if !ok {
				continue
			}
			r.id = recordID(m.Batch, strconv.Itoa(i))
			recs = append(recs, r)
		}
		chunks, err := chunkItems(recs, func(partition string, n int) string {
			return recordID(m.Batch, partition+"#"+strconv.Itoa(n))
		})
		if err != nil {
			return err
		}
		items = append(items, chunks...)
	}
	return putChunks(ctx, in.st, items)
}

func ingestRecord(o *fastjson.Value, now time.Time) (pending, bool) {
	if o.Type() != fastjson.TypeObject {
		return pending{}, false
	}
	typ, ok := ingestTypes[string(o.GetStringBytes("type"))]
	if !ok {
		return pending{}, false
	}
	app := string(o.GetStringBytes("app"))
	if !ids.Valid(app) {
		return pending{}, false
	}
	s := schemas[typ]
	t, ok := recordTime(string(o.GetStringBytes(s.TimeField)), now)
	if !ok {
		return pending{}, false
	}
	rec := Record{}
	for _, f := range s.Fields {
		fv := o.Get(f.Name)
		if fv == nil {
			continue
		}
		if x, ok := fromFastJSON(f.Kind, fv); ok {
			rec[f.Name] = x
		}
	}
	return pending{app: app, typ: typ, t: t, rec: rec}, true
}

// recordTime reads a record's time; records older than the retention or
// too far in the future are refused.
func recordTime(s string, now time.Time) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	t = t.UTC()
	if t.After(now.Add(maxFuture)) || t.Before(now.Add(-Retention)) {
		return time.Time{}, false
	}
	return t, true
}

// fromFastJSON converts a value of the field's kind; a value of the wrong
// JSON type reads as absent, as in the metrics.
func fromFastJSON(k Kind, v *fastjson.Value) (any, bool) {
	switch k {
	case KindNumber:
		f, err := v.Float64()
		return f, err == nil
	case KindList:
		arr, err := v.Array()
		if err != nil {
			return nil, false
		}
		out := make([]string, 0, len(arr))
		for _, e := range arr {
			if b, err := e.StringBytes(); err == nil {
				out = append(out, string(b))
			}
		}
		return out, len(out) > 0
	default:
		b, err := v.StringBytes()
		return string(b), err == nil && len(b) > 0
	}
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// recordID is a stable id for a part of a batch: its records and chunks
// are written with the same ids however often the batch comes.
func recordID(batch, part string) string {
	h := sha256.Sum256([]byte(batch + "#" + part))
	return strings.ToLower(idEncoding.EncodeToString(h[:10]))
}
