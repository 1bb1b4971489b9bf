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

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/authorizer"
	"cads/shared/ddb"
	"cads/shared/identity"
	"cads/shared/logging"
	"cads/shared/store"
)

// Deps are what functions need.
type Deps struct {
	Log   *slog.Logger
	Store *store.Store
}

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
	return New(log, db, table), nil
}

// New builds Deps from a client.
func New(log *slog.Logger, db *dynamodb.Client, table string) Deps {
	return Deps{Log: log, Store: store.New(db, table)}
}

// Authorizer is the REQUEST authorizer's handler.
func Authorizer(d Deps) authorizer.Handler {
	return authorizer.New(access.New(d.Store, d.Log), d.Log)
}

// Users is the users function's handler.
func Users(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, identity.New(d.Store, access.New(d.Store, d.Log), d.Log))
}
