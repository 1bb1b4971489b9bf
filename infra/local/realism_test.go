package local_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"cads/infra/local/localtest"
	"cads/infra/localaws"
)

// CADS_DYNAMO_REALISM starts a test's platform on a realistic DynamoDB:
// the platform says so (with the seed) and its table lags for eventual
// reads and refuses consistent index reads.
func TestPlatformStartsRealistic(t *testing.T) {
	// A lag far beyond the test, so that an eventual read cannot see the
	// write whatever the seed draws; no injected failures, so that the
	// bootstrap goes through.
	t.Setenv(localaws.RealismEnv, "seed=3,lag=1h,tx-hold=0,conflicts=0,throttles=0,unprocessed=0")
	p, logs := localtest.Start(t)
	if p.URL == "" {
		t.Fatal("no API URL")
	}
	var endpoint, realism string
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Msg, Endpoint, Realism string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "dynamodb: embedded minidyn, realistic mode" {
			endpoint, realism = line.Endpoint, line.Realism
		}
	}
	if endpoint == "" || !strings.Contains(realism, "seed=3 ") {
		t.Fatalf("the platform did not say it runs DynamoDB in realistic mode with seed 3 (realism %q)", realism)
	}
	ctx := t.Context()
	c, err := localaws.DynamoClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	const table = "cads-local"
	k := map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "REALISM#1"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "X"}}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: k}); err != nil {
		t.Fatal(err)
	}
	for _, consistent := range []bool{true, false} {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(consistent)})
		if err != nil {
			t.Fatal(err)
		}
		if (out.Item != nil) != consistent {
			t.Errorf("GetItem (consistent %v) right after the PutItem: item %v", consistent, out.Item)
		}
	}
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("GSI1"), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("GSI1PK = :p"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "x"}}})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		t.Errorf("a consistent Query of GSI1: %v, want a ValidationException", err)
	}
}
