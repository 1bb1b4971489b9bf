package server

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/truora/minidyn/types"
)

// PutItems writes items into tableName in-process, each as a PutItem
// with no condition would (the same validation, packing and index upkeep:
// core.Table.Put), without the wire protocol: no HTTP, no JSON. It is for
// tests that need large tables; a request over the wire cannot tell the
// items from ones put through it.
//
// Unlike a PutItem request it converts each item once, straight from the
// SDK's types to the table's (mapDDBAttributeMapToTypes), and builds no
// response: loading 10,000 items under the race detector spent about a
// third of its time on the two conversions and the unused response.
func (s *Server) PutItems(ctx context.Context, tableName string, items []map[string]ddbtypes.AttributeValue) error {
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}

		if err := s.client.putLoaded(ctx, tableName, mapDDBAttributeMapToTypes(it)); err != nil {
			return fmt.Errorf("item %d of %d: %w", i, len(items), err)
		}
	}

	return nil
}

// putLoaded is PutItem without a condition, expressions or return values,
// for an item already in the table's types.
func (c *Client) putLoaded(ctx context.Context, tableName string, item map[string]*types.Item) error {
	c.mu.Lock()
	defer c.mu.Unlock()

	if ferr := c.failureErrFor(tableName, ""); ferr != nil {
		return ferr
	}

	table, err := c.getTable(tableName)
	if err != nil {
		return err
	}

	err = billWrite(ctx, table, item, 1, func() error {
		_, err := table.Put(&types.PutItemInput{TableName: aws.String(tableName), Item: item})

		return err
	})
	if err != nil {
		return mapKnownError(err)
	}

	return nil
}

// mapDDBAttributeMapToTypes is mapAttributeValueMapToTypes of
// mapDDBAttributeMapToWire, without the wire values in between.
func mapDDBAttributeMapToTypes(m map[string]ddbtypes.AttributeValue) map[string]*types.Item {
	if m == nil {
		return nil
	}

	out := make(map[string]*types.Item, len(m))
	for k, v := range m {
		out[k] = mapDDBAttributeValueToTypes(v)
	}

	return out
}

// mapDDBAttributeValueToTypes is mapAttributeValueToTypes of
// mapDDBAttributeValueToWire.
func mapDDBAttributeValueToTypes(av ddbtypes.AttributeValue) *types.Item {
	switch v := av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return &types.Item{S: aws.String(v.Value)}
	case *ddbtypes.AttributeValueMemberN:
		return &types.Item{N: aws.String(v.Value)}
	case *ddbtypes.AttributeValueMemberB:
		return &types.Item{B: v.Value}
	case *ddbtypes.AttributeValueMemberBOOL:
		return &types.Item{BOOL: aws.Bool(v.Value)}
	case *ddbtypes.AttributeValueMemberBS:
		return &types.Item{BS: v.Value}
	case *ddbtypes.AttributeValueMemberNS:
		return &types.Item{NS: aws.StringSlice(v.Value)}
	case *ddbtypes.AttributeValueMemberSS:
		return &types.Item{SS: aws.StringSlice(v.Value)}
	case *ddbtypes.AttributeValueMemberNULL:
		return &types.Item{NULL: aws.Bool(v.Value)}
	case *ddbtypes.AttributeValueMemberM:
		// Never nil, as on the wire: an empty map is a value.
		inner := make(map[string]*types.Item, len(v.Value))
		for ik, iv := range v.Value {
			inner[ik] = mapDDBAttributeValueToTypes(iv)
		}

		return &types.Item{M: inner}
	case *ddbtypes.AttributeValueMemberL:
		ll := make([]*types.Item, len(v.Value))
		for i := range v.Value {
			ll[i] = mapDDBAttributeValueToTypes(v.Value[i])
		}

		return &types.Item{L: ll}
	default:
		return nil
	}
}
