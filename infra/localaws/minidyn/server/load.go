package server

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// PutItems writes items into tableName in-process, each as a PutItem
// with no condition would (the same validation and index upkeep), without
// the wire protocol: no HTTP, no JSON. It is for tests that need large
// tables; a request over the wire cannot tell the items from ones put
// through it.
func (s *Server) PutItems(ctx context.Context, tableName string, items []map[string]ddbtypes.AttributeValue) error {
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}

		if _, err := s.client.PutItem(ctx, &PutItemInput{TableName: aws.String(tableName), Item: mapDDBAttributeMapToWire(it)}); err != nil {
			return fmt.Errorf("item %d of %d: %w", i, len(items), err)
		}
	}

	return nil
}
