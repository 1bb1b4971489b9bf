// Command traffic is `make run` with an edge attached: it starts the local
// platform, creates a demo application and a dynamic address set through
// the API, and then sends realistic edge records for them to the metrics
// queue every second, so that metrics (and, where the logs function reads
// the same records, logs) are there within a minute. The data plane is
// outside this service; this stands in for it (docs/metrics.md).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"cads/infra/local"
	"cads/shared/logging"
	"cads/shared/metrics"
	"cads/shared/outbox"
	"cads/shared/wire"
)

func main() {
	rate := flag.Float64("rate", 25, "mean requests per second of the demo application")
	app := flag.String("app", "", "send records for this existing application id instead of creating one")
	flag.Parse()

	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL"))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := local.Start(ctx, local.Options{
		APIAddr:        os.Getenv("API_ADDR"),
		TableName:      os.Getenv("TABLE_NAME"),
		DynamoEndpoint: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
		SQSEndpoint:    os.Getenv("AWS_ENDPOINT_URL_SQS"),
		OperatorEmail:  os.Getenv("OPERATOR_EMAIL"),
		Log:            log,
	})
	if err != nil {
		log.Error("start failed", "error", err.Error())
		os.Exit(1)
	}
	log.Info("ready", "api", p.URL)
	if p.Bootstrap.Created {
		fmt.Fprintf(os.Stderr, "\nOperator access key (shown once, also in %s):\n  %s\n", p.KeyFile, p.Bootstrap.Secret)
	}
	code := 0
	if err := serve(ctx, p, *app, *rate, log); err != nil {
		log.Error("traffic", "error", err.Error())
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(sctx); err != nil {
		log.Error("shutdown", "error", err.Error())
		code = 1
	}
	os.Exit(code)
}

func serve(ctx context.Context, p *local.Platform, app string, rate float64, log *slog.Logger) error {
	secret, err := operatorSecret(p)
	if err != nil {
		return err
	}
	d, err := setup(ctx, p.URL, secret, app)
	if err != nil {
		return err
	}
	q, ok := p.Queues[wire.MetricsQueue]
	if !ok || p.SQS == nil {
		return fmt.Errorf("the template declares no %s", wire.MetricsQueue)
	}
	fmt.Fprintf(os.Stderr, "\nSending edge traffic for application %s (about %.0f requests/s). Within a few seconds:\n"+
		"  curl -s -H \"Authorization: Bearer $(cat %s)\" '%s/v2/applications/%s/metrics?names=requests,status_codes,response_time,countries&resolution=60'\n"+
		"  curl -s -H \"Authorization: Bearer $(cat %s)\" '%s/v2/address-sets/%s/metrics?names=entries_added,entries_extended,entries_expired&resolution=60'\n\n",
		d.app, rate, p.KeyFile, p.URL, d.app, p.KeyFile, p.URL, d.set)
	send := outbox.SQS{Client: p.SQS, URLs: map[string]string{wire.MetricsQueue: q.URL}}.To(wire.MetricsQueue)
	return run(ctx, newGenerator(d.app, d.set, rate, uint64(time.Now().UnixNano())), send, time.Second, log)
}

func operatorSecret(p *local.Platform) (string, error) {
	if p.Bootstrap.Secret != "" {
		return p.Bootstrap.Secret, nil
	}
	b, err := os.ReadFile(p.KeyFile)
	if err != nil {
		return "", fmt.Errorf("no operator key: this installation existed before and %s cannot be read: %w", p.KeyFile, err)
	}
	return strings.TrimSpace(string(b)), nil
}

type demo struct{ app, set string }

// setup creates (through the API, as a user would) the demo application
// unless one is given, and a dynamic address set the edge adds blocked
// addresses to.
func setup(ctx context.Context, base, secret, app string) (demo, error) {
	d := demo{app: app}
	if d.app == "" {
		var out struct{ ID string }
		if err := call(ctx, base, secret, "POST", "/v2/applications", map[string]any{"name": "traffic demo", "aliases": []string{"shop.example.com"}}, &out); err != nil {
			return d, fmt.Errorf("create the demo application: %w", err)
		}
		d.app = out.ID
	}
	var set struct{ ID string }
	if err := call(ctx, base, secret, "POST", "/v2/address-sets", map[string]any{"name": "blocked by the WAF", "type": "dynamic",
		"description": "addresses the edge blocked (traffic generator)"}, &set); err != nil {
		return d, fmt.Errorf("create the demo address set: %w", err)
	}
	d.set = set.ID
	return d, nil
}

func call(ctx context.Context, base, secret, method, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// sender sends message bodies to the metrics queue (outbox.Bound).
type sender interface {
	Send(ctx context.Context, bodies ...string) error
}

// maxRecordsPerMessage keeps messages well under SQS' 256 KiB (an access
// record is about 1 KB).
const maxRecordsPerMessage = 150

// run sends the generator's records every tick until ctx ends.
func run(ctx context.Context, g *generator, s sender, every time.Duration, log *slog.Logger) error {
	t := time.NewTicker(every)
	defer t.Stop()
	batches, records := 0, 0
	report := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			recs := g.next(now.UTC())
			for start := 0; start < len(recs); start += maxRecordsPerMessage {
				batches++
				m := metrics.Message{Batch: fmt.Sprintf("traffic-%d-%d", now.UnixNano(), start), Records: recs[start:min(start+maxRecordsPerMessage, len(recs))]}
				body, err := json.Marshal(m)
				if err != nil {
					return err
				}
				if err := s.Send(ctx, string(body)); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					log.Warn("traffic: send failed", "error", err.Error())
				}
			}
			records += len(recs)
			if time.Since(report) >= time.Minute {
				log.Info("traffic: sent", "records", records, "messages", batches)
				report = time.Now()
			}
		}
	}
}
