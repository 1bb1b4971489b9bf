package sam

import (
	"reflect"
	"strings"
	"sync"
	"testing"
)

func load(t *testing.T, path string) *Template {
	t.Helper()
	tp, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return tp
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %#v\n want %#v", what, got, want)
	}
}

func TestParametersAndIntrinsics(t *testing.T) {
	tp := load(t, "testdata/full.yaml")
	eq(t, "parameters", tp.Parameters, map[string]string{"Stage": "dev", "Retention": "1209600", "NoDefault": ""})

	fn := tp.Functions["ThingsFn"]
	eq(t, "environment", fn.Environment, map[string]string{
		"TABLE_NAME": "Things",                   // Ref of a resource: its logical id (from Globals)
		"STAGE":      "dev",                      // Ref of a parameter: its default (from Globals)
		"SHARED":     "overridden",               // the function's value wins over Globals
		"QUEUE_URL":  "Jobs",                     // Ref of a queue
		"TOPIC":      "dev-us-east-1-${Literal}", // Fn::Sub with a variable map, a pseudo parameter and an escape
		"LIMIT":      "25",                       // YAML number kept as its text
	})
	eq(t, "table name via !Sub", tp.Tables["Things"].TableName, "things-dev")
	eq(t, "queue name via !Sub of AWS::StackName", tp.Queues["JobsDLQ"].QueueName, "local-jobs-dlq")
	eq(t, "retention via !Ref of a Number parameter", tp.Queues["Jobs"].MessageRetentionPeriod, 1209600)
}

func TestFunctionsMergeGlobals(t *testing.T) {
	tp := load(t, "testdata/full.yaml")
	auth := tp.Functions["AuthFn"]
	eq(t, "AuthFn", Function{
		LogicalID: "AuthFn", CodeURI: "functions/auth", Handler: "bootstrap", Runtime: "provided.al2023",
		Architectures: []string{"arm64"}, Timeout: 10, MemorySize: 128,
		Environment: map[string]string{"TABLE_NAME": "Things", "STAGE": "dev", "SHARED": "from-globals"},
	}, auth)
	fn := tp.Functions["ThingsFn"]
	eq(t, "scalars", []int{fn.Timeout, fn.MemorySize}, []int{20, 512})

	var names []string
	for _, e := range fn.Events {
		names = append(names, e.Name+":"+e.Type)
	}
	eq(t, "events sorted by name, unknown types kept", names,
		[]string{"Get:Api", "Health:Api", "Implicit:Api", "InOrder:SQS", "List:Api", "Nightly:Schedule", "Work:SQS"})

	ev := func(name string) Event {
		for _, e := range fn.Events {
			if e.Name == name {
				return e
			}
		}
		t.Fatalf("no event %s", name)
		return Event{}
	}
	eq(t, "Get", *ev("Get").Api, ApiEvent{Path: "/things/{id}", Method: "GET", RestAPI: "Api", Authorizer: "Req"})
	eq(t, "List method upper-cased", *ev("List").Api, ApiEvent{Path: "/things", Method: "GET", RestAPI: "Api"})
	eq(t, "Implicit", ev("Implicit").Api.RestAPI, "ServerlessRestApi")
	eq(t, "Work", *ev("Work").SQS, SQSEvent{Queue: "Jobs", BatchSize: 25, MaximumBatchingWindowInSeconds: 2,
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}})
	eq(t, "InOrder: literal ARN linked, default batch size", *ev("InOrder").SQS, SQSEvent{Queue: "Ordered", BatchSize: 10})
	if !ev("Work").SQS.ReportsBatchItemFailures() || ev("InOrder").SQS.ReportsBatchItemFailures() {
		t.Error("ReportsBatchItemFailures")
	}
	if e := ev("Nightly"); e.Api != nil || e.SQS != nil {
		t.Errorf("Schedule event: %+v", e)
	}
}

func TestApis(t *testing.T) {
	tp := load(t, "testdata/full.yaml")
	sixty := 60
	want := Api{
		LogicalID:         "Api",
		StageName:         "dev",
		BinaryMediaTypes:  []string{"image/png", "multipart/form-data"}, // Globals list first
		DefaultAuthorizer: "Tok",
		Authorizers: map[string]Authorizer{
			"Tok": {FunctionLogicalID: "AuthFn", PayloadType: "TOKEN", IdentityHeaders: []string{"Authorization"}},
			"Req": {FunctionLogicalID: "AuthFn", PayloadType: "REQUEST", ReauthorizeEvery: &sixty,
				IdentityHeaders: []string{"Authorization"}, IdentityQueryStrings: []string{"token"}},
		},
		GatewayResponses: map[string]GatewayResponse{
			"UNAUTHORIZED": {StatusCode: 401, Headers: map[string]string{"WWW-Authenticate": "Bearer"},
				Templates: map[string]string{"application/json": `{"error":"unauthorized"}`}},
			"DEFAULT_5XX": {Headers: map[string]string{}, Templates: map[string]string{"application/json": `{"error":"internal"}`}},
		},
	}
	eq(t, "Api", tp.Apis["Api"], want)
	implicit := tp.Apis["ServerlessRestApi"]
	eq(t, "implicit API stage", implicit.StageName, "Prod")
	eq(t, "implicit API takes Globals.Api", implicit.BinaryMediaTypes, []string{"image/png"})

	eq(t, "routes", tp.Routes(), []Route{
		{Method: "GET", Path: "/health", Function: "ThingsFn", Authorizer: "", Api: "Api"},
		{Method: "POST", Path: "/implicit", Function: "ThingsFn", Authorizer: "", Api: "ServerlessRestApi"},
		{Method: "GET", Path: "/things", Function: "ThingsFn", Authorizer: "Tok", Api: "Api"},
		{Method: "GET", Path: "/things/{id}", Function: "ThingsFn", Authorizer: "Req", Api: "Api"},
	})
}

func TestTablesAndQueues(t *testing.T) {
	tp := load(t, "testdata/full.yaml")
	eq(t, "Things", tp.Tables["Things"], Table{
		LogicalID: "Things", TableName: "things-dev",
		AttributeDefinitions: []AttributeDefinition{{"PK", "S"}, {"SK", "S"}, {"GSI1PK", "S"}, {"N", "N"}},
		KeySchema:            []KeyElement{{"PK", "HASH"}, {"SK", "RANGE"}},
		GlobalSecondaryIndexes: []GSI{{IndexName: "GSI1", KeySchema: []KeyElement{{"GSI1PK", "HASH"}, {"N", "RANGE"}},
			Projection: Projection{ProjectionType: "INCLUDE", NonKeyAttributes: []string{"name"}}}},
		TTLAttribute: "expires",
		BillingMode:  "PAY_PER_REQUEST",
	})
	eq(t, "SimpleTable", tp.Tables["Simple"], Table{
		LogicalID: "Simple", AttributeDefinitions: []AttributeDefinition{{"id", "S"}},
		KeySchema: []KeyElement{{"id", "HASH"}}, BillingMode: "PAY_PER_REQUEST",
	})
	eq(t, "Jobs", tp.Queues["Jobs"], Queue{
		LogicalID: "Jobs", VisibilityTimeout: 60, MessageRetentionPeriod: 1209600, MaximumMessageSize: 262144,
		RedrivePolicy: &RedrivePolicy{DeadLetterQueue: "JobsDLQ", MaxReceiveCount: 3},
	})
	eq(t, "Ordered (policy as JSON string, literal ARN)", tp.Queues["Ordered"], Queue{
		LogicalID: "Ordered", QueueName: "ordered.fifo", FIFO: true, VisibilityTimeout: 30,
		MessageRetentionPeriod: 345600, MaximumMessageSize: 262144,
		RedrivePolicy: &RedrivePolicy{DeadLetterQueue: "OrderedDLQ", MaxReceiveCount: 5},
	})
	eq(t, "OrderedDLQ FIFO from string", tp.Queues["OrderedDLQ"].FIFO, true)
}

func TestRefusesWhatAWSRefuses(t *testing.T) {
	cases := []struct{ file, want string }{
		{"testdata/sibling_params.yaml", "/accounts/{account_id}/entitlements/{id} (Fn.B): {account_id} is a sibling of {id} (from Fn.A) under /accounts/"},
		{"testdata/duplicate_route.yaml", "GET /things is declared twice (Fn1.A and Fn2.B)"},
		{"testdata/missing_queue.yaml", `Queue "Nope" is not an AWS::SQS::Queue`},
		{"testdata/missing_dlq.yaml", `deadLetterTargetArn "Gone" is not an AWS::SQS::Queue`},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, err := Load(c.file)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestRefusesMore(t *testing.T) {
	base := func(extra string) string {
		return "Resources:\n  Api:\n    Type: AWS::Serverless::Api\n    Properties:\n      StageName: s\n" + extra
	}
	cases := []struct{ name, yaml, want string }{
		{"unknown authorizer", base(`
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        A: {Type: Api, Properties: {RestApiId: !Ref Api, Path: /a, Method: GET, Auth: {Authorizer: Nope}}}
`), `Authorizer "Nope" is not defined`},
		{"greedy not last", base(`
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        A: {Type: Api, Properties: {RestApiId: !Ref Api, Path: "/a/{proxy+}/b", Method: GET}}
`), "greedy parameter"},
		{"param siblings at root", base(`
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        A: {Type: Api, Properties: {RestApiId: !Ref Api, Path: "/{a}", Method: GET}}
        B: {Type: Api, Properties: {RestApiId: !Ref Api, Path: "/{proxy+}", Method: ANY}}
`), "{proxy+} is a sibling of {a} (from Fn.A) under /;"},
		{"two architectures after Globals concatenation", "Globals:\n  Function:\n    Architectures: [arm64]\n" + base(`
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Architectures: [x86_64]
`), "exactly one of x86_64, arm64"},
		{"unused attribute definition", `
Resources:
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: PK, AttributeType: S}, {AttributeName: X, AttributeType: S}]
      KeySchema: [{AttributeName: PK, KeyType: HASH}]
`, "attribute X is defined but is no key"},
		{"FIFO DLQ mismatch", `
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties: {FifoQueue: true, RedrivePolicy: {deadLetterTargetArn: !GetAtt D.Arn, maxReceiveCount: 1}}
  D:
    Type: AWS::SQS::Queue
`, "must be FIFO exactly when"},
		{"big batch without window", `
Resources:
  Q:
    Type: AWS::SQS::Queue
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        W: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn, BatchSize: 100}}
`, "needs MaximumBatchingWindowInSeconds"},
		{"schedule that is neither rate nor cron", `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        S: {Type: Schedule, Properties: {Schedule: every minute}}
`, `Schedule "every minute": want rate(...) or cron(...)`},
		{"concurrency below Lambda's minimum", `
Resources:
  Q:
    Type: AWS::SQS::Queue
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        W: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn, ScalingConfig: {MaximumConcurrency: 1}}}
`, "ScalingConfig.MaximumConcurrency 1 outside 2..1000"},
		{"unknown gateway response", base(`      GatewayResponses:
        NOT_A_TYPE: {StatusCode: 400}
`), `"NOT_A_TYPE" is not an API Gateway response type`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestScheduleAndScalingEvents(t *testing.T) {
	tp, err := Parse([]byte(`
Resources:
  Q:
    Type: AWS::SQS::Queue
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Sweep: {Type: Schedule, Properties: {Schedule: rate(5 minutes), Name: sweeper}}
        Off: {Type: Schedule, Properties: {Schedule: "cron(0 12 * * ? *)", Enabled: false, Input: '{"k":1}'}}
        Disabled: {Type: Schedule, Properties: {Schedule: rate(1 hour), State: DISABLED}}
        W: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn, ScalingConfig: {MaximumConcurrency: 5}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	evs := map[string]Event{}
	for _, ev := range tp.Functions["Fn"].Events {
		evs[ev.Name] = ev
	}
	eq(t, "Sweep", *evs["Sweep"].Schedule, ScheduleEvent{Schedule: "rate(5 minutes)", Name: "sweeper", Enabled: true})
	eq(t, "Off", *evs["Off"].Schedule, ScheduleEvent{Schedule: "cron(0 12 * * ? *)", Input: `{"k":1}`, Enabled: false})
	eq(t, "Disabled", evs["Disabled"].Schedule.Enabled, false)
	eq(t, "MaximumConcurrency", evs["W"].SQS.MaximumConcurrency, 5)
}

// The project's real template must load, and what the local platform
// builds from it must match what it declares.
func TestRealTemplate(t *testing.T) {
	tp := load(t, "../../template.yaml")

	api, ok := tp.Apis["Api"]
	if !ok {
		t.Fatal("no Api")
	}
	eq(t, "stage", api.StageName, tp.Parameters["StageName"])
	if !strings.Contains(strings.Join(api.BinaryMediaTypes, ","), "multipart/form-data") {
		t.Errorf("BinaryMediaTypes %v: want multipart/form-data decoded", api.BinaryMediaTypes)
	}
	for _, m := range api.BinaryMediaTypes {
		if strings.Contains(m, "~1") {
			t.Errorf("undecoded media type %q", m)
		}
	}
	au, ok := api.Authorizers[api.DefaultAuthorizer]
	if !ok {
		t.Fatalf("default authorizer %q not defined", api.DefaultAuthorizer)
	}
	if _, ok := tp.Functions[au.FunctionLogicalID]; !ok {
		t.Errorf("authorizer function %q is not a function", au.FunctionLogicalID)
	}
	if au.ReauthorizeEvery == nil || *au.ReauthorizeEvery != 0 {
		t.Errorf("ReauthorizeEvery %v: the template turns caching off", au.ReauthorizeEvery)
	}
	for typ, g := range api.GatewayResponses {
		for k, v := range g.Headers {
			if strings.Contains(v, "'") {
				t.Errorf("%s header %s=%q still quoted", typ, k, v)
			}
		}
	}

	if len(tp.Tables) == 0 {
		t.Fatal("no table")
	}
	for id, f := range tp.Functions {
		if f.Environment["TABLE_NAME"] == "" {
			t.Errorf("%s: TABLE_NAME not merged from Globals", id)
		} else if _, ok := tp.Tables[f.Environment["TABLE_NAME"]]; !ok {
			t.Errorf("%s: TABLE_NAME %q names no table", id, f.Environment["TABLE_NAME"])
		}
		if f.Runtime == "" || f.Handler == "" || f.CodeURI == "" || len(f.Architectures) != 1 {
			t.Errorf("%s: incomplete after Globals: %+v", id, f)
		}
		for _, ev := range f.Events {
			if ev.SQS != nil && ev.SQS.Queue == "" {
				t.Errorf("%s.%s: empty queue", id, ev.Name)
			}
		}
	}

	// The two sweeps run every minute (the local platform runs them too).
	for _, id := range []string{"TaskWorkerFunction", "AggregatorFunction"} {
		n := 0
		for _, ev := range tp.Functions[id].Events {
			if ev.Schedule != nil && ev.Schedule.Enabled && ev.Schedule.Schedule != "" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d enabled Schedule events, want 1", id, n)
		}
	}

	routes := tp.Routes()
	if len(routes) == 0 {
		t.Fatal("no routes")
	}
	for _, r := range routes {
		if r.Authorizer != api.DefaultAuthorizer && r.Authorizer != "" {
			if _, ok := api.Authorizers[r.Authorizer]; !ok {
				t.Errorf("route %s %s: authorizer %q undefined", r.Method, r.Path, r.Authorizer)
			}
		}
		if _, ok := tp.Functions[r.Function]; !ok {
			t.Errorf("route %s %s: function %q undefined", r.Method, r.Path, r.Function)
		}
	}
	for i := 1; i < len(routes); i++ {
		a, b := routes[i-1], routes[i]
		if a.Path > b.Path || (a.Path == b.Path && a.Method >= b.Method) {
			t.Errorf("routes not sorted or duplicated: %v then %v", a, b)
		}
	}

	for id, q := range tp.Queues {
		if q.RedrivePolicy != nil {
			if _, ok := tp.Queues[q.RedrivePolicy.DeadLetterQueue]; !ok {
				t.Errorf("queue %s: DLQ %q missing", id, q.RedrivePolicy.DeadLetterQueue)
			}
		}
	}
}

// goformation's ProcessYAML is not safe for concurrent use; Parse must be.
func TestParseConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := Load("testdata/full.yaml"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestPreflights: SAM's string form of Cors is the origin; its preflights
// take the default authorizer unless AddDefaultAuthorizerToCorsPreflight
// is false, list the path's methods (every method for ANY) and skip a
// path with an OPTIONS of its own.
func TestPreflights(t *testing.T) {
	const tmpl = `
Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: functions/x, Handler: bootstrap, Runtime: provided.al2023}
  FnPermission:
    Type: AWS::Lambda::Permission
    Properties:
      Action: lambda:InvokeFunction
      FunctionName: !Ref Fn
      Principal: apigateway.amazonaws.com
      SourceArn: !Sub "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${Api}/*"
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: api
      Cors: "'https://a.example.com'"
      Auth:
        DefaultAuthorizer: Tok
        Authorizers:
          Tok: {FunctionArn: !GetAtt Fn.Arn}
      DefinitionBody:
        openapi: "3.0.1"
        paths:
          /a:
            get: {x-amazon-apigateway-integration: {type: aws_proxy, httpMethod: POST, uri: !Sub "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/${Fn.Arn}/invocations"}}
            post: {x-amazon-apigateway-integration: {type: aws_proxy, httpMethod: POST, uri: !Sub "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/${Fn.Arn}/invocations"}}
          /b:
            x-amazon-apigateway-any-method: {x-amazon-apigateway-integration: {type: aws_proxy, httpMethod: POST, uri: !Sub "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/${Fn.Arn}/invocations"}}
          /c:
            get: {x-amazon-apigateway-integration: {type: aws_proxy, httpMethod: POST, uri: !Sub "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/${Fn.Arn}/invocations"}}
            options: {x-amazon-apigateway-integration: {type: aws_proxy, httpMethod: POST, uri: !Sub "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/${Fn.Arn}/invocations"}}
`
	tp, err := Parse([]byte(tmpl))
	if err != nil {
		t.Fatal(err)
	}
	o := "https://a.example.com"
	eq(t, "preflights", tp.Preflights(), []Preflight{
		{Path: "/a", Api: "Api", Authorizer: "Tok", Headers: map[string]string{"Access-Control-Allow-Origin": o, "Access-Control-Allow-Methods": "GET,OPTIONS,POST"}},
		{Path: "/b", Api: "Api", Authorizer: "Tok", Headers: map[string]string{"Access-Control-Allow-Origin": o, "Access-Control-Allow-Methods": "DELETE,GET,HEAD,OPTIONS,PATCH,POST,PUT"}},
	})
	tp, err = Parse([]byte(strings.Replace(tmpl, "DefaultAuthorizer: Tok", "DefaultAuthorizer: Tok\n        AddDefaultAuthorizerToCorsPreflight: false", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tp.Preflights() {
		if p.Authorizer != "" {
			t.Errorf("preflight %s: authorizer %s with AddDefaultAuthorizerToCorsPreflight: false", p.Path, p.Authorizer)
		}
	}
}
