// Package wire builds each function's handler from its dependencies. The
// Lambda mains call it with dependencies from the environment; the local
// platform and the tests call it with their own, so a function is wired the
// same way everywhere. (The linker drops the constructors a binary does not
// call, so each function links only its own handler.)
package wire

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/authorizer"
	"cads/shared/ddb"
	"cads/shared/identity"
	"cads/shared/loadgen"
	"cads/shared/logging"
	"cads/shared/store"
)

// Deps are what functions need.
type Deps struct {
	Log   *slog.Logger
	Store *store.Store
	// SQS and QueueURLs (by the queue's logical id in template.yaml) are set
	// for functions that send to queues.
	SQS       *sqs.Client
	QueueURLs map[string]string
	// Edge is where application test runs send their requests: the
	// platform's edge (EDGE_ADDR and EDGE_TLS_ADDR on AWS; the local
	// platform's stand-in edge locally).
	Edge loadgen.Edge
	// AuthzStaleness bounds the authorizer's warm path (access.WithStaleness):
	// how long a warm container decides with what it read for a key. 0 (the
	// zero value, as in tests that build Deps by hand) reads the table on
	// every decision; deployed functions use access.DefaultStaleness.
	AuthzStaleness time.Duration
}

// queueEnvPrefix names the environment variables that carry queue URLs:
// QUEUE_URL_<logical id>: !Ref <logical id> in template.yaml (on AWS, Ref
// of a queue is its URL).
const queueEnvPrefix = "QUEUE_URL_"

// FromEnv reads TABLE_NAME and LOG_LEVEL and builds the DynamoDB client
// from the SDK's default configuration (AWS_ENDPOINT_URL_DYNAMODB points it
// at a local server).
func FromEnv(ctx context.Context) (Deps, error) {
	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL"))
	table := os.Getenv("TABLE_NAME")
	if table == "" {
		return Deps{}, fmt.Errorf("TABLE_NAME is not set")
	}
	db, err := ddb.NewClient(ctx)
	if err != nil {
		return Deps{}, fmt.Errorf("dynamodb client: %w", err)
	}
	d := New(log, db, table)
	d.Edge = loadgen.Edge{Addr: os.Getenv("EDGE_ADDR"), TLSAddr: os.Getenv("EDGE_TLS_ADDR")}
	d.AuthzStaleness = access.DefaultStaleness
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if id, ok := strings.CutPrefix(k, queueEnvPrefix); ok && v != "" {
			if d.QueueURLs == nil {
				d.QueueURLs = map[string]string{}
			}
			d.QueueURLs[id] = v
		}
	}
	if len(d.QueueURLs) > 0 {
		// AWS_ENDPOINT_URL_SQS points this at a local server.
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return Deps{}, fmt.Errorf("sqs client: %w", err)
		}
		d.SQS = sqs.NewFromConfig(cfg)
	}
	return d, nil
}

// New builds Deps from a client.
func New(log *slog.Logger, db *dynamodb.Client, table string) Deps {
	return Deps{Log: log, Store: store.New(db, table)}
}

// Authorizer is the REQUEST authorizer's handler.
func Authorizer(d Deps) authorizer.Handler {
	return authorizer.New(access.New(d.Store, d.Log, access.WithStaleness(d.AuthzStaleness)), d.Log)
}

// Users is the users function's handler.
func Users(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, identity.New(d.Store, access.New(d.Store, d.Log), d.Log))
}
