package sam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

type rawFunction struct {
	CodeUri       json.RawMessage
	Handler       string
	Runtime       string
	Architectures []string
	Timeout       flexInt
	MemorySize    flexInt
	Environment   struct {
		Variables map[string]flexString
	}
	Events map[string]struct {
		Type       string
		Properties json.RawMessage
	}
}

type rawApiEvent struct {
	Path      string
	Method    string
	RestApiId string
	Auth      struct {
		Authorizer string
	}
}

type rawSQSEvent struct {
	Queue                          string
	BatchSize                      flexInt
	MaximumBatchingWindowInSeconds flexInt
	FunctionResponseTypes          []string
	ScalingConfig                  struct {
		MaximumConcurrency flexInt
	}
}

type rawScheduleEvent struct {
	Schedule string
	Name     string
	Input    string
	Enabled  *flexBool
	State    string // DISABLED turns the rule off like Enabled: false
}

func decodeFunction(id string, props map[string]any) (Function, error) {
	var r rawFunction
	if err := decodeInto(props, &r); err != nil {
		return Function{}, err
	}
	f := Function{
		LogicalID:     id,
		CodeURI:       codeURI(r.CodeUri),
		Handler:       r.Handler,
		Runtime:       r.Runtime,
		Architectures: r.Architectures,
		Timeout:       r.Timeout.or(3),
		MemorySize:    r.MemorySize.or(128),
		Environment:   map[string]string{},
	}
	if len(f.Architectures) == 0 {
		f.Architectures = []string{"x86_64"}
	}
	for k, v := range r.Environment.Variables {
		f.Environment[k] = string(v)
	}
	for _, name := range sortedKeys(r.Events) {
		re := r.Events[name]
		if len(re.Properties) == 0 {
			re.Properties = json.RawMessage("{}")
		}
		ev := Event{Name: name, Type: re.Type}
		switch re.Type {
		case "Api":
			var a rawApiEvent
			if err := json.Unmarshal(re.Properties, &a); err != nil {
				return f, fmt.Errorf("event %s: %w", name, err)
			}
			restAPI := a.RestApiId
			if restAPI == "" {
				restAPI = implicitApi
			}
			ev.Api = &ApiEvent{
				Path:       normalisePath(a.Path),
				Method:     strings.ToUpper(a.Method),
				RestAPI:    restAPI,
				Authorizer: a.Auth.Authorizer,
			}
		case "SQS":
			var s rawSQSEvent
			if err := json.Unmarshal(re.Properties, &s); err != nil {
				return f, fmt.Errorf("event %s: %w", name, err)
			}
			ev.SQS = &SQSEvent{
				Queue:                          refTarget(s.Queue, "Arn"),
				BatchSize:                      s.BatchSize.or(10),
				MaximumBatchingWindowInSeconds: s.MaximumBatchingWindowInSeconds.or(0),
				FunctionResponseTypes:          s.FunctionResponseTypes,
				MaximumConcurrency:             s.ScalingConfig.MaximumConcurrency.or(0),
			}
		case "Schedule":
			var s rawScheduleEvent
			if err := json.Unmarshal(re.Properties, &s); err != nil {
				return f, fmt.Errorf("event %s: %w", name, err)
			}
			enabled := s.Enabled == nil || bool(*s.Enabled)
			if strings.EqualFold(s.State, "DISABLED") {
				enabled = false
			}
			ev.Schedule = &ScheduleEvent{Schedule: strings.TrimSpace(s.Schedule), Name: s.Name, Input: s.Input, Enabled: enabled}
		}
		f.Events = append(f.Events, ev)
	}
	return f, nil
}

// codeURI flattens CodeUri, which is either a path or {Bucket, Key}.
func codeURI(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var loc struct{ Bucket, Key string }
	if json.Unmarshal(raw, &loc) == nil && loc.Bucket != "" {
		return "s3://" + loc.Bucket + "/" + loc.Key
	}
	return ""
}

type rawApi struct {
	StageName      string
	OpenApiVersion flexString
	DefinitionBody struct {
		Paths map[string]map[string]json.RawMessage
	}
	BinaryMediaTypes []string
	// Cors is SAM's string form (the origin) or its object form.
	Cors json.RawMessage
	Auth struct {
		DefaultAuthorizer                   string
		AddDefaultAuthorizerToCorsPreflight *flexBool
		Authorizers                         map[string]struct {
			FunctionArn         string
			FunctionPayloadType string
			Identity            struct {
				Header           string
				Headers          []string
				QueryStrings     []string
				ReauthorizeEvery flexInt
			}
		}
	}
	GatewayResponses map[string]struct {
		StatusCode         flexInt
		ResponseParameters struct {
			Headers map[string]string
		}
		ResponseTemplates map[string]string
	}
}

func decodeApi(id string, props map[string]any) (Api, error) {
	var r rawApi
	if err := decodeInto(props, &r); err != nil {
		return Api{}, err
	}
	a := Api{
		LogicalID:         id,
		StageName:         r.StageName,
		DefaultAuthorizer: r.Auth.DefaultAuthorizer,
		Authorizers:       map[string]Authorizer{},
		GatewayResponses:  map[string]GatewayResponse{},
		OpenApiVersion:    string(r.OpenApiVersion),
	}
	defs, err := decodeDefinition(r.DefinitionBody.Paths)
	if err != nil {
		return a, err
	}
	a.Definition = defs
	if a.Cors, err = decodeCors(r.Cors); err != nil {
		return a, err
	}
	// SAM guards the preflights it adds with the default authorizer
	// unless told not to.
	a.CorsPreflightAuthorized = a.Cors != nil && (r.Auth.AddDefaultAuthorizerToCorsPreflight == nil || bool(*r.Auth.AddDefaultAuthorizerToCorsPreflight))
	for _, t := range r.BinaryMediaTypes {
		// SAM writes "/" as "~1" (JSON pointer escaping) in BinaryMediaTypes.
		a.BinaryMediaTypes = append(a.BinaryMediaTypes, strings.ReplaceAll(t, "~1", "/"))
	}
	for name, ra := range r.Auth.Authorizers {
		au := Authorizer{
			FunctionLogicalID:    refTarget(ra.FunctionArn, "Arn"),
			PayloadType:          strings.ToUpper(ra.FunctionPayloadType),
			IdentityHeaders:      ra.Identity.Headers,
			IdentityQueryStrings: ra.Identity.QueryStrings,
		}
		if au.PayloadType == "" {
			au.PayloadType = "TOKEN" // SAM's default
		}
		if au.PayloadType == "TOKEN" {
			h := ra.Identity.Header
			if h == "" {
				h = "Authorization"
			}
			au.IdentityHeaders = []string{h}
		}
		if ra.Identity.ReauthorizeEvery.set {
			v := ra.Identity.ReauthorizeEvery.v
			au.ReauthorizeEvery = &v
		}
		a.Authorizers[name] = au
	}
	for typ, rg := range r.GatewayResponses {
		g := GatewayResponse{
			StatusCode: rg.StatusCode.or(0),
			Headers:    map[string]string{},
			Templates:  map[string]string{},
		}
		for k, v := range rg.ResponseParameters.Headers {
			if v == "" {
				// !Ref AWS::NoValue (an !If's other branch): no header.
				continue
			}
			// Header values are mapping expressions: 'literal' in quotes.
			g.Headers[k] = unquote(v)
		}
		for k, v := range rg.ResponseTemplates {
			g.Templates[k] = v
		}
		a.GatewayResponses[typ] = g
	}
	return a, nil
}

// Operation keys of an OpenAPI path item; the rest (parameters, summary,
// ...) are not operations.
var operationMethods = map[string]string{
	"get": "GET", "put": "PUT", "post": "POST", "delete": "DELETE", "options": "OPTIONS",
	"head": "HEAD", "patch": "PATCH", "x-amazon-apigateway-any-method": "ANY",
}

// lambdaURI matches a Lambda proxy integration's uri after resolve:
// ${F.Arn} in the Fn::Sub stays "F.Arn".
var lambdaURI = regexp.MustCompile(`^arn:[a-z-]+:apigateway:[^:]+:lambda:path/2015-03-31/functions/([A-Za-z0-9]+)\.Arn/invocations$`)

func decodeDefinition(paths map[string]map[string]json.RawMessage) ([]DefinitionRoute, error) {
	var (
		out  []DefinitionRoute
		errs []error
	)
	for _, path := range sortedKeys(paths) {
		for _, key := range sortedKeys(paths[path]) {
			method, ok := operationMethods[strings.ToLower(key)]
			if !ok {
				continue
			}
			var op struct {
				Security    *json.RawMessage `json:"security"`
				Integration *struct {
					Type       string `json:"type"`
					HTTPMethod string `json:"httpMethod"`
					URI        string `json:"uri"`
				} `json:"x-amazon-apigateway-integration"`
			}
			if err := json.Unmarshal(paths[path][key], &op); err != nil {
				errs = append(errs, fmt.Errorf("DefinitionBody %s %s: %w", method, path, err))
				continue
			}
			in := op.Integration
			if in == nil || !strings.EqualFold(in.Type, "aws_proxy") || !strings.EqualFold(in.HTTPMethod, "POST") {
				errs = append(errs, fmt.Errorf("DefinitionBody %s %s: want an x-amazon-apigateway-integration of type aws_proxy with httpMethod POST", method, path))
				continue
			}
			m := lambdaURI.FindStringSubmatch(in.URI)
			if m == nil {
				errs = append(errs, fmt.Errorf("DefinitionBody %s %s: integration uri %q does not invoke a function of this template (use !Sub ...functions/${F.Arn}/invocations)", method, path, in.URI))
				continue
			}
			out = append(out, DefinitionRoute{Method: method, Path: normalisePath(path), Function: m[1], Security: op.Security != nil})
		}
	}
	return out, errors.Join(errs...)
}

type rawKey struct {
	AttributeName string
	KeyType       string
}

type rawIndex struct {
	IndexName  string
	KeySchema  []rawKey
	Projection struct {
		ProjectionType   string
		NonKeyAttributes []string
	}
}

type rawTable struct {
	TableName                 string
	DeletionProtectionEnabled flexBool
	BillingMode               string
	ProvisionedThroughput     json.RawMessage
	AttributeDefinitions      []struct {
		AttributeName string
		AttributeType string
	}
	KeySchema               []rawKey
	GlobalSecondaryIndexes  []rawIndex
	LocalSecondaryIndexes   []rawIndex
	TimeToLiveSpecification struct {
		AttributeName string
		Enabled       flexBool
	}
}

func decodeTable(id string, props map[string]any) (Table, error) {
	var r rawTable
	if err := decodeInto(props, &r); err != nil {
		return Table{}, err
	}
	t := Table{
		LogicalID:          id,
		TableName:          r.TableName,
		BillingMode:        r.BillingMode,
		DeletionProtection: bool(r.DeletionProtectionEnabled),
	}
	if t.BillingMode == "" {
		t.BillingMode = "PROVISIONED" // CloudFormation's default
	}
	for _, d := range r.AttributeDefinitions {
		t.AttributeDefinitions = append(t.AttributeDefinitions, AttributeDefinition(d))
	}
	t.KeySchema = keys(r.KeySchema)
	for _, i := range r.GlobalSecondaryIndexes {
		t.GlobalSecondaryIndexes = append(t.GlobalSecondaryIndexes, index(i))
	}
	for _, i := range r.LocalSecondaryIndexes {
		t.LocalSecondaryIndexes = append(t.LocalSecondaryIndexes, index(i))
	}
	if r.TimeToLiveSpecification.Enabled {
		t.TTLAttribute = r.TimeToLiveSpecification.AttributeName
	}
	return t, nil
}

func keys(rk []rawKey) []KeyElement {
	var ks []KeyElement
	for _, k := range rk {
		ks = append(ks, KeyElement{AttributeName: k.AttributeName, KeyType: strings.ToUpper(k.KeyType)})
	}
	return ks
}

func index(r rawIndex) Index {
	return Index{
		IndexName: r.IndexName,
		KeySchema: keys(r.KeySchema),
		Projection: Projection{
			ProjectionType:   r.Projection.ProjectionType,
			NonKeyAttributes: r.Projection.NonKeyAttributes,
		},
	}
}

// decodeSimpleTable expands AWS::Serverless::SimpleTable the way SAM does:
// a hash key only (default "id" of type String), on-demand unless
// ProvisionedThroughput is given.
func decodeSimpleTable(id string, props map[string]any) (Table, error) {
	var r struct {
		TableName  string
		PrimaryKey struct {
			Name string
			Type string
		}
		ProvisionedThroughput json.RawMessage
	}
	if err := decodeInto(props, &r); err != nil {
		return Table{}, err
	}
	name, typ := r.PrimaryKey.Name, r.PrimaryKey.Type
	if name == "" {
		name, typ = "id", "String"
	}
	short := map[string]string{"String": "S", "Number": "N", "Binary": "B"}[typ]
	if short == "" {
		return Table{}, fmt.Errorf("PrimaryKey.Type %q: want String, Number or Binary", typ)
	}
	billing := "PAY_PER_REQUEST"
	if len(r.ProvisionedThroughput) > 0 && string(r.ProvisionedThroughput) != "null" {
		billing = "PROVISIONED"
	}
	return Table{
		LogicalID:            id,
		TableName:            r.TableName,
		AttributeDefinitions: []AttributeDefinition{{AttributeName: name, AttributeType: short}},
		KeySchema:            []KeyElement{{AttributeName: name, KeyType: "HASH"}},
		BillingMode:          billing,
	}, nil
}

type rawQueue struct {
	QueueName                     string
	FifoQueue                     flexBool
	VisibilityTimeout             flexInt
	MessageRetentionPeriod        flexInt
	ReceiveMessageWaitTimeSeconds flexInt
	DelaySeconds                  flexInt
	MaximumMessageSize            flexInt
	RedrivePolicy                 json.RawMessage
}

func decodeQueue(id string, props map[string]any) (Queue, error) {
	var r rawQueue
	if err := decodeInto(props, &r); err != nil {
		return Queue{}, err
	}
	q := Queue{
		LogicalID:                     id,
		QueueName:                     r.QueueName,
		FIFO:                          bool(r.FifoQueue),
		VisibilityTimeout:             r.VisibilityTimeout.or(30),
		MessageRetentionPeriod:        r.MessageRetentionPeriod.or(345600),
		ReceiveMessageWaitTimeSeconds: r.ReceiveMessageWaitTimeSeconds.or(0),
		DelaySeconds:                  r.DelaySeconds.or(0),
		MaximumMessageSize:            r.MaximumMessageSize.or(262144),
	}
	if len(r.RedrivePolicy) > 0 && string(r.RedrivePolicy) != "null" {
		raw := r.RedrivePolicy
		// CloudFormation takes the policy as an object or as a JSON string.
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = json.RawMessage(s)
		}
		var rp struct {
			DeadLetterTargetArn string  `json:"deadLetterTargetArn"`
			MaxReceiveCount     flexInt `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal(raw, &rp); err != nil {
			return q, fmt.Errorf("RedrivePolicy: %w", err)
		}
		q.RedrivePolicy = &RedrivePolicy{
			DeadLetterQueue: refTarget(rp.DeadLetterTargetArn, "Arn"),
			MaxReceiveCount: rp.MaxReceiveCount.or(0),
		}
	}
	return q, nil
}

// unquote turns a static mapping expression ('literal') into its value.
func unquote(v string) string {
	return strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
}

// decodeCors reads an Api's Cors property: SAM takes a string (the
// AllowOrigin) or an object. Values are static mapping expressions, kept
// unquoted; one that resolved to AWS::NoValue is "" (not sent).
func decodeCors(raw json.RawMessage) (*Cors, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var origin string
	if json.Unmarshal(raw, &origin) == nil {
		return &Cors{AllowOrigin: unquote(origin)}, nil
	}
	var rc struct {
		AllowOrigin, AllowHeaders, AllowMethods, MaxAge flexString
		AllowCredentials                                flexBool
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // SAM refuses other keys
	if err := dec.Decode(&rc); err != nil {
		return nil, fmt.Errorf("Cors: %w", err)
	}
	c := &Cors{AllowOrigin: unquote(string(rc.AllowOrigin)), AllowHeaders: unquote(string(rc.AllowHeaders)),
		AllowMethods: unquote(string(rc.AllowMethods)), MaxAge: unquote(string(rc.MaxAge)), AllowCredentials: bool(rc.AllowCredentials)}
	return c, nil
}
