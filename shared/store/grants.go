package store

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

func grantKey(g Grant) keyAttrs {
	return keyAttrs{
		PK: principalPK(g.PrincipalID), SK: grantSK(g.AccountID, g.RoleID),
		// The role's holders, so that deleting a role can revoke its grants.
		GSI1PK: roleHoldersGSI(g.AccountID, g.RoleID), GSI1SK: principalPK(g.PrincipalID),
		Entity: "grant",
	}
}

// Grants returns the roles a principal holds.
func (s *Store) Grants(ctx context.Context, principal string) ([]Grant, error) {
	items, err := s.query(ctx, "query grants", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: principalPK(principal)},
			":sk": &types.AttributeValueMemberS{Value: prefixGrant},
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[Grant](items)
}

// PutGrant records that a principal holds a role; the role must exist.
func (s *Store) PutGrant(ctx context.Context, g Grant) error {
	m, err := item(grantKey(g), g)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "put grant", []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: m}},
		{ConditionCheck: &types.ConditionCheck{
			TableName:           aws.String(s.table),
			Key:                 key(rbacPK(g.AccountID), roleSK(g.RoleID)),
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}},
	})
	if errors.Is(err, ddb.ErrConditionFailed) {
		return ErrNotFound
	}
	return err
}
