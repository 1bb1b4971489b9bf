// Package logs stores application log records and answers
// GET /v2/applications/{id}/logs: the filter language, the query engine
// over time-partitioned records, JSON and CSV rendering, grouping, and the
// custom logs of POST /v2/applications/{id}/logs.
package logs

import (
	"slices"
	"time"
)

// Log types (docs/api.md#logs). custom is what POST writes; it can be read back
// with type=custom.
const (
	TypeAccess     = "access"
	TypePageviews  = "pageviews"
	TypeCSPReports = "csp-reports"
	TypeCDN        = "cdn"
	TypeCustom     = "custom"
)

// Kind is how a field's values are compared, aggregated and rendered.
type Kind int

const (
	KindString Kind = iota
	KindNumber      // JSON number: compared numerically, sum/min/max/avg apply
	KindTime        // RFC 3339 string: compared as instants
	KindList        // array of strings: = and contains test membership
)

// Field is one selectable attribute.
type Field struct {
	Name string
	Kind Kind
}

// Schema is the fields of one log type, in their default order, and the
// field holding the record's time (the partition and sort key).
type Schema struct {
	Type      string
	TimeField string
	Fields    []Field
	byName    map[string]Field
}

// Field returns the named field of the schema.
func (s *Schema) Field(name string) (Field, bool) {
	f, ok := s.byName[name]
	return f, ok
}

// Names lists the schema's field names in order.
func (s *Schema) Names() []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

func newSchema(typ, timeField string, fields ...Field) *Schema {
	s := &Schema{Type: typ, TimeField: timeField, Fields: fields, byName: map[string]Field{}}
	for _, f := range fields {
		s.byName[f.Name] = f
	}
	return s
}

func str(n string) Field  { return Field{n, KindString} }
func num(n string) Field  { return Field{n, KindNumber} }
func tim(n string) Field  { return Field{n, KindTime} }
func list(n string) Field { return Field{n, KindList} }

// accessFields are the fields of docs/api.md#logs, in that order; cdn records use the same names.
var accessFields = []Field{
	tim("arrival"), num("bytes_in"), num("bytes_out"), str("cache_control"), str("cache_source"),
	tim("completed"), str("country"), str("delivery_status"), num("elapsed"),
	num("internal_transport_latency"), list("labels"), str("load_id"), str("location"),
	str("proxy_address"), str("peer_address"), num("queue_latency"), str("range"), str("referrer"),
	str("request_address"), str("request_id"), str("request_method"), str("request_host"),
	num("request_port"), str("request_path"), str("request_protocol"), str("request_query"),
	str("request_url"), str("response_content_type"), str("server_address"), num("server_latency"),
	num("status_code"), str("session_id"), str("status_code_and_url"), str("threat"),
	str("tls_cipher"), str("tls_version"), num("ttfb"), str("useragent"), str("useragent_device"),
	str("useragent_name"), str("useragent_os"), list("webcontrols"),
}

var schemas = map[string]*Schema{
	TypeAccess: newSchema(TypeAccess, "arrival", accessFields...),
	TypeCDN:    newSchema(TypeCDN, "arrival", accessFields...),
	// A page-load report carries the page and the user agent that loaded it.
	TypePageviews: newSchema(TypePageviews, "arrival",
		tim("arrival"), num("page_load_time"), str("country"), str("request_url"), str("referrer"),
		str("session_id"), str("useragent"), str("useragent_device"), str("useragent_name"), str("useragent_os")),
	// A browser's Content Security Policy violation report (the fields of
	// the CSP report format, snake-cased), with where it came from.
	TypeCSPReports: newSchema(TypeCSPReports, "arrival",
		tim("arrival"), str("document_uri"), str("referrer"), str("violated_directive"),
		str("effective_directive"), str("original_policy"), str("blocked_uri"), num("status_code"),
		str("request_address"), str("country"), str("useragent")),
	TypeCustom: newSchema(TypeCustom, "created",
		str("id"), tim("created"), str("stream"), str("message"), str("address"), str("filename"), str("hostname")),
}

// SchemaOf returns the schema of a log type.
func SchemaOf(typ string) (*Schema, bool) {
	s, ok := schemas[typ]
	return s, ok
}

// Types lists the log types GET accepts.
func Types() []string {
	out := make([]string, 0, len(schemas))
	for t := range schemas {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// ingestTypes maps an ingest record's type (docs/metrics.md) to its log
// type; the metrics-only types (sessions, address) are not logs.
var ingestTypes = map[string]string{
	"":           TypeAccess,
	"access":     TypeAccess,
	"cdn":        TypeCDN,
	"pageview":   TypePageviews,
	"csp-report": TypeCSPReports,
}

// Retention is how long records are kept (their DynamoDB TTL). Neither the
// application nor the API carries an application log retention, so every
// record gets this default; see docs/logs.md.
const Retention = 30 * 24 * time.Hour

// Record is one log record: field name to value (string, float64 or
// []string), only the fields of its schema.
type Record map[string]any
