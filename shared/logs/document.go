package logs

import (
	"encoding/csv"
	"net/url"
	"strconv"
	"time"

	"cads/shared/jsontext"
)

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
