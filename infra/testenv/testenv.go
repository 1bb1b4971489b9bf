// Package testenv gives tests the real parts: an in-process DynamoDB
// wire-protocol server (minidyn) on a random loopback port, reached through
// the real SDK client, with the table created from template.yaml, and the
// round-trip counter installed; the template's queues on an in-process SQS
// server; a bootstrapped installation. No fixed ports, no external process.
package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"cads/infra/buildcache"
	"cads/infra/localaws"
	"cads/infra/sam"
	"cads/shared/bootstrap"
	"cads/shared/caller"
	"cads/shared/ddb"
	"cads/shared/domain"
	"cads/shared/store"
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
	// CADS_DYNAMO_REALISM (unset by default) starts the server in
	// realistic mode (localaws.ParseRealism).
	realism, err := localaws.RealismFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	var (
		endpoint string
		stop     func(context.Context) error
	)
	if realism != nil {
		t.Logf("DynamoDB in realistic mode: %s", realism)
		d, err := localaws.StartRealisticDynamo(ctx, "127.0.0.1:0", nil, *realism)
		if err != nil {
			t.Fatalf("start DynamoDB server: %v", err)
		}
		endpoint, stop = d.Endpoint, d.Stop
	} else if endpoint, stop, err = localaws.StartDynamo(ctx, "127.0.0.1:0"); err != nil {
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

// Template is the project's template.yaml, parsed once per test binary:
// every test's table and queues come from it, and parsing it (intrinsic
// functions included) cost more than creating them. The template is
// shared: read it, do not change it.
func Template(t testing.TB) *sam.Template {
	t.Helper()
	tpl, err := loadTemplate(filepath.Join(Root(t), "template.yaml"))
	if err != nil {
		t.Fatalf("load template: %v", err)
	}
	return tpl
}

var templates sync.Map // path -> func() (*sam.Template, error)

func loadTemplate(path string) (*sam.Template, error) {
	load, _ := templates.LoadOrStore(path, sync.OnceValues(func() (*sam.Template, error) { return sam.Load(path) }))
	return load.(func() (*sam.Template, error))()
}

// NewQueues starts an SQS server (goaws) for this test with the
// template's queues, dead-letter queues and redrive policies, and returns
// a client and each queue's URL by logical ID: what a function reads from
// QUEUE_URL_<LogicalId> on AWS.
func NewQueues(t testing.TB) (*sqs.Client, map[string]string) {
	t.Helper()
	ctx := context.Background()
	endpoint, stop, err := localaws.StartSQS(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start SQS server: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	client, err := localaws.SQSClient(ctx, endpoint)
	if err != nil {
		t.Fatalf("SQS client: %v", err)
	}
	qs, err := localaws.EnsureQueues(ctx, client, Template(t).Queues, func(id string) string { return "test-" + strings.ToLower(id) })
	if err != nil {
		t.Fatalf("create queues: %v", err)
	}
	urls := map[string]string{}
	for id, q := range qs {
		urls[id] = q.URL
	}
	return client, urls
}

// Bootstrap creates the installation in the table and returns it with its
// operator as the principal the authorizer passes on for the operator's
// key.
func Bootstrap(t testing.TB, st *store.Store) (bootstrap.Result, caller.Principal) {
	t.Helper()
	res, err := bootstrap.Run(context.Background(), st, operatorEmail)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return res, Operator(res)
}

// operatorEmail is the operator's address in test installations (and the
// local platform's default).
const operatorEmail = "operator@example.com"

// Operator is the principal the authorizer passes on for the key of an
// installation's operator.
func Operator(res bootstrap.Result) caller.Principal {
	return caller.Principal{ID: res.Operator, Kind: domain.KindUser, Email: operatorEmail, AccountID: res.RootAccount, KeyID: res.KeyID}
}

// QueueDepth is how many messages the queue at url holds, visible, in
// flight or delayed: 0 means none can arrive or come back later, which a
// test can ask at once instead of waiting out a long poll.
func QueueDepth(t testing.TB, client *sqs.Client, url string) int {
	t.Helper()
	names := []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		t.Fatalf("queue attributes: %v", err)
	}
	n := 0
	for i, name := range names {
		v, ok := out.Attributes[string(name)]
		if !ok && i == len(names)-1 {
			continue // goaws does not report delayed messages
		}
		c, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("queue attribute %s: %q", name, v)
		}
		n += c
	}
	return n
}

// Expire ends the visibility timeout of a message received with handle
// now, as if the time had passed: it is visible again and the receive
// counts towards the queue's redrive policy, as when the timeout runs out.
// Tests of a worker that died holding a message use it instead of waiting;
// infra/localaws tests the timeout itself.
func Expire(t testing.TB, client *sqs.Client, url, handle string) {
	t.Helper()
	if _, err := client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
		ReceiptHandle: aws.String(handle), VisibilityTimeout: 0}); err != nil {
		t.Fatalf("end the visibility timeout: %v", err)
	}
}

// Realistic reports whether this test binary's DynamoDB runs in the
// realistic mode (localaws.RealismEnv). Exact DynamoDB call counts and
// capacity units hold on the plain stand-in only: there, retried
// conflicts and throttles, re-sent unprocessed batch items and the
// journal's reads after a recent write legitimately change them. A test
// skips such an assertion alone when this is true and checks the rest.
func Realistic() bool {
	r, err := localaws.RealismFromEnv()
	return err == nil && r != nil
}

// AwaitIndexes waits, in the realistic mode, until every write made
// before it is visible in the global secondary indexes (the mode's
// IndexLag); at once otherwise. For a test of an asynchronous reader that
// finds its work through an index (the outbox sweep's due markers), whose
// next scheduled run would find what the index did not show yet.
func AwaitIndexes() {
	r, err := localaws.RealismFromEnv()
	if err != nil || r == nil {
		return
	}
	time.Sleep(r.IndexLag + 50*time.Millisecond)
}

// AwaitReads waits, in the realistic mode, until every write made before
// it is visible to reads without ConsistentRead and to the indexes (the
// mode's larger lag); at once otherwise. For reads documented eventual:
// metric chunks, written by the asynchronous aggregation (docs/metrics.md).
func AwaitReads() {
	r, err := localaws.RealismFromEnv()
	if err != nil || r == nil {
		return
	}
	time.Sleep(max(r.ReadLag, r.IndexLag) + 50*time.Millisecond)
}

// BuildDir is a directory kept between runs, and between checkouts of the
// repository, for binaries a test builds with go build
// (buildcache.Dir): go build relinks a binary there only when its build
// ID differs from what the sources and flags give now, so a run after no
// change checks that it builds without linking it again. The
// repository's ignored .build where there is no user cache directory.
func BuildDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := buildcache.Dir(name)
	if err == nil {
		return dir
	}
	dir = filepath.Join(Root(t), ".build", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
