package metrics

import (
	"strconv"
	"time"

	"github.com/valyala/fastjson"
)

// Message is what the edge (the data plane, outside this service) sends to
// the ingest queue: a batch of records. Batch is a producer-chosen unique id
// ([A-Za-z0-9_-], at most 64 characters): the aggregator folds each batch
// once, however often it is delivered or sent. Without it the SQS message
// id is used, which protects against redelivery but not against a producer
// that sends the same batch twice.
type Message struct {
	Batch   string   `json:"batch,omitempty"`
	Records []Record `json:"records"`
}

// Record types. access, cdn and pageview are the log types of docs/api.md#logs
// (`type=access|cdn|pageviews` of GET /applications/{id}/logs).
const (
	TypeAccess   = "access"   // one request served by the data plane (the default)
	TypeCDN      = "cdn"      // one request served by a CDN POP
	TypePageview = "pageview" // one page-load report from a user agent
	TypeSessions = "sessions" // a periodic sample of an edge node's sessions
	TypeAddress  = "address"  // an address the edge adds to a dynamic address set
)

// Record is one ingest record. An access record carries the log fields
// (docs/api.md#logs) under their names there; the other types use the fields listed with
// them. Durations are milliseconds, sizes bytes, times RFC 3339. Fields a
// type does not use are ignored; unknown fields are ignored too, so the
// edge can send more than this version reads. docs/metrics.md has the
// table of fields, their types and which metric reads each.
type Record struct {
	Type string `json:"type,omitempty"`
	App  string `json:"app,omitempty"` // application id (all types but address)

	// The log fields of docs/api.md#logs (access; cdn records use the same names).
	Arrival                  string   `json:"arrival,omitempty"`
	BytesIn                  int64    `json:"bytes_in,omitempty"`
	BytesOut                 int64    `json:"bytes_out,omitempty"`
	CacheControl             string   `json:"cache_control,omitempty"`
	CacheSource              string   `json:"cache_source,omitempty"` // hit, stale, miss, pass, error, synthetic
	Completed                string   `json:"completed,omitempty"`
	Country                  string   `json:"country,omitempty"`         // ISO 3166-1 alpha-2
	DeliveryStatus           string   `json:"delivery_status,omitempty"` // delivered, client_abort, rejected, timeout, error, blocked
	Elapsed                  float64  `json:"elapsed,omitempty"`
	InternalTransportLatency float64  `json:"internal_transport_latency,omitempty"`
	Labels                   []string `json:"labels,omitempty"`
	LoadID                   string   `json:"load_id,omitempty"`
	Location                 string   `json:"location,omitempty"`
	ProxyAddress             string   `json:"proxy_address,omitempty"`
	PeerAddress              string   `json:"peer_address,omitempty"`
	QueueLatency             float64  `json:"queue_latency,omitempty"`
	Range                    string   `json:"range,omitempty"`
	Referrer                 string   `json:"referrer,omitempty"`
	RequestAddress           string   `json:"request_address,omitempty"`
	RequestID                string   `json:"request_id,omitempty"`
	RequestMethod            string   `json:"request_method,omitempty"`
	RequestHost              string   `json:"request_host,omitempty"`
	RequestPort              int      `json:"request_port,omitempty"`
	RequestPath              string   `json:"request_path,omitempty"`
	RequestProtocol          string   `json:"request_protocol,omitempty"`
	RequestQuery             string   `json:"request_query,omitempty"`
	RequestURL               string   `json:"request_url,omitempty"`
	ResponseContentType      string   `json:"response_content_type,omitempty"`
	ServerAddress            string   `json:"server_address,omitempty"`
	ServerLatency            float64  `json:"server_latency,omitempty"`
	StatusCode               int      `json:"status_code,omitempty"`
	SessionID                string   `json:"session_id,omitempty"`
	StatusCodeAndURL         string   `json:"status_code_and_url,omitempty"`
	Threat                   string   `json:"threat,omitempty"`
	TLSCipher                string   `json:"tls_cipher,omitempty"`
	TLSVersion               string   `json:"tls_version,omitempty"`
	TTFB                     float64  `json:"ttfb,omitempty"`
	Useragent                string   `json:"useragent,omitempty"`
	UseragentDevice          string   `json:"useragent_device,omitempty"`
	UseragentName            string   `json:"useragent_name,omitempty"`
	UseragentOS              string   `json:"useragent_os,omitempty"`
	Webcontrols              []string `json:"webcontrols,omitempty"`

	// pageview: arrival, page_load_time (ms), and optionally country and
	// the useragent fields.
	PageLoadTime float64 `json:"page_load_time,omitempty"`

	// sessions: at `time`, the node had `active` sessions, sampled every
	// `interval` seconds; `ended` sessions ended since its last sample,
	// lasting `ended_seconds` in total (first to last request).
	Time         string  `json:"time,omitempty"`
	Interval     float64 `json:"interval,omitempty"`
	Active       float64 `json:"active,omitempty"`
	Ended        int64   `json:"ended,omitempty"`
	EndedSeconds float64 `json:"ended_seconds,omitempty"`

	// address: at `time` the edge adds `address` (IP or CIDR) to the
	// dynamic address set `set`, until `expiry` if set.
	Set         string `json:"set,omitempty"`
	Address     string `json:"address,omitempty"`
	Expiry      string `json:"expiry,omitempty"`
	Description string `json:"description,omitempty"`
}

// AddressRecord is an address record the aggregator hands to the address
// sets (dynamic sets are written only this way).
type AddressRecord struct {
	Set         string
	Address     string
	Expiry      *time.Time
	Description string
	Time        time.Time
}

// inRecord is the part of a Record the aggregator reads. Its byte slices
// point into the parser's buffer: valid only while the record is folded.
type inRecord struct {
	Type, App, Arrival, CacheSource, Country, DeliveryStatus []byte
	Location, Threat, UADevice, UAName, UAOS, Time           []byte
	Set, Address, Expiry, Description                        []byte
	Webcontrols                                              [][]byte
	StatusCode                                               int
	BytesIn, BytesOut, Elapsed, QueueLatency, ServerLatency  float64
	TTFB, PageLoadTime, Interval, Active, Ended, EndedSecs   float64
}

func (r *inRecord) reset() {
	wc := r.Webcontrols[:0]
	*r = inRecord{Webcontrols: wc}
}

// fill reads the fields the aggregator uses from one record object in a
// single pass; values of the wrong JSON type read as absent.
func (r *inRecord) fill(o *fastjson.Object) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		switch string(k) {
		case "type":
			r.Type = strBytes(v)
		case "app":
			r.App = strBytes(v)
		case "arrival":
			r.Arrival = strBytes(v)
		case "bytes_in":
			r.BytesIn = float(v)
		case "bytes_out":
			r.BytesOut = float(v)
		case "cache_source":
			r.CacheSource = strBytes(v)
		case "country":
			r.Country = strBytes(v)
		case "delivery_status":
			r.DeliveryStatus = strBytes(v)
		case "elapsed":
			r.Elapsed = float(v)
		case "location":
			r.Location = strBytes(v)
		case "queue_latency":
			r.QueueLatency = float(v)
		case "server_latency":
			r.ServerLatency = float(v)
		case "status_code":
			r.StatusCode = int(float(v))
		case "threat":
			r.Threat = strBytes(v)
		case "ttfb":
			r.TTFB = float(v)
		case "useragent_device":
			r.UADevice = strBytes(v)
		case "useragent_name":
			r.UAName = strBytes(v)
		case "useragent_os":
			r.UAOS = strBytes(v)
		case "webcontrols":
			if arr, err := v.Array(); err == nil {
				for _, w := range arr {
					if b := strBytes(w); b != nil {
						r.Webcontrols = append(r.Webcontrols, b)
					}
				}
			}
		case "page_load_time":
			r.PageLoadTime = float(v)
		case "time":
			r.Time = strBytes(v)
		case "interval":
			r.Interval = float(v)
		case "active":
			r.Active = float(v)
		case "ended":
			r.Ended = float(v)
		case "ended_seconds":
			r.EndedSecs = float(v)
		case "set":
			r.Set = strBytes(v)
		case "address":
			r.Address = strBytes(v)
		case "expiry":
			r.Expiry = strBytes(v)
		case "description":
			r.Description = strBytes(v)
		}
	})
}

func strBytes(v *fastjson.Value) []byte {
	b, err := v.StringBytes()
	if err != nil {
		return nil
	}
	return b
}

func float(v *fastjson.Value) float64 {
	f, err := v.Float64()
	if err != nil {
		return 0
	}
	return f
}

// Vocabularies of the enumerated fields; other values are counted as
// "other" so that a distribution's keys stay few.
var (
	cacheSources     = vocab("hit", "stale", "miss", "pass", "error", "synthetic")
	deliveryStatuses = vocab("delivered", "client_abort", "rejected", "timeout", "error", "blocked")
	devices          = vocab("desktop", "mobile", "tablet", "bot", "tv", "console")
)

func vocab(words ...string) map[string]string {
	m := make(map[string]string, len(words))
	for _, w := range words {
		m[w] = w
	}
	return m
}

func inVocab(v map[string]string, b []byte) string {
	if w, ok := v[string(b)]; ok {
		return w
	}
	return "other"
}

var other = []byte("other")

// token keeps free-form keys (user agent names, POP locations, web
// control ids) short and plain: 1-40 characters of [A-Za-z0-9 ._:/-],
// starting with a letter or digit; anything else is "other".
func token(s []byte) []byte {
	if len(s) == 0 || len(s) > 40 {
		return other
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == ' ' || c == '.' || c == '_' || c == ':' || c == '/' || c == '-'):
		default:
			return other
		}
	}
	return s
}

// countryCodes[a][b] is the upper-case code of letters a and b.
var countryCodes = func() (t [26][26]string) {
	for a := range 26 {
		for b := range 26 {
			t[a][b] = string([]byte{byte('A' + a), byte('A' + b)})
		}
	}
	return t
}()

func country(s []byte) string {
	if len(s) != 2 {
		return "XX"
	}
	a, b := s[0]|0x20, s[1]|0x20 // lower case
	if a < 'a' || a > 'z' || b < 'a' || b > 'z' {
		return "XX"
	}
	return countryCodes[a-'a'][b-'a']
}

var statusKeys = func() []string {
	out := make([]string, 600)
	for i := 100; i < 600; i++ {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func statusKey(code int) string {
	if code >= 100 && code < 600 {
		return statusKeys[code]
	}
	return "other"
}

var statusClasses = []string{"1xx", "2xx", "3xx", "4xx", "5xx"}

func statusClass(code int) string {
	if code >= 100 && code < 600 {
		return statusClasses[code/100-1]
	}
	return "other"
}

var pageLoadBins = []struct {
	upTo int64
	key  string
}{{500, "0-500"}, {1000, "500-1000"}, {2000, "1000-2000"}, {3000, "2000-3000"}, {5000, "3000-5000"}, {10000, "5000-10000"}}

func pageLoadBin(ms int64) string {
	for _, b := range pageLoadBins {
		if ms < b.upTo {
			return b.key
		}
	}
	return "10000+"
}

// maxValue bounds any single number a record contributes, so that no
// record can overflow a sum (2^50 bytes is a petabyte).
const maxValue = 1 << 50

func num(f float64) int64 {
	switch {
	case !(f > 0): // also NaN
		return 0
	case f > maxValue:
		return maxValue
	}
	return int64(f + 0.5)
}

// parseTime reads an RFC 3339 timestamp.
func parseTime(s []byte) (time.Time, bool) {
	if len(s) == 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}
