package logs

import "strings"

// LogSchemaJSON is one element of GET /v2/log-schemas: a log type this
// service keeps, its fields and how long records stay (the reference
// document's LogSchema, Field, Type and Retention shapes).
type LogSchemaJSON struct {
	Type         string        `json:"type"`
	Display      string        `json:"display"`
	DefaultOrder string        `json:"default_order"`
	Fields       []FieldJSON   `json:"fields"`
	Retention    RetentionJSON `json:"retention"`
}

// FieldJSON is one field of a schema. is_metric says whether groupselect
// can aggregate it (sum, min, max, avg): the numeric fields.
type FieldJSON struct {
	Name        string   `json:"name"`
	Display     string   `json:"display"`
	Type        TypeJSON `json:"type"`
	Description string   `json:"description"`
	IsMetric    bool     `json:"is_metric"`
}

// TypeJSON is a field's type; element_type for arrays, values for enums.
type TypeJSON struct {
	Name        string      `json:"name"`
	ElementType *TypeJSON   `json:"element_type,omitempty"`
	Values      []EnumValue `json:"values,omitempty"`
}

// EnumValue is one value of an enum field.
type EnumValue struct {
	Value   string `json:"value"`
	Display string `json:"display"`
}

// RetentionJSON is how many days records are kept (online: every stored
// record can be read and archived).
type RetentionJSON struct {
	OnlineAge int `json:"online_age"`
}

// schemaOrder is the order GET /v2/log-schemas lists the types in.
var schemaOrder = []string{TypeAccess, TypeCDN, TypeCSPReports, TypeCustom, TypePageviews}

var typeDisplay = map[string]string{
	TypeAccess: "Traffic viewer", TypeCDN: "CDN logs", TypeCSPReports: "CSP reports", TypeCustom: "Custom logs", TypePageviews: "Pageview logs",
}

// fieldDoc is a field's display name, description and, where it is more
// specific than its kind, its type name.
type fieldDoc struct{ display, typ, desc string }

// fieldDocs describes every field name any schema uses; a test checks
// that none is missing.
var fieldDocs = map[string]fieldDoc{
	"arrival":                    {"Arrival", "timestamp", "When the request (or report) reached the edge"},
	"bytes_in":                   {"Bytes in", "byte-count", "Size of the request as received, headers included"},
	"bytes_out":                  {"Bytes out", "byte-count", "Size of the response as sent, headers included"},
	"cache_control":              {"Cache control", "", "The response's Cache-Control header"},
	"cache_source":               {"Cache source", "enum", "Where the response came from"},
	"completed":                  {"Completed", "timestamp", "When the response was fully sent"},
	"country":                    {"Country", "country-code", "ISO 3166-1 alpha-2 country of the client address (XX when unknown)"},
	"delivery_status":            {"Delivery status", "enum", "How the exchange ended"},
	"elapsed":                    {"Elapsed", "duration", "Milliseconds from arrival to the last byte sent"},
	"internal_transport_latency": {"Internal transport latency", "duration", "Milliseconds spent between the edge's own nodes"},
	"labels":                     {"Labels", "array", "Labels the edge attached to the request"},
	"load_id":                    {"Load id", "correlation-id", "Id of the load test run that sent the request, if any"},
	"location":                   {"Location", "", "Point of presence that served the request"},
	"proxy_address":              {"Proxy address", "address", "Address of the edge node that took the request"},
	"peer_address":               {"Peer address", "address", "Address of the immediate peer of the connection"},
	"queue_latency":              {"Queue latency", "duration", "Milliseconds the request waited for an application server"},
	"range":                      {"Range", "", "The request's Range header"},
	"referrer":                   {"Referrer", "url", "The request's Referer header"},
	"request_address":            {"Client address", "address", "Address of the client"},
	"request_id":                 {"Request id", "correlation-id", "Id the edge gave the request"},
	"request_method":             {"Method", "", "HTTP method"},
	"request_host":               {"Host", "host", "Host the request named"},
	"request_port":               {"Port", "port", "Port the request arrived on"},
	"request_path":               {"Path", "path", "Path of the request URL"},
	"request_protocol":           {"Protocol", "", "HTTP version of the request"},
	"request_query":              {"Query", "query", "Query string of the request URL"},
	"request_url":                {"URL", "url", "The full request URL"},
	"response_content_type":      {"Content type", "", "The response's Content-Type header"},
	"server_address":             {"Server address", "address", "Address of the application server that answered"},
	"server_latency":             {"Server latency", "duration", "Milliseconds the application server took to answer"},
	"status_code":                {"Status code", "status-code", "HTTP status code of the response"},
	"session_id":                 {"Session id", "correlation-id", "Id of the client's session"},
	"status_code_and_url":        {"Status code and URL", "", "The status code and the request URL together, for grouping"},
	"threat":                     {"Threat", "", "Threat classification the edge gave the request"},
	"tls_cipher":                 {"TLS cipher", "", "Cipher suite of the client connection"},
	"tls_version":                {"TLS version", "", "TLS version of the client connection"},
	"ttfb":                       {"Time to first byte", "duration", "Milliseconds from arrival to the first byte sent"},
	"useragent":                  {"User agent", "", "The request's User-Agent header"},
	"useragent_device":           {"Device", "enum", "Kind of device the user agent runs on"},
	"useragent_name":             {"Browser", "", "Name of the user agent"},
	"useragent_os":               {"Operating system", "", "Operating system of the user agent"},
	"webcontrols":                {"Web controls", "array", "Ids of the web controls that acted on the request"},
	"page_load_time":             {"Page load time", "duration", "Milliseconds the page took to load in the browser"},
	"document_uri":               {"Document URI", "url", "The page whose policy was violated"},
	"violated_directive":         {"Violated directive", "", "The directive the browser reported as violated"},
	"effective_directive":        {"Effective directive", "", "The directive whose enforcement caused the violation"},
	"original_policy":            {"Original policy", "", "The policy as the page sent it"},
	"blocked_uri":                {"Blocked URI", "url", "The resource the browser blocked"},
	"id":                         {"Id", "correlation-id", "Id of the record, returned when it was submitted"},
	"created":                    {"Created", "timestamp", "When the record was produced, as submitted"},
	"stream":                     {"Stream", "", "Output stream the record came from"},
	"message":                    {"Message", "", "The record's text"},
	"address":                    {"Address", "address", "Address of the host that produced the record"},
	"filename":                   {"File", "path", "File the record was read from"},
	"hostname":                   {"Host name", "host", "Name of the host that produced the record"},
}

// fieldEnums are the values of the enum fields (the ingest format's
// enumerations, docs/metrics.md).
var fieldEnums = map[string][]string{
	"cache_source":     {"hit", "stale", "miss", "pass", "error", "synthetic"},
	"delivery_status":  {"delivered", "client_abort", "rejected", "timeout", "error", "blocked"},
	"useragent_device": {"desktop", "mobile", "tablet", "bot", "tv", "console"},
}

// listElement is the element type of the list fields.
var listElement = map[string]string{"labels": "label", "webcontrols": "web-control-id"}

func fieldType(f Field) TypeJSON {
	d := fieldDocs[f.Name]
	switch {
	case f.Kind == KindList:
		return TypeJSON{Name: "array", ElementType: &TypeJSON{Name: listElement[f.Name]}}
	case d.typ == "enum":
		t := TypeJSON{Name: "enum"}
		for _, v := range fieldEnums[f.Name] {
			t.Values = append(t.Values, EnumValue{Value: v, Display: strings.ReplaceAll(v, "_", " ")})
		}
		return t
	case d.typ != "":
		return TypeJSON{Name: d.typ}
	case f.Kind == KindTime:
		return TypeJSON{Name: "timestamp"}
	}
	return TypeJSON{Name: "string"}
}

// LogSchemas is the body of GET /v2/log-schemas: every log type with its
// fields in their default order. It depends on nothing stored, so it is
// built once.
func LogSchemas() []LogSchemaJSON {
	out := make([]LogSchemaJSON, 0, len(schemaOrder))
	for _, typ := range schemaOrder {
		s := schemas[typ]
		ls := LogSchemaJSON{Type: typ, Display: typeDisplay[typ], DefaultOrder: s.TimeField, Fields: make([]FieldJSON, 0, len(s.Fields)),
			Retention: RetentionJSON{OnlineAge: int(Retention.Hours() / 24)}}
		for _, f := range s.Fields {
			d := fieldDocs[f.Name]
			ls.Fields = append(ls.Fields, FieldJSON{Name: f.Name, Display: d.display, Type: fieldType(f), Description: d.desc, IsMetric: f.Kind == KindNumber})
		}
		out = append(out, ls)
	}
	return out
}
