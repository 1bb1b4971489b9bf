package sam

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// link replaces literal SQS ARNs naming a queue of this template by the
// queue's logical id, so every queue reference is a logical id afterwards.
func (t *Template) link() {
	byName := map[string]string{}
	for id, q := range t.Queues {
		if q.QueueName != "" {
			byName[q.QueueName] = id
		}
	}
	resolve := func(ref string) string {
		if _, ok := t.Queues[ref]; ok || !strings.HasPrefix(ref, "arn:") {
			return ref
		}
		if id, ok := byName[ref[strings.LastIndex(ref, ":")+1:]]; ok {
			return id
		}
		return ref
	}
	for _, f := range t.Functions {
		for _, ev := range f.Events {
			if ev.SQS != nil {
				ev.SQS.Queue = resolve(ev.SQS.Queue)
			}
		}
	}
	for id, q := range t.Queues {
		if q.RedrivePolicy != nil {
			q.RedrivePolicy.DeadLetterQueue = resolve(q.RedrivePolicy.DeadLetterQueue)
			t.Queues[id] = q
		}
	}
}

// validate refuses what SAM, CloudFormation or API Gateway would refuse at
// deploy time. All problems are reported at once, in a stable order.
func (t *Template) validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for _, id := range sortedKeys(t.Functions) {
		t.validateFunction(t.Functions[id], add)
	}
	errs = append(errs, t.validateRoutes()...)
	for _, id := range sortedKeys(t.Apis) {
		t.validateApi(t.Apis[id], add)
	}
	for _, id := range sortedKeys(t.Tables) {
		validateTable(t.Tables[id], add)
	}
	for _, id := range sortedKeys(t.Queues) {
		t.validateQueue(t.Queues[id], add)
	}
	return errors.Join(errs...)
}

var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "ANY"}

func (t *Template) validateFunction(f Function, add func(string, ...any)) {
	if len(f.Architectures) != 1 || !slices.Contains([]string{"x86_64", "arm64"}, f.Architectures[0]) {
		add("function %s: Architectures %v: Lambda takes exactly one of x86_64, arm64 (Globals lists are concatenated)", f.LogicalID, f.Architectures)
	}
	if f.Timeout < 1 || f.Timeout > 900 {
		add("function %s: Timeout %d outside 1..900", f.LogicalID, f.Timeout)
	}
	if f.MemorySize < 128 || f.MemorySize > 10240 {
		add("function %s: MemorySize %d outside 128..10240", f.LogicalID, f.MemorySize)
	}
	for _, ev := range f.Events {
		where := fmt.Sprintf("function %s event %s", f.LogicalID, ev.Name)
		switch {
		case ev.Api != nil:
			a := ev.Api
			if !strings.HasPrefix(a.Path, "/") {
				add("%s: Path %q must start with /", where, a.Path)
			}
			if !slices.Contains(httpMethods, a.Method) {
				add("%s: Method %q is not one of %v", where, a.Method, httpMethods)
			}
			api, ok := t.Apis[a.RestAPI]
			if !ok {
				add("%s: RestApiId %q is not an AWS::Serverless::Api of this template", where, a.RestAPI)
				continue
			}
			switch a.Authorizer {
			case "", "NONE", "AWS_IAM":
			default:
				if _, ok := api.Authorizers[a.Authorizer]; !ok {
					add("%s: Authorizer %q is not defined in Api %s", where, a.Authorizer, api.LogicalID)
				}
			}
		case ev.SQS != nil:
			s := ev.SQS
			q, ok := t.Queues[s.Queue]
			if !ok {
				add("%s: Queue %q is not an AWS::SQS::Queue of this template", where, s.Queue)
			}
			maxBatch := 10000
			if ok && q.FIFO {
				maxBatch = 10
			}
			if s.BatchSize < 1 || s.BatchSize > maxBatch {
				add("%s: BatchSize %d outside 1..%d", where, s.BatchSize, maxBatch)
			}
			if s.MaximumBatchingWindowInSeconds < 0 || s.MaximumBatchingWindowInSeconds > 300 {
				add("%s: MaximumBatchingWindowInSeconds %d outside 0..300", where, s.MaximumBatchingWindowInSeconds)
			}
			if s.BatchSize > 10 && s.MaximumBatchingWindowInSeconds < 1 {
				add("%s: BatchSize %d above 10 needs MaximumBatchingWindowInSeconds of at least 1", where, s.BatchSize)
			}
			for _, rt := range s.FunctionResponseTypes {
				if rt != "ReportBatchItemFailures" {
					add("%s: FunctionResponseTypes %q: only ReportBatchItemFailures exists", where, rt)
				}
			}
			if s.MaximumConcurrency != 0 && (s.MaximumConcurrency < 2 || s.MaximumConcurrency > 1000) {
				add("%s: ScalingConfig.MaximumConcurrency %d outside 2..1000", where, s.MaximumConcurrency)
			}
		case ev.Schedule != nil:
			sc := ev.Schedule
			if !strings.HasPrefix(sc.Schedule, "rate(") && !strings.HasPrefix(sc.Schedule, "cron(") {
				add("%s: Schedule %q: want rate(...) or cron(...)", where, sc.Schedule)
			}
			if sc.Input != "" && !json.Valid([]byte(sc.Input)) {
				add("%s: Input is not valid JSON", where)
			}
		}
	}
}

// pathNode is one resource of an API's resource tree, as API Gateway builds
// it from the route paths.
type pathNode struct {
	literals map[string]*pathNode
	param    string // name of the one path-parameter child ("" = none)
	paramBy  string // the route that introduced it, for the error message
	paramKid *pathNode
}

func newPathNode() *pathNode { return &pathNode{literals: map[string]*pathNode{}} }

// validateRoutes refuses duplicate method+path pairs and sibling path
// parameters with different names under one resource: API Gateway keeps a
// single {param} child per resource, so /a/{id}/x and /a/{a_id}/y conflict.
func (t *Template) validateRoutes() []error {
	var errs []error
	roots := map[string]*pathNode{}
	seen := map[string]string{} // api method path -> function.event
	type decl struct{ api, method, path, who string }
	var decls []decl
	for _, fid := range sortedKeys(t.Functions) {
		for _, ev := range t.Functions[fid].Events {
			if a := ev.Api; a != nil {
				decls = append(decls, decl{a.RestAPI, a.Method, a.Path, fid + "." + ev.Name})
			}
		}
	}
	for _, aid := range sortedKeys(t.Apis) {
		for _, d := range t.Apis[aid].Definition {
			decls = append(decls, decl{aid, d.Method, d.Path, aid + ".DefinitionBody"})
		}
	}
	for _, a := range decls {
		if !strings.HasPrefix(a.path, "/") {
			continue
		}
		who := a.who
		path := normalisePath(a.path)
		key := a.api + " " + a.method + " " + path
		if prev, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("api %s: %s %s is declared twice (%s and %s)", a.api, a.method, path, prev, who))
			continue
		}
		seen[key] = who
		root := roots[a.api]
		if root == nil {
			root = newPathNode()
			roots[a.api] = root
		}
		if err := root.add(path, who); err != nil {
			errs = append(errs, fmt.Errorf("api %s: %w", a.api, err))
		}
	}
	return errs
}

// validateDefinition checks an Api's DefinitionBody operations: each
// invokes a function of this template that API Gateway may invoke. SAM
// writes the AWS::Lambda::Permission for Api events; for DefinitionBody
// operations the template must, or every call is a 500 on AWS while the
// local gateway works.
func (t *Template) validateDefinition(a Api, add func(string, ...any)) {
	invokable := t.apiInvokable(a.LogicalID)
	for _, d := range a.Definition {
		where := fmt.Sprintf("api %s: DefinitionBody %s %s", a.LogicalID, d.Method, d.Path)
		if !slices.Contains(httpMethods, d.Method) {
			add("%s: method %q is not one of %v", where, d.Method, httpMethods)
		}
		if _, ok := t.Functions[d.Function]; !ok {
			add("%s: integration invokes %q, which is not an AWS::Serverless::Function of this template", where, d.Function)
			continue
		}
		if !invokable[d.Function] {
			add("%s: function %s has no AWS::Lambda::Permission for apigateway.amazonaws.com with a SourceArn on this API", where, d.Function)
		}
		if d.Security {
			add("%s: per-operation security is not supported here; guard routes with Auth.DefaultAuthorizer", where)
		}
	}
}

// apiInvokable lists the functions an AWS::Lambda::Permission lets API
// Gateway invoke from the API api (SourceArn naming the API's id).
func (t *Template) apiInvokable(api string) map[string]bool {
	ok := map[string]bool{}
	for _, r := range t.Resources {
		if r.Type != "AWS::Lambda::Permission" {
			continue
		}
		p := r.Properties
		fn, _ := p["FunctionName"].(string)
		src, _ := p["SourceArn"].(string)
		if p["Principal"] != "apigateway.amazonaws.com" || p["Action"] != "lambda:InvokeFunction" {
			continue
		}
		// After resolve, ${Api} in the Fn::Sub is the logical id.
		if strings.HasPrefix(src, "arn:") && strings.Contains(src, ":execute-api:") && strings.Contains(src, ":"+api+"/") {
			ok[refTarget(fn, "Arn")] = true
		}
	}
	return ok
}

func (n *pathNode) add(path, who string) error {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if path == "/" {
		segs = nil
	}
	parent := ""
	for i, s := range segs {
		if s == "" {
			return fmt.Errorf("%s (%s): empty path segment", path, who)
		}
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			name := s[1 : len(s)-1]
			if name == "" || name == "+" {
				return fmt.Errorf("%s (%s): empty path parameter name", path, who)
			}
			if strings.HasSuffix(name, "+") && i != len(segs)-1 {
				return fmt.Errorf("%s (%s): greedy parameter {%s} must be the last segment", path, who, name)
			}
			if n.param != "" && n.param != name {
				return fmt.Errorf("%s (%s): {%s} is a sibling of {%s} (from %s) under %s; API Gateway refuses sibling path parameters with different names, use one name per level",
					path, who, name, n.param, n.paramBy, parent+"/")
			}
			if n.paramKid == nil {
				n.param, n.paramBy, n.paramKid = name, who, newPathNode()
			}
			n = n.paramKid
		} else {
			if strings.ContainsAny(s, "{}") {
				return fmt.Errorf("%s (%s): segment %q mixes text and a path parameter", path, who, s)
			}
			kid := n.literals[s]
			if kid == nil {
				kid = newPathNode()
				n.literals[s] = kid
			}
			n = kid
		}
		parent += "/" + s
	}
	return nil
}

// normalisePath drops a trailing slash: API Gateway has one resource for
// /a and /a/.
func normalisePath(p string) string {
	if len(p) > 1 {
		return strings.TrimSuffix(p, "/")
	}
	return p
}

var gatewayResponseTypes = []string{
	"ACCESS_DENIED", "API_CONFIGURATION_ERROR", "AUTHORIZER_CONFIGURATION_ERROR", "AUTHORIZER_FAILURE",
	"BAD_REQUEST_PARAMETERS", "BAD_REQUEST_BODY", "DEFAULT_4XX", "DEFAULT_5XX", "EXPIRED_TOKEN",
	"INTEGRATION_FAILURE", "INTEGRATION_TIMEOUT", "INVALID_API_KEY", "INVALID_SIGNATURE",
	"MISSING_AUTHENTICATION_TOKEN", "QUOTA_EXCEEDED", "REQUEST_TOO_LARGE", "RESOURCE_NOT_FOUND",
	"THROTTLED", "UNAUTHORIZED", "UNSUPPORTED_MEDIA_TYPE", "WAF_FILTERED",
}

func (t *Template) validateApi(a Api, add func(string, ...any)) {
	if a.StageName == "" {
		add("api %s: StageName is required", a.LogicalID)
	}
	if a.DefaultAuthorizer != "" && a.DefaultAuthorizer != "AWS_IAM" {
		if _, ok := a.Authorizers[a.DefaultAuthorizer]; !ok {
			add("api %s: DefaultAuthorizer %q is not in Auth.Authorizers", a.LogicalID, a.DefaultAuthorizer)
		}
	}
	for _, name := range sortedKeys(a.Authorizers) {
		au := a.Authorizers[name]
		where := fmt.Sprintf("api %s authorizer %s", a.LogicalID, name)
		if au.PayloadType != "TOKEN" && au.PayloadType != "REQUEST" {
			add("%s: FunctionPayloadType %q: want TOKEN or REQUEST", where, au.PayloadType)
		}
		if !strings.HasPrefix(au.FunctionLogicalID, "arn:") {
			if _, ok := t.Functions[au.FunctionLogicalID]; !ok {
				add("%s: FunctionArn %q is not a function of this template", where, au.FunctionLogicalID)
			}
		}
		if au.ReauthorizeEvery != nil && (*au.ReauthorizeEvery < 0 || *au.ReauthorizeEvery > 3600) {
			add("%s: ReauthorizeEvery %d outside 0..3600", where, *au.ReauthorizeEvery)
		}
		caching := au.ReauthorizeEvery == nil || *au.ReauthorizeEvery > 0
		if au.PayloadType == "REQUEST" && caching && len(au.IdentityHeaders)+len(au.IdentityQueryStrings) == 0 {
			add("%s: a cached REQUEST authorizer needs identity sources (or ReauthorizeEvery: 0)", where)
		}
	}
	t.validateDefinition(a, add)
	for _, typ := range sortedKeys(a.GatewayResponses) {
		if !slices.Contains(gatewayResponseTypes, typ) {
			add("api %s: GatewayResponses %q is not an API Gateway response type", a.LogicalID, typ)
		}
		if sc := a.GatewayResponses[typ].StatusCode; sc != 0 && (sc < 100 || sc > 599) {
			add("api %s: GatewayResponses %s: StatusCode %d", a.LogicalID, typ, sc)
		}
	}
}

func validateTable(tb Table, add func(string, ...any)) {
	where := "table " + tb.LogicalID
	defined := map[string]bool{}
	for _, d := range tb.AttributeDefinitions {
		if !slices.Contains([]string{"S", "N", "B"}, d.AttributeType) {
			add("%s: attribute %s has type %q, want S, N or B", where, d.AttributeName, d.AttributeType)
		}
		defined[d.AttributeName] = true
	}
	used := map[string]bool{}
	checkKeys := func(what string, ks []KeyElement) {
		if len(ks) == 0 || len(ks) > 2 || ks[0].KeyType != "HASH" || (len(ks) == 2 && ks[1].KeyType != "RANGE") {
			add("%s: %s key schema must be HASH then optionally RANGE, got %v", where, what, ks)
		}
		for _, k := range ks {
			used[k.AttributeName] = true
			if !defined[k.AttributeName] {
				add("%s: %s key %s is not in AttributeDefinitions", where, what, k.AttributeName)
			}
		}
	}
	checkKeys("table", tb.KeySchema)
	names := map[string]bool{}
	for _, ix := range append(slices.Clone(tb.GlobalSecondaryIndexes), tb.LocalSecondaryIndexes...) {
		if ix.IndexName == "" || names[ix.IndexName] {
			add("%s: index name %q missing or repeated", where, ix.IndexName)
		}
		names[ix.IndexName] = true
		checkKeys("index "+ix.IndexName, ix.KeySchema)
		if !slices.Contains([]string{"ALL", "KEYS_ONLY", "INCLUDE"}, ix.Projection.ProjectionType) {
			add("%s: index %s: ProjectionType %q, want ALL, KEYS_ONLY or INCLUDE", where, ix.IndexName, ix.Projection.ProjectionType)
		}
	}
	for _, d := range tb.AttributeDefinitions {
		if !used[d.AttributeName] {
			add("%s: attribute %s is defined but is no key of the table or an index (DynamoDB refuses that)", where, d.AttributeName)
		}
	}
	if tb.BillingMode != "PAY_PER_REQUEST" && tb.BillingMode != "PROVISIONED" {
		add("%s: BillingMode %q", where, tb.BillingMode)
	}
}

func (t *Template) validateQueue(q Queue, add func(string, ...any)) {
	where := "queue " + q.LogicalID
	if q.QueueName != "" && q.FIFO != strings.HasSuffix(q.QueueName, ".fifo") {
		add("%s: QueueName %q: FIFO queue names end in .fifo, others must not", where, q.QueueName)
	}
	ranges := []struct {
		name      string
		v, lo, hi int
	}{
		{"VisibilityTimeout", q.VisibilityTimeout, 0, 43200},
		{"MessageRetentionPeriod", q.MessageRetentionPeriod, 60, 1209600},
		{"ReceiveMessageWaitTimeSeconds", q.ReceiveMessageWaitTimeSeconds, 0, 20},
		{"DelaySeconds", q.DelaySeconds, 0, 900},
		{"MaximumMessageSize", q.MaximumMessageSize, 1024, 262144},
	}
	for _, r := range ranges {
		if r.v < r.lo || r.v > r.hi {
			add("%s: %s %d outside %d..%d", where, r.name, r.v, r.lo, r.hi)
		}
	}
	if rp := q.RedrivePolicy; rp != nil {
		dlq, ok := t.Queues[rp.DeadLetterQueue]
		switch {
		case !ok:
			add("%s: RedrivePolicy deadLetterTargetArn %q is not an AWS::SQS::Queue of this template", where, rp.DeadLetterQueue)
		case dlq.FIFO != q.FIFO:
			add("%s: dead-letter queue %s must be FIFO exactly when the queue is", where, dlq.LogicalID)
		case dlq.LogicalID == q.LogicalID:
			add("%s: a queue cannot be its own dead-letter queue", where)
		}
		if rp.MaxReceiveCount < 1 || rp.MaxReceiveCount > 1000 {
			add("%s: RedrivePolicy maxReceiveCount %d outside 1..1000", where, rp.MaxReceiveCount)
		}
	}
}
