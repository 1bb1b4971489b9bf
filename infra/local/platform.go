// Package local runs the whole platform in one process on loopback: an
// embedded DynamoDB server (or the one AWS_ENDPOINT_URL_DYNAMODB names), an
// embedded SQS server (or AWS_ENDPOINT_URL_SQS), the table and queues
// declared by template.yaml, the bootstrap, a local API Gateway serving the
// template's routes through the REQUEST authorizer, an SQS event source
// per SQS event and a scheduled rule per Schedule event of the template.
// Every function runs in-process with the same constructor as its Lambda
// main.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"golang.org/x/sync/errgroup"

	"cads/infra/gateway"
	"cads/infra/localaws"
	"cads/infra/sam"
	"cads/infra/schedule"
	"cads/infra/sqssource"
	"cads/shared/access"
	"cads/shared/bootstrap"
	"cads/shared/clock"
	"cads/shared/ddb"
	"cads/shared/wire"
)

// Options configure a platform. Zero values mean the embedded defaults.
type Options struct {
	Template string // path of template.yaml
	// Parsed is template.yaml already read (the suite starts some fifty
	// platforms from one file, and parsing it cost a third of a start);
	// when set, Template and Parameters are not read. The platform only
	// reads it.
	Parsed *sam.Template
	// Parameters override template parameters' defaults, as a
	// deployment's parameter overrides (make run: CorsAllowOrigin).
	Parameters     map[string]string
	APIAddr        string // default 127.0.0.1:3000; "127.0.0.1:0" picks a port
	StateDir       string // where operator.key goes; default .local
	TableName      string // default "cads-local"
	DynamoEndpoint string // "" = embedded minidyn
	// DynamoRealism, when set, runs the embedded DynamoDB in realistic
	// mode (lagging eventual and index reads, transaction conflicts,
	// throttles, partly unprocessed batches: localaws.Realism). Ignored
	// with DynamoEndpoint.
	DynamoRealism *localaws.Realism
	SQSEndpoint   string // "" = embedded goaws
	OperatorEmail string // default: template.yaml's OperatorEmail default
	Log           *slog.Logger
	// DynamoOptions are added to the DynamoDB client (tests install the
	// round-trip counter here).
	DynamoOptions []func(*dynamodb.Options)
	// AuthzStaleness is the authorizer's warm-path bound: 0 means
	// access.DefaultStaleness, as deployed; negative turns the cache off
	// (tests that assert a change on the very next request).
	AuthzStaleness time.Duration
	// IntegrationTimeout is the gateway's wait for a function before it
	// answers 504; default API Gateway's 29 s. Tests shorten it.
	IntegrationTimeout time.Duration
	// Clock drives the Schedule events; default the wall clock. Tests pass
	// a schedule.ManualClock and move it by hand.
	Clock schedule.Clock
	// StoreClock is the functions' clock (wire.Deps.Clock: what the store
	// stamps and judges windows by); default the wall clock. The cost
	// tour moves a clock.Shifted past the lists' journal window instead
	// of sleeping through it.
	StoreClock clock.Clock
	// WrapAPI, when set, wraps every API function's handler (tests make
	// one slow, say). It gets the function's logical id.
	WrapAPI func(function string, h gateway.ProxyHandler) gateway.ProxyHandler
	// WrapHTTP, when set, wraps the whole API as served on APIAddr: the
	// tests' harness checks every response against the API's OpenAPI
	// document there (infra/local/localtest).
	WrapHTTP func(http.Handler) http.Handler
}

// Platform is a running local platform.
type Platform struct {
	URL       string // base URL of the API, e.g. http://127.0.0.1:3000
	Bootstrap bootstrap.Result
	KeyFile   string
	Deps      wire.Deps
	Queues    map[string]localaws.QueueInfo
	SQS       *sqs.Client
	// Edge is the stand-in edge application test runs send to.
	Edge *Edge

	// Stopped in this order by Close: the API, the event sources, the
	// scheduler, then the servers they use.
	stopAPI, stopSources, stopSchedules func(context.Context) error
	stopServers                         []func(context.Context) error
}

// Start brings the platform up and returns once it serves.
func Start(ctx context.Context, o Options) (*Platform, error) {
	o.defaults()
	p := &Platform{}
	if err := p.start(ctx, o); err != nil {
		_ = p.Close(context.Background())
		return nil, err
	}
	return p, nil
}

func (o *Options) defaults() {
	if o.Template == "" {
		o.Template = "template.yaml"
	}
	if o.APIAddr == "" {
		o.APIAddr = "127.0.0.1:3000"
	}
	if o.StateDir == "" {
		o.StateDir = ".local"
	}
	if o.TableName == "" {
		o.TableName = "cads-local"
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

func (p *Platform) start(ctx context.Context, o Options) error {
	log := o.Log
	tpl := o.Parsed
	if tpl == nil {
		var err error
		if tpl, err = sam.LoadWith(o.Template, o.Parameters); err != nil {
			return err
		}
	}
	table, err := onlyTable(tpl)
	if err != nil {
		return err
	}
	if o.OperatorEmail == "" {
		// As a deployment without the parameter: its default.
		o.OperatorEmail = tpl.Parameters["OperatorEmail"]
	}

	// DynamoDB: the embedded server unless an endpoint was given.
	var db *dynamodb.Client
	if o.DynamoEndpoint == "" {
		var (
			endpoint string
			stop     func(context.Context) error
		)
		if o.DynamoRealism != nil {
			d, err := localaws.StartRealisticDynamo(ctx, "127.0.0.1:0", nil, *o.DynamoRealism)
			if err != nil {
				return fmt.Errorf("start DynamoDB server: %w", err)
			}
			endpoint, stop = d.Endpoint, d.Stop
		} else if endpoint, stop, err = localaws.StartDynamo(ctx, "127.0.0.1:0"); err != nil {
			return fmt.Errorf("start DynamoDB server: %w", err)
		}
		p.stopServers = append(p.stopServers, stop)
		db, err = localaws.DynamoClient(ctx, endpoint, o.DynamoOptions...)
		if err != nil {
			return err
		}
		if o.DynamoRealism != nil {
			log.Info("dynamodb: embedded minidyn, realistic mode", "endpoint", endpoint, "realism", o.DynamoRealism.String(), "seed", o.DynamoRealism.Seed)
		} else {
			log.Info("dynamodb: embedded minidyn", "endpoint", endpoint)
		}
	} else {
		db, err = ddb.NewClient(ctx, append([]func(*dynamodb.Options){func(op *dynamodb.Options) { op.BaseEndpoint = &o.DynamoEndpoint }}, o.DynamoOptions...)...)
		if err != nil {
			return err
		}
		log.Info("dynamodb: external", "endpoint", o.DynamoEndpoint)
	}
	if err := localaws.EnsureTable(ctx, db, o.TableName, table); err != nil {
		return err
	}

	// SQS: the same, and only when the template declares queues.
	if len(tpl.Queues) > 0 {
		endpoint := o.SQSEndpoint
		if endpoint == "" {
			var stop func(context.Context) error
			endpoint, stop, err = localaws.StartSQS(ctx, "127.0.0.1:0")
			if err != nil {
				return fmt.Errorf("start SQS server: %w", err)
			}
			p.stopServers = append(p.stopServers, stop)
			p.SQS, err = localaws.SQSClient(ctx, endpoint)
		} else {
			// A given endpoint may be real AWS: use the SDK's own
			// configuration (credentials, region) as the functions do.
			var cfg aws.Config
			if cfg, err = config.LoadDefaultConfig(ctx); err == nil {
				p.SQS = sqs.NewFromConfig(cfg, func(op *sqs.Options) { op.BaseEndpoint = &endpoint })
			}
		}
		if err != nil {
			return fmt.Errorf("SQS client: %w", err)
		}
		p.Queues, err = localaws.EnsureQueues(ctx, p.SQS, tpl.Queues, func(id string) string { return "cads-local-" + strings.ToLower(id) })
		if err != nil {
			return err
		}
		log.Info("sqs: ready", "endpoint", endpoint, "queues", len(p.Queues))
	}

	if o.StoreClock == nil {
		o.StoreClock = clock.System
	}
	p.Deps = wire.NewClocked(log, db, o.TableName, o.StoreClock)
	switch {
	case o.AuthzStaleness == 0:
		p.Deps.AuthzStaleness = access.DefaultStaleness
	case o.AuthzStaleness > 0:
		p.Deps.AuthzStaleness = o.AuthzStaleness
	}
	edge, stopEdge, err := startEdge(db, o.TableName, log)
	if err != nil {
		return err
	}
	p.Edge, p.Deps.Edge = edge, edge.WireEdge()
	p.stopServers = append(p.stopServers, stopEdge)
	log.Info("edge: local stand-in serving every application's aliases", "http", edge.HTTPAddr, "https", edge.TLSAddr)
	if p.SQS != nil {
		// In-process functions get what FromEnv reads from QUEUE_URL_* on AWS.
		p.Deps.SQS, p.Deps.QueueURLs = p.SQS, map[string]string{}
		for id, q := range p.Queues {
			p.Deps.QueueURLs[id] = q.URL
		}
	}
	if err := p.runBootstrap(ctx, o); err != nil {
		return err
	}

	cfg, err := gatewayConfig(tpl, p.Deps, log, o)
	if err != nil {
		return err
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		return fmt.Errorf("local API gateway: %w", err)
	}
	if err := p.startSources(ctx, tpl, log); err != nil {
		return err
	}
	if err := p.startSchedules(ctx, tpl, log, o.Clock); err != nil {
		return err
	}
	var h http.Handler = gw
	if o.WrapHTTP != nil {
		h = o.WrapHTTP(h)
	}
	return p.serve(o.APIAddr, h, log)
}

// as runs one invocation of function id with its logical ID on the context
// (ddb.WithCaller) and as the pprof label "component": every function
// shares this process and one DynamoDB client, and this is how a round-trip
// counter and a CPU profile tell them apart (`make bench` reads both).
func as[T any](ctx context.Context, id string, f func(context.Context) (T, error)) (out T, err error) {
	pprof.Do(ddb.WithCaller(ctx, id), pprof.Labels("component", id), func(ctx context.Context) { out, err = f(ctx) })
	return out, err
}

func onlyTable(t *sam.Template) (sam.Table, error) {
	if len(t.Tables) != 1 {
		return sam.Table{}, fmt.Errorf("template.yaml must declare exactly one table (single-table design), found %d", len(t.Tables))
	}
	for _, tb := range t.Tables {
		return tb, nil
	}
	panic("unreachable")
}

// runBootstrap creates the installation on first start and keeps the
// operator key in StateDir; later starts against the same data change
// nothing.
func (p *Platform) runBootstrap(ctx context.Context, o Options) error {
	res, err := bootstrap.Run(ctx, p.Deps.Store, o.OperatorEmail)
	if err != nil {
		return err
	}
	p.Bootstrap = res
	p.KeyFile = filepath.Join(o.StateDir, "operator.key")
	if !res.Created {
		o.Log.Info("bootstrap: installation exists; operator key unchanged", "root_account", res.RootAccount, "key_file", p.KeyFile)
		return nil
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if err := os.WriteFile(p.KeyFile, []byte(res.Secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write operator key: %w", err)
	}
	o.Log.Info("bootstrap: created installation", "root_account", res.RootAccount, "operator", res.Operator, "key_file", p.KeyFile)
	return nil
}

// gatewayConfig turns the template's API into the local gateway's config.
// Every function runs as itself (see as).
func gatewayConfig(t *sam.Template, d wire.Deps, log *slog.Logger, o Options) (gateway.Config, error) {
	if len(t.Apis) != 1 {
		return gateway.Config{}, fmt.Errorf("template.yaml must declare exactly one Api, found %d", len(t.Apis))
	}
	var api sam.Api
	for _, a := range t.Apis {
		api = a
	}
	cfg := gateway.Config{
		Functions:        map[string]gateway.ProxyHandler{},
		BinaryMediaTypes: api.BinaryMediaTypes,
		Responses:        map[string]gateway.Response{},
		Stage:            api.StageName,
		AccountID:        localaws.AccountID,
		Region:           localaws.Region,
		Logger:           log,
		// Each function's Timeout (Globals merged) is its deadline, as on
		// Lambda; the gateway stops waiting at the integration timeout.
		FunctionTimeouts:   map[string]time.Duration{},
		IntegrationTimeout: o.IntegrationTimeout,
	}
	for typ, r := range api.GatewayResponses {
		tmpl := r.Templates["application/json"]
		cfg.Responses[typ] = gateway.Response{Status: r.StatusCode, Headers: r.Headers, Template: tmpl}
	}
	if api.DefaultAuthorizer != "" {
		az, ok := api.Authorizers[api.DefaultAuthorizer]
		if !ok {
			return cfg, fmt.Errorf("default authorizer %s is not declared", api.DefaultAuthorizer)
		}
		fn, ok := t.Functions[az.FunctionLogicalID]
		if !ok {
			return cfg, fmt.Errorf("authorizer %s: no function %s", api.DefaultAuthorizer, az.FunctionLogicalID)
		}
		c, ok := Functions[fn.CodeURI]
		if !ok || c.Authorizer == nil {
			return cfg, fmt.Errorf("authorizer function %s (%s) has no local constructor", fn.LogicalID, fn.CodeURI)
		}
		h := c.Authorizer(d)
		cfg.Authorizer = func(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
			return as(ctx, fn.LogicalID, func(ctx context.Context) (events.APIGatewayCustomAuthorizerResponse, error) { return h(ctx, req) })
		}
	}
	for _, r := range t.Routes() {
		fn := t.Functions[r.Function]
		c, ok := Functions[fn.CodeURI]
		if !ok || c.API == nil {
			return cfg, fmt.Errorf("function %s (%s) has no local constructor", fn.LogicalID, fn.CodeURI)
		}
		if _, done := cfg.Functions[r.Function]; !done {
			// What FromEnv reads from the function's environment on AWS.
			fd := d
			fd.CORSAllowOrigin = fn.Environment[wire.CORSAllowOriginEnv]
			ret, err := wire.AuditRetention(fn.Environment[wire.AuditRetentionEnv])
			if err != nil {
				return cfg, fmt.Errorf("function %s: %w", fn.LogicalID, err)
			}
			fd.AuditRetention = ret
			h, id := c.API(fd), r.Function
			if o.WrapAPI != nil {
				h = o.WrapAPI(id, h)
			}
			cfg.Functions[r.Function] = func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				return as(ctx, id, func(ctx context.Context) (events.APIGatewayProxyResponse, error) { return h(ctx, req) })
			}
			cfg.FunctionTimeouts[id] = time.Duration(fn.Timeout) * time.Second
		}
		cfg.Routes = append(cfg.Routes, gateway.Route{Method: r.Method, Path: r.Path, Function: r.Function, Authorized: r.Authorizer != ""})
	}
	// The OPTIONS methods SAM adds for the Api's Cors: API Gateway
	// answers them itself.
	for _, pf := range t.Preflights() {
		cfg.Routes = append(cfg.Routes, gateway.Route{Method: http.MethodOptions, Path: pf.Path, Authorized: pf.Authorizer != "",
			Mock: &gateway.Mock{Headers: pf.Headers, Body: "{}\n"}})
	}
	return cfg, nil
}

// startSources runs an SQS event source for every SQS event.
func (p *Platform) startSources(ctx context.Context, t *sam.Template, log *slog.Logger) error {
	ids := make([]string, 0, len(t.Functions))
	for id := range t.Functions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	srcCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var sources errgroup.Group // a source that stops is logged; stopSources waits for all
	p.stopSources = func(context.Context) error { cancel(); _ = sources.Wait(); return nil }
	for _, id := range ids {
		fn := t.Functions[id]
		for _, ev := range fn.Events {
			if ev.SQS == nil {
				continue
			}
			c, ok := Functions[fn.CodeURI]
			if !ok || c.Queue == nil {
				return fmt.Errorf("queue function %s (%s) has no local constructor", id, fn.CodeURI)
			}
			q, ok := p.Queues[ev.SQS.Queue]
			if !ok {
				return fmt.Errorf("function %s: queue %s was not created", id, ev.SQS.Queue)
			}
			h := c.Queue(p.Deps)
			// Lambda polls with several pollers; MaximumConcurrency caps
			// them. Locally at least two, so concurrent and duplicate
			// deliveries happen in every run.
			pollers := ev.SQS.MaximumConcurrency
			if pollers == 0 {
				pollers = sqssource.DefaultPollers
			}
			src := &sqssource.Source{Client: p.SQS, QueueURL: q.URL, QueueARN: q.ARN, BatchSize: ev.SQS.BatchSize, Pollers: pollers,
				MaxBatchingWindow: time.Duration(ev.SQS.MaximumBatchingWindowInSeconds) * time.Second,
				WaitTime:          time.Second, ReportBatchItemFailures: ev.SQS.ReportsBatchItemFailures(),
				Timeout: time.Duration(fn.Timeout) * time.Second, Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					return as(ctx, id, func(ctx context.Context) (events.SQSEventResponse, error) { return h(ctx, ev) })
				}, Logger: log.With("function", id)}
			sources.Go(func() error {
				if err := src.Run(srcCtx); err != nil {
					log.Error("sqs event source stopped", "function", id, "error", err.Error())
				}
				return nil
			})
		}
	}
	return nil
}

// startSchedules arms an EventBridge-like rule for every enabled Schedule
// event. An expression the local scheduler cannot run fails the start:
// a sweep that silently never runs is worse than no start.
func (p *Platform) startSchedules(ctx context.Context, t *sam.Template, log *slog.Logger, clock schedule.Clock) error {
	var rules []schedule.Rule
	for _, id := range sortedIDs(t.Functions) {
		fn := t.Functions[id]
		for _, ev := range fn.Events {
			sc := ev.Schedule
			if sc == nil {
				continue
			}
			expr, err := schedule.Parse(sc.Schedule)
			if err != nil {
				return fmt.Errorf("function %s event %s: %w", id, ev.Name, err)
			}
			name := sc.Name
			if name == "" {
				name = "cads-local-" + id + ev.Name // SAM: <stack>-<function><event>-<suffix>
			}
			if !sc.Enabled {
				log.Info("schedule disabled in the template", "function", id, "rule", name, "schedule", sc.Schedule)
				continue
			}
			c, ok := Functions[fn.CodeURI]
			if !ok || c.Queue == nil {
				return fmt.Errorf("function %s (%s) has a Schedule event but no local constructor that takes events", id, fn.CodeURI)
			}
			h := c.Queue(p.Deps)
			rules = append(rules, schedule.Rule{
				Function:    id,
				FunctionARN: fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", localaws.Region, localaws.AccountID, id),
				Name:        name,
				ARN:         fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", localaws.Region, localaws.AccountID, name),
				Expr:        expr,
				Input:       []byte(sc.Input),
				Timeout:     time.Duration(fn.Timeout) * time.Second,
				// The runtime decodes the payload into the handler's event
				// type: a scheduled event reaches an SQS handler as an
				// SQSEvent without records.
				Invoke: func(ctx context.Context, payload []byte) error {
					var ev events.SQSEvent
					if err := json.Unmarshal(payload, &ev); err != nil {
						return fmt.Errorf("decode the event into events.SQSEvent: %w", err)
					}
					_, err := as(ctx, id, func(ctx context.Context) (events.SQSEventResponse, error) { return h(ctx, ev) })
					return err
				},
			})
		}
	}
	s := &schedule.Scheduler{Clock: clock, AccountID: localaws.AccountID, Region: localaws.Region, Logger: log}
	p.stopSchedules = s.Start(ctx, rules)
	return nil
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (p *Platform) serve(addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("API listener: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	p.URL = "http://" + ln.Addr().String()
	var g errgroup.Group // a server that stops is logged; stopAPI waits for it
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("API server stopped", "error", err.Error())
		}
		return nil
	})
	p.stopAPI = func(ctx context.Context) error { err := srv.Shutdown(ctx); _ = g.Wait(); return err }
	return nil
}

// Close stops everything: the API first (in-flight requests finish), then
// the event sources (a batch in progress finishes and deletes its
// messages), the scheduler (runs in progress finish), then the servers.
func (p *Platform) Close(ctx context.Context) error {
	stops := []func(context.Context) error{p.stopAPI, p.stopSources, p.stopSchedules}
	for i := len(p.stopServers) - 1; i >= 0; i-- {
		stops = append(stops, p.stopServers[i])
	}
	var errs []error
	for _, s := range stops {
		if s == nil {
			continue
		}
		if err := s(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	p.stopAPI, p.stopSources, p.stopSchedules, p.stopServers = nil, nil, nil, nil
	return errors.Join(errs...)
}
