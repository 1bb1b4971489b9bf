// Command local runs the whole platform on loopback (make run).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"cads/infra/local"
	"cads/infra/localaws"
	"cads/shared/logging"
)

func main() {
	stateDir := flag.String("state-dir", ".local", "where the operator key file is written")
	// 0 keeps the deployed bound; a negative value turns the warm path off,
	// so a load run can show what it saves.
	staleness := flag.Duration("authz-staleness", 0, "how long the authorizer may decide from a key's cached inputs: 0 = the deployed default (1s), negative = no cache")
	realistic := flag.String("realistic", "", "run the embedded DynamoDB in realistic mode: 1 (the preset, a seed from the clock), a seed, or knobs such as seed=42,lag=200ms,conflicts=0.1 (docs/local-platform.md)")
	flag.Parse()
	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL"))
	// The embedded servers' adapters log through the default logger.
	slog.SetDefault(log)
	realism, err := localaws.ParseRealism(*realistic)
	if err != nil {
		log.Error("bad -realistic", "error", err.Error())
		os.Exit(2)
	}
	if realism != nil {
		fmt.Fprintf(os.Stderr, "Realistic DynamoDB: %s\n  (replay this run's choices with REALISTIC=seed=%d)\n", realism, realism.Seed)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	p, err := local.Start(ctx, local.Options{
		APIAddr:        os.Getenv("API_ADDR"),
		TableName:      os.Getenv("TABLE_NAME"),
		DynamoEndpoint: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
		SQSEndpoint:    os.Getenv("AWS_ENDPOINT_URL_SQS"),
		OperatorEmail:  os.Getenv("OPERATOR_EMAIL"),
		Parameters:     map[string]string{"CorsAllowOrigin": corsOrigin()},
		StateDir:       *stateDir,
		AuthzStaleness: *staleness,
		DynamoRealism:  realism,
		Log:            log,
	})
	if err != nil {
		log.Error("start failed", "error", err.Error())
		os.Exit(1)
	}
	log.Info("ready", "api", p.URL, "startup_ms", time.Since(began).Milliseconds())
	if p.Bootstrap.Created {
		fmt.Fprintf(os.Stderr, "\nOperator access key (shown once, also in %s):\n  %s\n\n", p.KeyFile, p.Bootstrap.Secret)
	}
	fmt.Fprintf(os.Stderr, "Try:\n  curl -s -H \"Authorization: Bearer $(cat %s)\" %s/v2/users/self/authorization\n\n", p.KeyFile, p.URL)
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(sctx); err != nil {
		log.Error("shutdown", "error", err.Error())
		os.Exit(1)
	}
}

// corsOrigin is the local platform's CorsAllowOrigin: every origin unless
// CORS_ALLOW_ORIGIN says otherwise (set and empty: none, as deployed by
// default), so that a browser application in development may call it.
func corsOrigin() string {
	if v, ok := os.LookupEnv("CORS_ALLOW_ORIGIN"); ok {
		return v
	}
	return "*"
}
