// Package testenv gives tests the real parts: an in-process DynamoDB
// wire-protocol server (minidyn) on a random loopback port, reached through
// the real SDK client, with the table created from template.yaml, and the
// round-trip counter installed. No fixed ports, no external process.
package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"cads/infra/localaws"
	"cads/infra/sam"
	"cads/shared/ddb"
)

// Dynamo is a test's table.
type Dynamo struct {
	Client  *dynamodb.Client
	Table   string
	Counter *ddb.Counter
}

// NewDynamo starts a server for this test and creates the template's table.
func NewDynamo(t testing.TB) Dynamo {
	t.Helper()
	ctx := context.Background()
	endpoint, stop, err := localaws.StartDynamo(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start DynamoDB server: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	counter := ddb.NewCounter()
	client, err := localaws.DynamoClient(ctx, endpoint, counter.Option())
	if err != nil {
		t.Fatalf("DynamoDB client: %v", err)
	}
	tpl := Template(t)
	if len(tpl.Tables) != 1 {
		t.Fatalf("template declares %d tables, want 1", len(tpl.Tables))
	}
	const name = "cads-test"
	for _, tb := range tpl.Tables {
		if err := localaws.EnsureTable(ctx, client, name, tb); err != nil {
			t.Fatalf("create table: %v", err)
		}
	}
	counter.Reset()
	return Dynamo{Client: client, Table: name, Counter: counter}
}

// Root is the repository root (the folder holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// Template loads the project's template.yaml.
func Template(t testing.TB) *sam.Template {
	t.Helper()
	tpl, err := sam.Load(filepath.Join(Root(t), "template.yaml"))
	if err != nil {
		t.Fatalf("load template: %v", err)
	}
	return tpl
}
