package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/store"
)

// The logs service: a query over an application's records and the ingest
// of custom records, each checking that the application is in the
// caller's account. The HTTP handlers (logsapi) read the requests and
// render the answers.

// Store is what the logs endpoints read and write.
type Store struct {
	Now  func() time.Time
	Logs interface {
		PutStore
		ScanStore
		ArchiveReadStore
	}
	Applications interface {
		GetApplication(ctx context.Context, account, id string) (domain.Application, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, Logs: st.Logs, Applications: st.Applications}
}

// owned checks that the application is in the account.
func owned(ctx context.Context, st Store, account, id string) error {
	if _, err := st.Applications.GetApplication(ctx, account, id); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Errorf(domain.NotFound, "no application %q", id)
		}
		return err
	}
	return nil
}

// RunQuery answers a log query over the records of an application of the
// account. The ownership check runs in parallel with the hour index read
// (which does not depend on it): an empty range costs one round trip. The
// partitions are read only once both are back, so records of another
// account's application are never read, at no added round trip (the
// partitions wait for the index anyway). A query a budget refuses is
// domain.Invalid.
func RunQuery(ctx context.Context, st Store, account, app string, q *Query) (*Result, error) {
	var (
		f    filled
		fErr error
		g    errgroup.Group // both answers are needed to choose the error
	)
	g.Go(func() error { return owned(ctx, st, account, app) })
	g.Go(func() error { f, fErr = q.filledHours(ctx, st.Logs, app); return nil })
	if oErr := g.Wait(); oErr != nil {
		return nil, oErr
	}
	if fErr != nil {
		return nil, fErr
	}
	res, runErr := q.run(ctx, st.Logs, app, f)
	if runErr != nil {
		var bq *BadQuery
		if errors.As(runErr, &bq) {
			return nil, domain.Errorf(domain.Invalid, "%s", bq.Msg)
		}
		return nil, runErr
	}
	return res, nil
}

// Custom log limits (docs/logs.md). The body limit is the API's JSON body
// limit (apigw.MaxJSONBody, 413 past it).
const (
	MaxCustomRecords = 100
	maxMessageBytes  = 32 << 10
	maxShortField    = 1024
)

// MessageText is the one exception to the text rule: a record's message
// is free text from a program's output, which may run over lines and
// indent with tabs. Every other field stays single-line text.
var MessageText = jsontext.AllowTabNewline("message", "[*].message")

// CustomLog is one record of POST /v2/applications/{id}/logs (LogPost).
type CustomLog struct {
	Created  *string `json:"created"`
	Stream   *string `json:"stream"`
	Message  *string `json:"message"`
	Address  *string `json:"address"`
	Filename *string `json:"filename"`
	Hostname *string `json:"hostname"`
}

// CustomBatch is the records of a POST body, checked and ready to write.
type CustomBatch struct{ recs []pending }

// ParseCustom reads a POST body (raw, already read under MessageText and
// the body limit): one LogPost or an array of 1 to MaxCustomRecords, each
// record checked against now. A bad record is domain.Invalid, naming its
// index in an array.
func ParseCustom(raw json.RawMessage, now time.Time) (CustomBatch, error) {
	var logs []CustomLog
	isArray := false
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		isArray = true
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return CustomBatch{}, domain.Errorf(domain.Invalid, "invalid JSON body: %s", err.Error())
		}
		if len(elems) == 0 || len(elems) > MaxCustomRecords {
			return CustomBatch{}, domain.Errorf(domain.Invalid, "an array of 1 to %d logs is required", MaxCustomRecords)
		}
		for i, e := range elems {
			var l CustomLog
			if err := jsontext.UnmarshalStrict(e, &l, MessageText); err != nil {
				return CustomBatch{}, domain.Errorf(domain.Invalid, "log %d: %s", i, errMessage(err))
			}
			logs = append(logs, l)
		}
	} else {
		var l CustomLog
		if err := jsontext.UnmarshalStrict(raw, &l, MessageText); err != nil {
			return CustomBatch{}, err
		}
		logs = append(logs, l)
	}
	recs := make([]pending, 0, len(logs))
	for i, l := range logs {
		it, err := customItem(l, now)
		if err != nil {
			if isArray {
				return CustomBatch{}, domain.Errorf(domain.Invalid, "log %d: %s", i, err.Error())
			}
			return CustomBatch{}, domain.Errorf(domain.Invalid, "%s", err.Error())
		}
		recs = append(recs, it)
	}
	return CustomBatch{recs: recs}, nil
}

// Ingest writes a batch to the records of an application of the account
// and returns the records' ids, in the batch's order.
func Ingest(ctx context.Context, st Store, account, app string, b CustomBatch) ([]string, error) {
	if err := owned(ctx, st, account, app); err != nil {
		return nil, err
	}
	recs := b.recs
	out := make([]string, 0, len(recs))
	for i := range recs {
		recs[i].app, recs[i].id = app, ids.New()
		out = append(out, recs[i].id)
	}
	items, err := chunkItems(recs, func(string, int) string { return ids.New() })
	if err != nil {
		return nil, err
	}
	if err := putChunks(ctx, st.Logs, items); err != nil {
		return nil, err
	}
	return out, nil
}

func errMessage(err error) string {
	if e, ok := domain.AsError(err); ok {
		return e.Message
	}
	return err.Error()
}

func customItem(l CustomLog, now time.Time) (pending, error) {
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{{"created", l.Created, 64}, {"stream", l.Stream, maxShortField}, {"message", l.Message, maxMessageBytes}, {"address", l.Address, 64}, {"filename", l.Filename, maxShortField}, {"hostname", l.Hostname, 255}} {
		switch {
		case f.v == nil:
			return pending{}, errors.New(f.name + " is required")
		case *f.v == "":
			return pending{}, errors.New(f.name + " must not be empty")
		case len(*f.v) > f.max:
			return pending{}, errors.New(f.name + " is too long")
		case !utf8.ValidString(*f.v):
			return pending{}, errors.New(f.name + " is not valid UTF-8")
		}
	}
	t, err := time.Parse(time.RFC3339Nano, *l.Created)
	if err != nil {
		return pending{}, errors.New("created must be an RFC 3339 time")
	}
	t = t.UTC()
	if t.After(now.Add(maxFuture)) || t.Before(now.Add(-Retention)) {
		return pending{}, errors.New("created must be within the retention (30 days) and at most an hour ahead")
	}
	if _, err := netip.ParsePrefix(*l.Address); err != nil {
		if _, err := netip.ParseAddr(*l.Address); err != nil {
			return pending{}, errors.New("address must be an IP address or CIDR")
		}
	}
	return pending{typ: TypeCustom, t: t, rec: Record{"created": t.Format(time.RFC3339Nano), "stream": *l.Stream, "message": *l.Message,
		"address": *l.Address, "filename": *l.Filename, "hostname": *l.Hostname}}, nil
}
