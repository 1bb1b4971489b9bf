package testenv_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/localaws"
	"cads/infra/testenv"
)

// CADS_DYNAMO_REALISM starts a test's DynamoDB in realistic mode: an
// eventual read misses a write a consistent read sees.
func TestNewDynamoRealistic(t *testing.T) {
	t.Setenv(localaws.RealismEnv, "seed=1,lag=1h,conflicts=0,throttles=0,unprocessed=0")
	d := testenv.NewDynamo(t)
	ctx := t.Context()
	k := map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "R"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "1"}}
	if _, err := d.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.Table), Item: k}); err != nil {
		t.Fatal(err)
	}
	for _, consistent := range []bool{true, false} {
		out, err := d.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Table), Key: k, ConsistentRead: aws.Bool(consistent)})
		if err != nil {
			t.Fatal(err)
		}
		if (out.Item != nil) != consistent {
			t.Errorf("GetItem (consistent %v) right after the PutItem: %v", consistent, out.Item)
		}
	}
}
