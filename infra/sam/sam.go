// Package sam reads the project's AWS SAM template into plain structs that
// the local platform (gateway, tables, queues, event sources) is built from.
//
// goformation's typed structs are deliberately not used: they drop SQS events
// carrying FunctionResponseTypes or MaximumBatchingWindowInSeconds, do not
// merge Globals and resolve references to resources to empty values. Instead
// the YAML goes through goformation's intrinsic processor with handlers that
// keep references as logical ids, and the resulting JSON is decoded here.
//
// Loading also refuses what CloudFormation, SAM or API Gateway would refuse
// at deploy time (sibling path parameters with different names, duplicate
// routes, dangling queue references, ...), so a template that works locally
// does not fail on its first deployment.
package sam

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Template is the part of a SAM template the local platform needs.
type Template struct {
	Parameters map[string]string   // name -> Default ("" when it has none)
	Functions  map[string]Function // by logical id
	Tables     map[string]Table
	Queues     map[string]Queue
	Apis       map[string]Api
	// Resources holds every resource as written (intrinsics resolved as
	// described at resolve), for checks of what the typed fields above
	// leave out: custom resources, secrets, permissions, policies.
	Resources map[string]Resource
	Outputs   map[string]Output
}

// Resource is one entry of Resources, undecoded.
type Resource struct {
	LogicalID           string
	Type                string
	Properties          map[string]any
	Metadata            map[string]any
	DeletionPolicy      string // "" = CloudFormation's default (Delete)
	UpdateReplacePolicy string
}

// Output is one entry of Outputs.
type Output struct {
	Description string
	Value       any
}

// Function is an AWS::Serverless::Function with Globals.Function merged in.
// Absent properties carry Lambda's defaults (Timeout 3, MemorySize 128,
// Architectures [x86_64]). Environment values that were `!Ref Resource` hold
// the resource's logical id; mapping them to local names is the caller's job.
type Function struct {
	LogicalID     string
	CodeURI       string
	Handler       string
	Runtime       string
	Architectures []string
	Timeout       int // seconds
	MemorySize    int // MB
	Environment   map[string]string
	Events        []Event // sorted by Name
	BuildMethod   string  // Metadata.BuildMethod, what sam build runs
}

// Event is one entry of a function's Events. Type is "Api", "SQS" or
// "Schedule" with the matching pointer set; other types are kept with every
// pointer nil.
type Event struct {
	Name     string
	Type     string
	Api      *ApiEvent
	SQS      *SQSEvent
	Schedule *ScheduleEvent
}

// ScheduleEvent is a Schedule event: an EventBridge rule invoking the
// function at a rate(...) or cron(...) expression. The expression is kept
// as written; the local platform parses it.
type ScheduleEvent struct {
	Schedule string
	Name     string // the rule's name; "" lets CloudFormation name it
	// Input replaces the scheduled event as the function's payload when set
	// (raw JSON, as the template's string holds it).
	Input   string
	Enabled bool // false: the rule exists but never fires
}

// ApiEvent is an Api event source.
type ApiEvent struct {
	Path       string
	Method     string // upper case; "ANY" for any
	RestAPI    string // logical id of the AWS::Serverless::Api ("ServerlessRestApi" when implicit)
	Authorizer string // "" = the API's default, "NONE" = none
}

// SQSEvent is an SQS event source mapping.
type SQSEvent struct {
	Queue                          string // logical id, from !GetAtt Q.Arn
	BatchSize                      int    // Lambda's default 10 when absent
	MaximumBatchingWindowInSeconds int
	FunctionResponseTypes          []string
	// MaximumConcurrency is ScalingConfig.MaximumConcurrency: the most
	// batches Lambda handles at once for this source; 0 = not set.
	MaximumConcurrency int
}

// ReportsBatchItemFailures tells whether the handler's partial-batch
// response is honoured for this event source.
func (e SQSEvent) ReportsBatchItemFailures() bool {
	return slices.Contains(e.FunctionResponseTypes, "ReportBatchItemFailures")
}

// Table is an AWS::DynamoDB::Table (or AWS::Serverless::SimpleTable).
type Table struct {
	LogicalID              string
	TableName              string // "" when the template lets CloudFormation name it
	AttributeDefinitions   []AttributeDefinition
	KeySchema              []KeyElement
	GlobalSecondaryIndexes []GSI
	LocalSecondaryIndexes  []Index
	TTLAttribute           string // "" when TTL is not enabled
	BillingMode            string // PAY_PER_REQUEST or PROVISIONED
	DeletionProtection     bool   // DeletionProtectionEnabled
	DeletionPolicy         string // the resource attribute; "" = Delete
	UpdateReplacePolicy    string // the resource attribute; "" = Delete
}

// AttributeDefinition declares a key attribute's type (S, N or B).
type AttributeDefinition struct {
	AttributeName string
	AttributeType string
}

// KeyElement is one part of a key schema (KeyType HASH or RANGE).
type KeyElement struct {
	AttributeName string
	KeyType       string
}

// Index is a secondary index; global and local ones share the shape.
type Index struct {
	IndexName  string
	KeySchema  []KeyElement
	Projection Projection
}

// GSI is a global secondary index.
type GSI = Index

// Projection selects the attributes copied into an index.
type Projection struct {
	ProjectionType   string // ALL, KEYS_ONLY or INCLUDE
	NonKeyAttributes []string
}

// Queue is an AWS::SQS::Queue. Absent properties carry SQS's defaults
// (VisibilityTimeout 30, MessageRetentionPeriod 345600,
// MaximumMessageSize 262144).
type Queue struct {
	LogicalID                     string
	QueueName                     string // "" when CloudFormation names it
	FIFO                          bool
	VisibilityTimeout             int // seconds
	MessageRetentionPeriod        int // seconds
	ReceiveMessageWaitTimeSeconds int
	DelaySeconds                  int
	MaximumMessageSize            int // bytes
	RedrivePolicy                 *RedrivePolicy
}

// RedrivePolicy sends a message to DeadLetterQueue after MaxReceiveCount
// receives.
type RedrivePolicy struct {
	DeadLetterQueue string // logical id
	MaxReceiveCount int
}

// Api is an AWS::Serverless::Api with Globals.Api merged in.
type Api struct {
	LogicalID         string
	StageName         string
	BinaryMediaTypes  []string // with SAM's "~1" decoded to "/"
	DefaultAuthorizer string
	Authorizers       map[string]Authorizer
	GatewayResponses  map[string]GatewayResponse // by response type, e.g. ACCESS_DENIED
	OpenApiVersion    string                     // "" = SAM's default (Swagger 2.0 plus a stage named Stage)
	// Definition holds the routes of DefinitionBody: each operation's
	// x-amazon-apigateway-integration names the function it invokes.
	Definition []DefinitionRoute
	// Cors is the Api's Cors property; nil when it has none.
	Cors *Cors
	// CorsPreflightAuthorized is Auth.AddDefaultAuthorizerToCorsPreflight
	// (SAM's default: true): the preflights SAM adds are guarded by the
	// default authorizer. False without Cors.
	CorsPreflightAuthorized bool
}

// Cors is an Api's Cors property, values unquoted ('x' -> x). A value that
// resolved to AWS::NoValue, or is absent, is "": that header is not sent.
type Cors struct {
	AllowOrigin, AllowHeaders, AllowMethods, MaxAge string
	AllowCredentials                                bool
}

// Preflight is an OPTIONS method SAM adds for an Api's Cors: a mock
// integration answering 200 with the CORS headers, whatever the request.
type Preflight struct {
	Path       string
	Api        string // logical id
	Authorizer string // "" = none
	Headers    map[string]string
}

// corsAllMethods is what SAM puts in Access-Control-Allow-Methods for a
// path with an ANY method.
var corsAllMethods = []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"}

// Preflights lists the OPTIONS methods SAM adds to the DefinitionBody of
// every Api with Cors, as the SAM translator does: one per path that has
// no OPTIONS operation of its own, answering with the same headers
// whatever the request's origin, methods or headers. Sorted by path.
func (t *Template) Preflights() []Preflight {
	var out []Preflight
	for _, a := range t.Apis {
		if a.Cors == nil {
			continue
		}
		methods := map[string][]string{}
		for _, d := range a.Definition {
			methods[d.Path] = append(methods[d.Path], d.Method)
		}
		for path, ms := range methods {
			if slices.Contains(ms, "OPTIONS") {
				continue
			}
			h := map[string]string{}
			if a.Cors.AllowOrigin != "" {
				h["Access-Control-Allow-Origin"] = a.Cors.AllowOrigin
			}
			if a.Cors.AllowHeaders != "" {
				h["Access-Control-Allow-Headers"] = a.Cors.AllowHeaders
			}
			allow := a.Cors.AllowMethods
			if allow == "" {
				ms = append(slices.Clone(ms), "OPTIONS")
				if slices.Contains(ms, "ANY") {
					ms = corsAllMethods
				}
				slices.Sort(ms)
				allow = strings.Join(slices.Compact(ms), ",")
			}
			h["Access-Control-Allow-Methods"] = allow
			if a.Cors.MaxAge != "" {
				h["Access-Control-Max-Age"] = a.Cors.MaxAge
			}
			if a.Cors.AllowCredentials {
				h["Access-Control-Allow-Credentials"] = "true"
			}
			p := Preflight{Path: path, Api: a.LogicalID, Headers: h}
			if a.CorsPreflightAuthorized {
				p.Authorizer = a.DefaultAuthorizer
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Preflight) int { return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Api, b.Api)) })
	return out
}

// DefinitionRoute is one operation of an Api's DefinitionBody.
type DefinitionRoute struct {
	Method   string // upper case; "ANY" for x-amazon-apigateway-any-method
	Path     string
	Function string // logical id, from the integration's uri
	// Security is true when the operation sets its own security list,
	// which this reader does not interpret (validate refuses it).
	Security bool
}

// Authorizer is a Lambda authorizer of an Api.
type Authorizer struct {
	// FunctionLogicalID names the authorizer function when FunctionArn is
	// !GetAtt F.Arn; otherwise it holds FunctionArn as written.
	FunctionLogicalID string
	PayloadType       string // TOKEN or REQUEST
	// ReauthorizeEvery is the policy cache TTL in seconds; nil = absent
	// (API Gateway's default, 300).
	ReauthorizeEvery     *int
	IdentityHeaders      []string // for TOKEN: the one token header (Authorization by default)
	IdentityQueryStrings []string
}

// GatewayResponse customises a response API Gateway produces itself.
type GatewayResponse struct {
	StatusCode int               // 0 = AWS default for the type
	Headers    map[string]string // values with the template's single quotes stripped
	Templates  map[string]string // content type -> body template
}

// Route is one method and path of an Api, with the authorizer that guards it.
type Route struct {
	Method     string
	Path       string
	Function   string // logical id
	Authorizer string // "" = none
	Api        string // logical id of the Api
}

// Load reads and parses the template at path.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read SAM template: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse parses a SAM template given as YAML (JSON is YAML too).
func Parse(yaml []byte) (*Template, error) { return ParseWith(yaml, nil) }

// LoadWith is Load with parameter values (a deployment's parameter
// overrides): params[name] replaces the parameter's Default.
func LoadWith(path string, params map[string]string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read SAM template: %w", err)
	}
	t, err := ParseWith(b, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseWith is Parse with parameter values, as LoadWith. A value for a
// parameter the template does not declare is refused, as CloudFormation
// does.
func ParseWith(yaml []byte, params map[string]string) (*Template, error) {
	doc, err := resolve(yaml, params)
	if err != nil {
		return nil, err
	}
	t, err := build(doc)
	if err != nil {
		return nil, err
	}
	for name, v := range params {
		if _, ok := t.Parameters[name]; !ok {
			return nil, fmt.Errorf("parameter %s: the template declares no such parameter", name)
		}
		t.Parameters[name] = v
	}
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("invalid SAM template: %w", err)
	}
	return t, nil
}

// Routes lists every Api event and every operation of an Api's
// DefinitionBody as a route, sorted by path, method and API. The
// authorizer is resolved: "" means the route is not guarded. SAM puts the
// Api's DefaultAuthorizer on every DefinitionBody operation.
func (t *Template) Routes() []Route {
	var rs []Route
	for _, a := range t.Apis {
		for _, d := range a.Definition {
			rs = append(rs, Route{Method: d.Method, Path: d.Path, Function: d.Function, Authorizer: a.DefaultAuthorizer, Api: a.LogicalID})
		}
	}
	for _, f := range t.Functions {
		for _, ev := range f.Events {
			if ev.Api == nil {
				continue
			}
			rs = append(rs, Route{
				Method:     ev.Api.Method,
				Path:       ev.Api.Path,
				Function:   f.LogicalID,
				Authorizer: t.effectiveAuthorizer(*ev.Api),
				Api:        ev.Api.RestAPI,
			})
		}
	}
	slices.SortFunc(rs, func(a, b Route) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Method, b.Method), cmp.Compare(a.Api, b.Api))
	})
	return rs
}

func (t *Template) effectiveAuthorizer(ev ApiEvent) string {
	switch ev.Authorizer {
	case "NONE":
		return ""
	case "":
		return t.Apis[ev.RestAPI].DefaultAuthorizer
	default:
		return ev.Authorizer
	}
}

// rawDoc is the template after intrinsic processing; resources stay raw so
// Globals can be merged before decoding into typed structs.
type rawDoc struct {
	Parameters map[string]struct {
		Default any
	}
	Globals struct {
		Function map[string]any
		Api      map[string]any
	}
	Resources map[string]struct {
		Type                string
		Properties          map[string]any
		Metadata            map[string]any
		DeletionPolicy      string
		UpdateReplacePolicy string
	}
	Outputs map[string]struct {
		Description string
		Value       any
	}
}

const implicitApi = "ServerlessRestApi"

func build(j []byte) (*Template, error) {
	var doc rawDoc
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("decode processed template: %w", err)
	}
	t := &Template{
		Parameters: map[string]string{},
		Functions:  map[string]Function{},
		Tables:     map[string]Table{},
		Queues:     map[string]Queue{},
		Apis:       map[string]Api{},
		Resources:  map[string]Resource{},
		Outputs:    map[string]Output{},
	}
	for name, o := range doc.Outputs {
		t.Outputs[name] = Output{Description: o.Description, Value: o.Value}
	}
	for name, p := range doc.Parameters {
		t.Parameters[name] = scalarString(p.Default)
	}
	var errs []error
	for _, id := range sortedKeys(doc.Resources) {
		r := doc.Resources[id]
		t.Resources[id] = Resource{LogicalID: id, Type: r.Type, Properties: r.Properties, Metadata: r.Metadata,
			DeletionPolicy: r.DeletionPolicy, UpdateReplacePolicy: r.UpdateReplacePolicy}
		var err error
		switch r.Type {
		case "AWS::Serverless::Function":
			var f Function
			f, err = decodeFunction(id, mergeGlobals(doc.Globals.Function, r.Properties))
			f.BuildMethod, _ = r.Metadata["BuildMethod"].(string)
			t.Functions[id] = f
		case "AWS::Serverless::Api":
			var a Api
			a, err = decodeApi(id, mergeGlobals(doc.Globals.Api, r.Properties))
			t.Apis[id] = a
		case "AWS::DynamoDB::Table":
			var tb Table
			tb, err = decodeTable(id, r.Properties)
			tb.DeletionPolicy, tb.UpdateReplacePolicy = r.DeletionPolicy, r.UpdateReplacePolicy
			t.Tables[id] = tb
		case "AWS::Serverless::SimpleTable":
			var tb Table
			tb, err = decodeSimpleTable(id, r.Properties)
			t.Tables[id] = tb
		case "AWS::SQS::Queue":
			var q Queue
			q, err = decodeQueue(id, r.Properties)
			t.Queues[id] = q
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("resource %s (%s): %w", id, r.Type, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// SAM creates ServerlessRestApi (stage "Prod") for Api events without
	// RestApiId; it takes Globals.Api like any other Api.
	if _, ok := t.Apis[implicitApi]; !ok && t.usesApi(implicitApi) {
		a, err := decodeApi(implicitApi, mergeGlobals(doc.Globals.Api, map[string]any{"StageName": "Prod"}))
		if err != nil {
			return nil, fmt.Errorf("implicit API %s: %w", implicitApi, err)
		}
		t.Apis[implicitApi] = a
	}
	t.link()
	return t, nil
}

func (t *Template) usesApi(id string) bool {
	for _, f := range t.Functions {
		for _, ev := range f.Events {
			if ev.Api != nil && ev.Api.RestAPI == id {
				return true
			}
		}
	}
	return false
}

// mergeGlobals applies SAM's Globals rules: maps merge key by key, lists
// are concatenated (Globals first), anything else in the resource wins.
func mergeGlobals(global, local map[string]any) map[string]any {
	if len(global) == 0 {
		return local
	}
	m, _ := mergeValue(global, local).(map[string]any)
	return m
}

func mergeValue(global, local any) any {
	switch g := global.(type) {
	case map[string]any:
		l, ok := local.(map[string]any)
		if !ok {
			break
		}
		out := make(map[string]any, len(g)+len(l))
		for k, v := range g {
			out[k] = v
		}
		for k, v := range l {
			if gv, ok := out[k]; ok {
				out[k] = mergeValue(gv, v)
			} else {
				out[k] = v
			}
		}
		return out
	case []any:
		if l, ok := local.([]any); ok {
			return append(slices.Clone(g), l...)
		}
	}
	if local == nil {
		return global
	}
	return local
}

// decodeInto re-encodes a raw property map into a typed raw struct.
func decodeInto(props map[string]any, v any) error {
	b, err := json.Marshal(props)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("properties: %w", err)
	}
	return nil
}

// flexInt accepts 10 and "10": CloudFormation takes both.
type flexInt struct {
	set bool
	v   int
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var n json.Number
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		n = json.Number(strings.TrimSpace(s))
	} else if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	i, err := n.Int64()
	if err != nil {
		return fmt.Errorf("want an integer, got %s", b)
	}
	f.set, f.v = true, int(i)
	return nil
}

func (f flexInt) or(def int) int {
	if f.set {
		return f.v
	}
	return def
}

// flexBool accepts true and "true".
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	switch strings.ToLower(strings.Trim(string(b), `"`)) {
	case "true":
		*f = true
	case "false", "null", "":
		*f = false
	default:
		return fmt.Errorf("want a boolean, got %s", b)
	}
	return nil
}

// flexString accepts any scalar, since YAML turns `X: 10` into a number.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v.(type) {
	case map[string]any, []any:
		return fmt.Errorf("want a scalar, got %s", b)
	}
	*f = flexString(scalarString(v))
	return nil
}

func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case []any:
		// CommaDelimitedList defaults may be written as lists.
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarString(e)
		}
		return strings.Join(parts, ",")
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// refTarget turns "X.Arn" (what !GetAtt X.Arn resolves to here) into "X".
func refTarget(s, attr string) string {
	return strings.TrimSuffix(s, "."+attr)
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
