package metrics

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fastjson"

	"cads/shared/domain"
)

// Event is the message an address-set change puts on the metrics queue:
// the counts it changed, for the set and its account. Its ID names the
// outbox item written in the same transaction as the change; the
// aggregator folds the event and deletes that item in one transaction, so
// an event counts once however often it is sent.
type Event struct {
	ID      string   `json:"event"`
	Account string   `json:"account"`
	Set     string   `json:"set"`
	Changes []Change `json:"changes"`
	// Purge asks the aggregator to remove what is left of a deleted set's
	// partition (its entries, when the DELETE request did not finish).
	Purge bool `json:"purge,omitempty"`
}

// Change is one count of an event: n entries added, extended, expired or
// deleted at time t.
type Change struct {
	Metric string    `json:"metric"`
	Time   time.Time `json:"time"`
	N      int64     `json:"n"`
}

// Wake asks the aggregator to run the address-expiry sweep at At; it is
// sent with an SQS delay (at most 15 minutes) and sent on again until At
// has come.
type Wake struct {
	At time.Time `json:"wake"`
}

var eventCounters = map[string]Counter{
	"entries_added": CEntriesAdded, "entries_extended": CEntriesExtended,
	"entries_expired": CEntriesExpired, "entries_deleted": CEntriesDeleted,
}

type messageKind int

const (
	kindIngest messageKind = iota
	kindEvent
	kindWake
)

// message is a decoded message of the metrics queue; records of an ingest
// batch are handed to decode's callback instead (they live only as long
// as the parser's buffer).
type message struct {
	kind  messageKind
	batch string
	event Event
	wake  time.Time
}

// decode reads one message of the metrics queue. Ingest batches, by far
// the most, are parsed with fastjson in one pass without reflection, which
// is what keeps folding above 100,000 records per second per core (docs/
// metrics.md); events and wake-ups are small and use encoding/json.
func decode(p *fastjson.Parser, body string, each func(*inRecord)) (message, error) {
	var m message
	v, err := p.Parse(body)
	if err != nil {
		return m, fmt.Errorf("not a metrics message: %w", err)
	}
	o, err := v.Object()
	if err != nil {
		return m, fmt.Errorf("not a metrics message: a JSON object is expected")
	}
	switch {
	case o.Get("event") != nil:
		if err := json.Unmarshal([]byte(body), &m.event); err != nil {
			return m, fmt.Errorf("event: %w", err)
		}
		e := m.event
		if e.ID == "" || e.Account == "" || e.Set == "" {
			return m, fmt.Errorf("event %q: event, account and set are required", e.ID)
		}
		for _, c := range e.Changes {
			if _, ok := eventCounters[c.Metric]; !ok {
				return m, fmt.Errorf("event %s: unknown metric %q", e.ID, c.Metric)
			}
		}
		m.kind = kindEvent
		return m, nil
	case o.Get("wake") != nil:
		var w Wake
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			return m, fmt.Errorf("wake-up: %w", err)
		}
		m.kind, m.wake = kindWake, w.At
		return m, nil
	}
	recs := o.Get("records")
	if recs == nil {
		return m, fmt.Errorf("not a metrics message: no records, event or wake")
	}
	arr, err := recs.Array()
	if err != nil {
		return m, fmt.Errorf("records must be an array")
	}
	if b := o.Get("batch"); b != nil {
		id, err := b.StringBytes()
		if err != nil || !validBatchID(id) {
			return m, fmt.Errorf("batch id %s: want 1-64 characters of [A-Za-z0-9_-]", domain.Clip(b.String(), 80))
		}
		m.batch = string(id)
	}
	m.kind = kindIngest
	var r inRecord
	for _, rv := range arr {
		r.reset()
		ro, err := rv.Object()
		if err != nil {
			r.Type = []byte("not-an-object") // counted as skipped
		} else {
			r.fill(ro)
		}
		each(&r)
	}
	return m, nil
}

func validBatchID(s []byte) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// EncodeEvent renders an event as its message body.
func EncodeEvent(e Event) string {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("encode event: %v", err)) // plain data always marshals
	}
	return string(b)
}

// EncodeWake renders a wake-up message.
func EncodeWake(at time.Time) string {
	b, _ := json.Marshal(Wake{At: at.UTC()})
	return string(b)
}
