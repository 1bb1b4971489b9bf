package store

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The attribute values of expressions (keys, conditions, updates) that
// are not whole items: items go through attributevalue's marshaller.

func avStr(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func avNum(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// avTime writes a time as the item marshaller does, so that updated
// attributes read back like written ones.
func avTime(t time.Time) types.AttributeValue {
	v, err := attributevalue.Marshal(t)
	if err != nil {
		return avStr(t.UTC().Format(time.RFC3339Nano))
	}
	return v
}
