// Command coldstart measures each function's cold start the way Lambda
// sees it: it builds the function's bootstrap for this machine (with
// -tags lambda.norpc, as deployed), starts it against a local stand-in for
// the Lambda Runtime API, and reports the time from process start to the
// first "next invocation" call (init done) and to the first answered
// invocation. Each function gets an event it can answer without DynamoDB
// (an unknown route, a request without credentials, an empty SQS batch),
// so the numbers are init plus one handler run, not network. Each function
// gets the QUEUE_URL_* variables template.yaml gives it (pointing at an
// unreachable address), so it builds the clients it builds on AWS.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"cads/infra/sam"
)

func main() {
	runs := flag.Int("runs", 5, "cold starts per function (the median is reported)")
	flag.Parse()
	if err := run(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

// eventFor is an invocation payload the function answers without I/O.
func eventFor(fn string) string {
	switch fn {
	case "authorizer":
		return `{"type":"REQUEST","methodArn":"arn:aws:execute-api:us-east-1:123456789012:x/api/GET/v2/users","resource":"/v2/users","path":"/v2/users","httpMethod":"GET","headers":{},"multiValueHeaders":{},"requestContext":{}}`
	case "notifier", "task-worker", "aggregator", "test-runner":
		return `{"Records":[]}`
	}
	return `{"resource":"/v2/nothing","path":"/v2/nothing","httpMethod":"GET","headers":{},"multiValueHeaders":{},"requestContext":{"authorizer":{"principal":"p","key":"k","account":"a"}},"body":"","isBase64Encoded":false}`
}

// sweeps are the workers whose every invocation reads DynamoDB.
var sweeps = map[string]bool{"task-worker": true, "aggregator": true}

// Result is one function's cold starts.
type Result struct {
	Function    string
	Init, First time.Duration // medians
	Binary      int64
}

func run(runs int) error {
	dir, err := os.MkdirTemp("", "coldstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	queues, err := queueEnv("template.yaml")
	if err != nil {
		return err
	}
	fns, _ := filepath.Glob("functions/*")
	fmt.Printf("| Function | bootstrap (this machine) | init (median of %d) | first invocation answered |\n|---|---|---|---|\n", runs)
	for _, f := range fns {
		r, err := Measure(context.Background(), filepath.Base(f), dir, runs, queues[filepath.ToSlash(f)])
		if err != nil {
			return err
		}
		first := r.First.Round(100 * time.Microsecond).String()
		if sweeps[r.Function] {
			// Every invocation sweeps DynamoDB (outbox, expiries): here that
			// is SDK retries against the unreachable endpoint, not a cost.
			first = "n/a (reads DynamoDB on every invocation)"
		}
		fmt.Printf("| %s | %.1f MB | %s | %s |\n", r.Function, float64(r.Binary)/1e6, r.Init.Round(100*time.Microsecond), first)
	}
	return nil
}

// queueEnv is, by CodeUri, the QUEUE_URL_* variables the template gives
// each function, each naming an unreachable queue.
func queueEnv(template string) (map[string][]string, error) {
	tpl, err := sam.Load(template)
	if err != nil {
		return nil, err
	}
	env := map[string][]string{}
	for _, f := range tpl.Functions {
		for k, id := range f.Environment {
			if strings.HasPrefix(k, "QUEUE_URL_") {
				env[f.CodeURI] = append(env[f.CodeURI], k+"=http://127.0.0.1:9/"+id)
			}
		}
	}
	return env, nil
}

// Measure builds functions/<fn> into dir and cold-starts it runs times
// with env (KEY=value) added to the Lambda environment.
func Measure(ctx context.Context, fn, dir string, runs int, env []string) (Result, error) {
	bin := filepath.Join(dir, fn)
	build := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", bin, "./functions/"+fn)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return Result{}, fmt.Errorf("build %s: %v\n%s", fn, err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		return Result{}, err
	}
	var inits, firsts []time.Duration
	for i := 0; i < runs; i++ {
		init, first, err := once(ctx, bin, eventFor(fn), env)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", fn, err)
		}
		inits, firsts = append(inits, init), append(firsts, first)
	}
	return Result{Function: fn, Init: median(inits), First: median(firsts), Binary: st.Size()}, nil
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// once starts the binary against a fresh Runtime API stand-in and returns
// the time to its first `next` call and to its first answer.
func once(ctx context.Context, bin, event string, env []string) (init, first time.Duration, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	var (
		mu               sync.Mutex
		start            time.Time
		initAt, answerAt time.Time
		served           bool
		answered         = make(chan string, 1)
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if initAt.IsZero() {
			initAt = time.Now()
		}
		again := served
		served = true
		mu.Unlock()
		if again {
			<-r.Context().Done() // one invocation only: hold the next poll
			return
		}
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "cold-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(10*time.Second).UnixMilli()))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:cold")
		_, _ = io.WriteString(w, event)
	})
	answer := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			answerAt = time.Now()
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			answered <- kind
		}
	}
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", answer("response"))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", answer("error"))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", answer("init error"))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append([]string{
		"AWS_LAMBDA_RUNTIME_API=" + ln.Addr().String(),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=cold", "AWS_SECRET_ACCESS_KEY=cold",
		"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9",
		"TABLE_NAME=cold", "LOG_LEVEL=ERROR",
	}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start = time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	select {
	case kind := <-answered:
		if kind == "init error" {
			return 0, 0, fmt.Errorf("init failed: %s", stderr.String())
		}
	case <-ctx.Done():
		return 0, 0, fmt.Errorf("no answer within 20 s: %s", stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return initAt.Sub(start), answerAt.Sub(start), nil
}
