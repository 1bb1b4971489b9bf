// Package localaws runs in-process stand-ins for DynamoDB (minidyn) and SQS
// (goaws) on the loopback interface, creates the template's tables and
// queues in them, and builds SDK clients pointed at them.
//
// Neither server persists anything: state lives in memory until the process
// exits. docs/local-platform.md says what each one supports and which of
// their quirks the code works around.
package localaws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// StartDynamo serves minidyn's DynamoDB wire protocol on addr (default
// "127.0.0.1:0", a free port) and returns its endpoint URL and a stop
// function (safe to call more than once). Every call gets its own, empty
// set of tables. ctx bounds only the start; the server runs until stop.
// Requests that ask for ReturnConsumedCapacity get it (capacity.go).
func StartDynamo(ctx context.Context, addr string) (endpoint string, stop func(context.Context) error, err error) {
	return StartDynamoMetered(ctx, addr, nil)
}

// StartDynamoMetered is StartDynamo with every request's consumed capacity
// also counted per partition key in parts (nil: not counted), whether or
// not the request asked for ReturnConsumedCapacity.
func StartDynamoMetered(ctx context.Context, addr string, parts *PartitionMeter) (endpoint string, stop func(context.Context) error, err error) {
	d, err := StartDynamoServer(ctx, addr, parts)
	if err != nil {
		return "", nil, err
	}
	return d.Endpoint, d.Stop, nil
}

// Dynamo is a running DynamoDB server (StartDynamoServer).
type Dynamo struct {
	// Endpoint is the server's URL, for DynamoClient.
	Endpoint string
	// Stop stops the server (safe to call more than once).
	Stop func(context.Context) error
	srv  *server.Server
	// realism is the realistic mode's layer (nil: the plain server).
	realism *realistic
}

// StartDynamoServer is StartDynamoMetered returning the server itself,
// which can also be loaded in-process (Load).
func StartDynamoServer(ctx context.Context, addr string, parts *PartitionMeter) (*Dynamo, error) {
	srv := server.NewServer()
	endpoint, stop, err := serve(ctx, "dynamodb", addr, newDynamoHandler(srv, parts), nil)
	if err != nil {
		return nil, err
	}
	return &Dynamo{Endpoint: endpoint, Stop: stop, srv: srv}, nil
}

// Load puts items into table in-process, as unconditional puts, without
// the wire protocol or the meter: no capacity is counted for them. It is
// for tests that need tables of many thousands of items (under the race
// detector, BatchWriteItem requests spend most of their time in JSON);
// requests over the wire see the items as if they had been put through it.
// In realistic mode they are visible at once to every read (replicas
// included), after the writes queued before them.
func (d *Dynamo) Load(ctx context.Context, table string, items []map[string]types.AttributeValue) error {
	put := d.srv.PutItems
	if d.realism != nil {
		put = d.realism.load
	}
	if err := put(ctx, table, items); err != nil {
		return fmt.Errorf("load %d items into %s: %w", len(items), table, err)
	}
	return nil
}

// Settle waits until every write acknowledged so far is visible to every
// read (realistic mode: the replicas have applied them; otherwise at once).
func (d *Dynamo) Settle() {
	if d.realism == nil {
		return
	}
	for _, rep := range d.realism.replicas {
		rep.settle()
	}
}

// serve listens on a loopback address and serves h until stop. Request
// contexts derive from a context that stop cancels first, so handlers that
// wait on their request context (goaws' long polls) return at once instead
// of holding Shutdown for up to 20 seconds.
// onListen, if set, runs once the port is known and before the first
// request can be served.
func serve(ctx context.Context, what, addr string, h http.Handler, onListen func(*net.TCPAddr)) (string, func(context.Context) error, error) {
	addr, err := loopback(addr)
	if err != nil {
		return "", nil, fmt.Errorf("local %s: %w", what, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("local %s: listen: %w", what, err)
	}
	if onListen != nil {
		onListen(ln.Addr().(*net.TCPAddr))
	}
	base, cancel := context.WithCancel(context.Background())
	// CPU profiles of the local platform (`make bench`) put the stand-in
	// servers' work under their own label, apart from the functions'.
	labelled := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.Do(r.Context(), pprof.Labels("component", what+" (local server)"), func(ctx context.Context) { h.ServeHTTP(w, r.WithContext(ctx)) })
	})
	// Shutdown closes idle connections at once but waits 5 s for one that
	// was accepted and has not sent a request yet (StateNew), and the SDK
	// clients leave such connections behind: a dial started for a request
	// that another connection then served goes to the client's pool
	// unused. On a stand-in that wait ended nearly every stop of the local
	// platform and many tests. Such connections carry no request, so stop
	// closes them, as Shutdown does the idle ones.
	var (
		stopping atomic.Bool
		fresh    sync.Map // net.Conn in StateNew
	)
	srv := &http.Server{
		Handler:           labelled,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s != http.StateNew {
				fresh.Delete(c)
				return
			}
			fresh.Store(c, struct{}{})
			if stopping.Load() {
				_ = c.Close()
			}
		},
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	endpoint := "http://" + ln.Addr().String()
	slog.Debug("local AWS service listening", "service", what, "endpoint", endpoint)

	var (
		once    sync.Once
		stopErr error
	)
	stop := func(ctx context.Context) error {
		once.Do(func() {
			cancel()
			stopping.Store(true)
			fresh.Range(func(c, _ any) bool {
				_ = c.(net.Conn).Close()
				return true
			})
			err := srv.Shutdown(ctx)
			if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
				err = serr
			}
			if err != nil {
				stopErr = fmt.Errorf("stop local %s: %w", what, err)
			}
		})
		return stopErr
	}
	return endpoint, stop, nil
}

// loopback fills in 127.0.0.1 and refuses addresses that would expose the
// unauthenticated stand-ins beyond this machine.
func loopback(addr string) (string, error) {
	if addr == "" {
		return "127.0.0.1:0", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	if host == "localhost" {
		return addr, nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("address %q: only loopback addresses are allowed", addr)
	}
	return addr, nil
}
