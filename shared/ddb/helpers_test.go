package ddb

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// TestMain isolates the tests from any AWS setup on the machine, so NewClient
// is exercised exactly as on a developer box with nothing configured.
func TestMain(m *testing.M) {
	for _, k := range []string{
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_DYNAMODB", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	} {
		os.Unsetenv(k)
	}
	dir, err := os.MkdirTemp("", "ddbtest")
	if err != nil {
		panic(err)
	}
	os.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never wait on IMDS, even if a test is wrong
	// Keep UnprocessedKeys/Items retries fast.
	unprocessedBaseBackoff = time.Millisecond
	unprocessedMaxBackoff = 5 * time.Millisecond
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const testTable = "t"

type env struct {
	srv    *server.Server
	url    string
	client *dynamodb.Client
	count  *Counter
}

// fastRetries keeps SDK retries (5xx) quick in tests.
func fastRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 3
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	})
}

// newEnv starts a minidyn server on 127.0.0.1, creates table "t" (pk, sk
// strings) and returns a real SDK client built by NewClient with a Counter
// installed. The counter is reset after setup.
func newEnv(t testing.TB) *env {
	t.Helper()
	srv := server.NewServer()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := NewCounter()
	client, err := NewClient(context.Background(),
		func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(hs.URL) },
		fastRetries,
		c.Option(),
	)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String(testTable),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	return &env{srv: srv, url: hs.URL, client: client, count: c}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func b(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)}
}

func item(pk, sk string, attrs ...any) map[string]types.AttributeValue {
	it := key(pk, sk)
	for i := 0; i+1 < len(attrs); i += 2 {
		it[attrs[i].(string)] = attrs[i+1].(types.AttributeValue)
	}
	return it
}

func (e *env) put(t testing.TB, it map[string]types.AttributeValue) {
	t.Helper()
	if _, err := e.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(testTable), Item: it}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) putMany(t testing.TB, pk string, count int) {
	t.Helper()
	reqs := make([]types.WriteRequest, count)
	for i := range reqs {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: item(pk, fmt.Sprintf("%04d", i), "v", n(fmt.Sprint(i)))}}
	}
	if err := BatchWrite(context.Background(), e.client, testTable, reqs); err != nil {
		t.Fatal(err)
	}
}
