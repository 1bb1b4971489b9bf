package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"cads/shared/loadgen"
	"cads/shared/metrics"
)

// RecordSink takes ingest messages to the logs and metrics pipeline (the
// metrics queue, docs/metrics.md).
type RecordSink interface {
	Send(ctx context.Context, bodies ...string) error
}

// recordsPerMessage bounds one ingest message: at a few hundred bytes a
// record, some tens of KB, far below SQS's message size limit.
const recordsPerMessage = 100

// emitBuffer is how many records may wait for the sender before the
// virtual users have to wait for it.
const emitBuffer = 4096

// RecordCount says how many of a run's access records reached the
// pipeline.
type RecordCount struct {
	Sent   int `json:"sent"`
	Failed int `json:"failed"`
}

// emitter turns a run's requests into access records of the target
// application, tagged with the run's load id, and sends them in batches
// whose ids derive from the load id, so a re-sent batch is folded once.
type emitter struct {
	ctx         context.Context
	sink        RecordSink
	app, loadID string
	log         *slog.Logger
	ch          chan metrics.Record
	done        chan struct{}
	seq         int
	count       RecordCount
}

func newEmitter(ctx context.Context, sink RecordSink, app, loadID string, log *slog.Logger) *emitter {
	e := &emitter{ctx: ctx, sink: sink, app: app, loadID: loadID, log: log, ch: make(chan metrics.Record, emitBuffer), done: make(chan struct{})}
	go e.run()
	return e
}

// observe is the plan's Observe: it may be called from many goroutines.
func (e *emitter) observe(s loadgen.Sample) {
	r := metrics.Record{
		Type: metrics.TypeAccess, App: e.app, LoadID: e.loadID,
		Arrival:       s.Arrival.UTC().Format(time.RFC3339Nano),
		Completed:     s.Arrival.Add(s.Elapsed).UTC().Format(time.RFC3339Nano),
		Elapsed:       ms(s.Elapsed),
		TTFB:          ms(s.TTFB),
		BytesOut:      s.ResponseBytes,
		RequestMethod: s.Method,
		RequestURL:    s.URL,
		StatusCode:    s.Status,
		Useragent:     s.UserAgent,
	}
	if u, err := url.Parse(s.URL); err == nil {
		r.RequestHost, r.RequestPath, r.RequestQuery = u.Hostname(), u.EscapedPath(), u.RawQuery
		if p, err := strconv.Atoi(u.Port()); err == nil {
			r.RequestPort = p
		}
	}
	if s.Status != 0 {
		r.DeliveryStatus, r.StatusCodeAndURL = "delivered", strconv.Itoa(s.Status)+" "+s.URL
	} else {
		r.DeliveryStatus = "error"
	}
	e.ch <- r
}

func (e *emitter) run() {
	defer close(e.done)
	buf := make([]metrics.Record, 0, recordsPerMessage)
	for r := range e.ch {
		buf = append(buf, r)
		if len(buf) == recordsPerMessage {
			e.flush(buf)
			buf = buf[:0]
		}
	}
	e.flush(buf)
}

func (e *emitter) flush(recs []metrics.Record) {
	if len(recs) == 0 {
		return
	}
	e.seq++
	body, err := json.Marshal(metrics.Message{Batch: fmt.Sprintf("%s-%d", e.loadID, e.seq), Records: recs})
	if err == nil {
		err = e.sink.Send(e.ctx, string(body))
	}
	if err != nil {
		e.count.Failed += len(recs)
		e.log.WarnContext(e.ctx, "access records of a test run not sent", "load_id", e.loadID, "records", len(recs), "error", err.Error())
		return
	}
	e.count.Sent += len(recs)
}

// close sends what is left and reports the counts; observe must not be
// called any more.
func (e *emitter) close() RecordCount {
	close(e.ch)
	<-e.done
	return e.count
}
