package logs

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/routes"
	"cads/shared/store"
)

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

type handler struct {
	st      Store
	dec     Deciders
	log     *slog.Logger
	schemas []LogSchemaJSON
}

// NewHandler serves GET and POST /v2/applications/{id}/logs, GET
// /v2/log-schemas and the archived logs (archive.go). The
// authorizer has allowed the route; the application must be in the
// caller's account (404 otherwise).
func NewHandler(st Store, dec Deciders, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, log: log, schemas: LogSchemas()}
	mux := apigw.NewRouter(routes.Logs)
	mux.HandleFunc("getLogSchemas", apigw.HandleInAccount(log, h.logSchemas))
	mux.HandleFunc("getArchivedLogs", apigw.HandleInAccount(log, h.listArchives))
	mux.HandleFunc("getArchivedLogsApplicationsByIdByLogType", apigw.HandleInAccount(log, h.downloadArchive))
	mux.HandleFunc("deleteArchivedLogsApplicationsByIdByLogType", apigw.HandleInAccount(log, h.deleteArchives))
	mux.HandleFunc("getApplicationsByIdLogs", apigw.HandleInAccount(log, h.get))
	mux.HandleFunc("postApplicationsByIdLogs", apigw.HandleInAccount(log, h.postLogs))
	return mux
}

// appID reads {id}; an id this service could not have made is a 404.
func appID(r *http.Request) (string, error) { return apigw.PathID(r, "id", "application") }

// owned checks that the application is in the caller's account.
func (h *handler) owned(ctx context.Context, p caller.Principal, id string) error {
	if _, err := h.st.Applications.GetApplication(ctx, p.AccountID, id); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return domain.Errorf(domain.NotFound, "no application %q", id)
		}
		return err
	}
	return nil
}

// get answers a log query. The ownership check runs in parallel with the
// hour index read (which does not depend on it): an empty range costs one
// round trip. The partitions are read only once both are back, so records
// of another account's application are never read, at no added round trip
// (the partitions wait for the index anyway).
func (h *handler) get(r *http.Request, p caller.Principal) (int, any, error) {
	ctx := r.Context()
	app, err := appID(r)
	if err != nil {
		return 0, nil, err
	}
	q, err := ParseQuery(r.URL.Query(), h.st.Now())
	if err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
	}
	var (
		f    filled
		fErr error
		g    errgroup.Group // both answers are needed to choose the error
	)
	g.Go(func() error { return h.owned(ctx, p, app) })
	g.Go(func() error { f, fErr = q.filledHours(ctx, h.st.Logs, app); return nil })
	if oErr := g.Wait(); oErr != nil {
		return 0, nil, oErr
	}
	if fErr != nil {
		return 0, nil, fErr
	}
	res, runErr := q.run(ctx, h.st.Logs, app, f)
	if runErr != nil {
		var bq *BadQuery
		if errors.As(runErr, &bq) {
			return 0, nil, domain.Errorf(domain.Invalid, "%s", bq.Msg)
		}
		return 0, nil, runErr
	}
	h.log.DebugContext(ctx, "log query", "records_examined", res.Examined, "work", res.Work, "cut", cutName(res.Cut), "request_id", apigw.RequestID(ctx))
	if q.CSV {
		// A proxy response is one body: render it whole (bounded by limit
		// and by the response budget).
		var buf bytes.Buffer
		if err := WriteCSV(&buf, q, res); err != nil {
			return 0, nil, err
		}
		return http.StatusOK, &apigw.Binary{ContentType: "text/csv; charset=utf-8", Data: buf.Bytes(), Headers: CSVHeaders(q, res)}, nil
	}
	return http.StatusOK, Document(q, res), nil
}

func cutName(c *Cut) string {
	if c == nil {
		return ""
	}
	return c.Budget
}

// CSV has no room for the JSON document's next and cut: they travel as
// headers (docs/logs.md).
const (
	HeaderNextStart = "X-Next-Start"
	HeaderCut       = "X-Result-Cut"
	HeaderContinue  = "X-Result-Continue"
)

// CSVHeaders are the headers that carry next and cut with a CSV answer:
// X-Next-Start (the JSON next), X-Result-Cut (the budget that cut the
// answer) and X-Result-Continue (the query parameters from, to and start
// that go on from the cut).
func CSVHeaders(q *Query, res *Result) map[string]string {
	h := map[string]string{}
	if res.More {
		h[HeaderNextStart] = strconv.Itoa(q.Start + len(res.Records))
	}
	if c := res.Cut; c != nil {
		h[HeaderCut] = c.Budget
		h[HeaderContinue] = url.Values{"from": {c.From.Format(time.RFC3339Nano)}, "to": {c.To.Format(time.RFC3339Nano)},
			"start": {strconv.Itoa(c.Start)}, "resume": {c.Resume.Encode()}}.Encode()
	}
	return h
}

// JSON document shapes (the reference document's ApplicationLog).
type (
	DocumentJSON struct {
		From    string      `json:"from"`
		To      string      `json:"to"`
		Group   GroupJSON   `json:"group"`
		Records RecordsJSON `json:"records"`
	}
	// Result rows are ObjectRow (the default) or []any (rows=arrays).
	GroupJSON struct {
		Fields []string `json:"fields"`
		Result []any    `json:"result"`
	}
	RecordsJSON struct {
		Count  int      `json:"count"`
		Fields []string `json:"fields"`
		Result []any    `json:"result"`
		Start  int      `json:"start"`
		Next   *int     `json:"next,omitempty"`
		Cut    *CutJSON `json:"cut,omitempty"`
	}
	// CutJSON is present when a budget cut the answer short: which one,
	// its number, what the query spent, and the from/to/start that go on.
	CutJSON struct {
		Budget          string       `json:"budget"`
		Limit           int64        `json:"limit"`
		Message         string       `json:"message"`
		RecordsExamined int          `json:"records_examined"`
		Work            int64        `json:"work"`
		Continue        ContinueJSON `json:"continue"`
	}
	ContinueJSON struct {
		From   string `json:"from"`
		To     string `json:"to"`
		Start  int    `json:"start"`
		Resume string `json:"resume"`
	}
)

var cutMessages = map[string]string{
	CutRecords: "the query read its budget of records before its page was complete",
	CutWork:    "the filter spent the query's work budget before its page was complete",
	CutTime:    "the query reached its time limit before its page was complete",
	CutBytes:   "the page reached the response size budget; the next records follow at next, or at continue",
}

// The two shapes of a JSON result row (the rows parameter).
const (
	RowsObjects = "objects"
	RowsArrays  = "arrays"
)

// ObjectRow is a result row as an object: each field with its value, in
// fields order (null for a missing value).
type ObjectRow struct {
	Fields []string
	Values []any
}

// MarshalJSON writes the members in fields order, which a map would not.
func (o ObjectRow) MarshalJSON() ([]byte, error) {
	return jsontext.MarshalObject(o.Fields, o.Values)
}

// jsonRow is values (in fields order) in the row shape q asks for.
func (q *Query) jsonRow(fields []string, values []any) any {
	if q.Arrays {
		return values
	}
	return ObjectRow{Fields: fields, Values: values}
}

// row is a record as a result row: its values in the selected fields'
// order, nil for a missing one.
func row(q *Query, rec Record) []any {
	out := make([]any, len(q.Fields))
	for i, f := range q.Fields {
		if v, ok := rec[f]; ok {
			out[i] = v
		}
	}
	return out
}

// Document renders a result as the JSON document. A grouped query answers
// in group and leaves records empty; an ungrouped one the other way round.
func Document(q *Query, res *Result) DocumentJSON {
	d := DocumentJSON{
		From:    q.From.Format(time.RFC3339Nano),
		To:      q.To.Format(time.RFC3339Nano),
		Group:   GroupJSON{Fields: []string{}, Result: []any{}},
		Records: RecordsJSON{Fields: q.Fields, Result: make([]any, 0, len(res.Records)), Start: q.Start},
	}
	if q.Group != nil {
		d.Group = GroupJSON{Fields: q.Group.Fields, Result: make([]any, 0, len(res.Groups))}
		for _, g := range res.Groups {
			d.Group.Result = append(d.Group.Result, q.jsonRow(q.Group.Fields, g))
		}
		d.Records.Fields = []string{}
	}
	for _, rec := range res.Records {
		d.Records.Result = append(d.Records.Result, q.jsonRow(q.Fields, row(q, rec)))
	}
	d.Records.Count = len(d.Records.Result)
	if res.More {
		n := q.Start + d.Records.Count
		d.Records.Next = &n
	}
	if c := res.Cut; c != nil {
		d.Records.Cut = &CutJSON{Budget: c.Budget, Limit: c.Limit, Message: cutMessages[c.Budget], RecordsExamined: res.Examined, Work: res.Work,
			Continue: ContinueJSON{From: c.From.Format(time.RFC3339Nano), To: c.To.Format(time.RFC3339Nano), Start: c.Start, Resume: c.Resume.Encode()}}
	}
	return d
}

// WriteCSV renders a result as CSV with a header row: the selected fields,
// or the group's columns for a grouped query. Lists are joined with ","
// inside their cell; absent values are empty cells.
func WriteCSV(w interface{ Write([]byte) (int, error) }, q *Query, res *Result) error {
	cw := csv.NewWriter(w)
	if q.Group != nil {
		if err := cw.Write(q.Group.Fields); err != nil {
			return err
		}
		row := make([]string, len(q.Group.Fields))
		for _, g := range res.Groups {
			for i, v := range g {
				row[i] = render(v)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	if err := cw.Write(q.Fields); err != nil {
		return err
	}
	row := make([]string, len(q.Fields))
	for _, rec := range res.Records {
		for i, f := range q.Fields {
			row[i] = render(rec[f])
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Custom log limits (docs/logs.md). The body limit is the API's JSON body
// limit (apigw.MaxJSONBody, 413 past it).
const (
	MaxCustomRecords = 100
	maxMessageBytes  = 32 << 10
	maxShortField    = 1024
)

// messageText is the one exception to the text rule: a record's message
// is free text from a program's output, which may run over lines and
// indent with tabs. Every other field stays single-line text.
var messageText = jsontext.AllowTabNewline("message", "[*].message")

// CustomLog is one record of POST /v2/applications/{id}/logs (LogPost).
type CustomLog struct {
	Created  *string `json:"created"`
	Stream   *string `json:"stream"`
	Message  *string `json:"message"`
	Address  *string `json:"address"`
	Filename *string `json:"filename"`
	Hostname *string `json:"hostname"`
}

func (h *handler) postLogs(r *http.Request, p caller.Principal) (int, any, error) {
	if t := r.URL.Query().Get("type"); t != "" && t != TypeCustom {
		return 0, nil, domain.Errorf(domain.Invalid, "type: only custom logs can be submitted")
	}
	var raw json.RawMessage
	if err := apigw.DecodeJSON(r, &raw, messageText); err != nil {
		return 0, nil, err
	}
	var logs []CustomLog
	isArray := false
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		isArray = true
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return 0, nil, domain.Errorf(domain.Invalid, "invalid JSON body: %s", err.Error())
		}
		if len(elems) == 0 || len(elems) > MaxCustomRecords {
			return 0, nil, domain.Errorf(domain.Invalid, "an array of 1 to %d logs is required", MaxCustomRecords)
		}
		for i, e := range elems {
			var l CustomLog
			if err := jsontext.UnmarshalStrict(e, &l, messageText); err != nil {
				return 0, nil, domain.Errorf(domain.Invalid, "log %d: %s", i, errMessage(err))
			}
			logs = append(logs, l)
		}
	} else {
		var l CustomLog
		if err := jsontext.UnmarshalStrict(raw, &l, messageText); err != nil {
			return 0, nil, err
		}
		logs = append(logs, l)
	}
	now := h.st.Now()
	recs := make([]pending, 0, len(logs))
	out := make([]string, 0, len(logs))
	for i, l := range logs {
		it, err := customItem(l, now)
		if err != nil {
			if isArray {
				return 0, nil, domain.Errorf(domain.Invalid, "log %d: %s", i, err.Error())
			}
			return 0, nil, domain.Errorf(domain.Invalid, "%s", err.Error())
		}
		recs = append(recs, it)
	}
	// Bad input is refused before any read; then the application.
	app, err := appID(r)
	if err == nil {
		err = h.owned(r.Context(), p, app)
	}
	if err != nil {
		return 0, nil, err
	}
	for i := range recs {
		recs[i].app, recs[i].id = app, ids.New()
		out = append(out, recs[i].id)
	}
	items, err := chunkItems(recs, func(string, int) string { return ids.New() })
	if err != nil {
		return 0, nil, err
	}
	if err := putChunks(r.Context(), h.st.Logs, items); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
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
