package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

func accessKeyKey(k AccessKey) keyAttrs {
	ka := keyAttrs{PK: principalPK(k.PrincipalID), SK: keySK(k.ID), Entity: "access_key"}
	if k.Account != "" {
		// Lets an account's deletion find and revoke every key bound to it.
		ka.GSI1PK, ka.GSI1SK = accountKeysGSI(k.Account), keySK(k.ID)
	}
	return ka
}

// CreateKey stores a new access key; the principal must exist.
func (s *Store) CreateKey(ctx context.Context, k AccessKey) error { return s.createKey(ctx, k, "") }

// CreateUserKey is CreateKey for a principal that must be a user (service
// users get keys with their principal, from their account): one
// transaction checks both, so the caller needs no read first.
func (s *Store) CreateUserKey(ctx context.Context, k AccessKey) error {
	return s.createKey(ctx, k, KindUser)
}

func (s *Store) createKey(ctx context.Context, k AccessKey, kind string) error {
	if k.Expiry != nil {
		k.TTL = k.Expiry.Add(24 * time.Hour).Unix()
	}
	put, err := s.put(accessKeyKey(k), k)
	if err != nil {
		return err
	}
	check := &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(principalPK(k.PrincipalID), skPrincipal),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}
	if kind != "" {
		check.ConditionExpression = aws.String("attribute_exists(PK) AND kind = :kind")
		check.ExpressionAttributeValues = map[string]types.AttributeValue{":kind": &types.AttributeValueMemberS{Value: kind}}
	}
	err = s.transact(ctx, "create access key", []types.TransactWriteItem{put, {ConditionCheck: check}})
	if errors.Is(err, ddb.ErrConditionFailed) {
		return ErrNotFound
	}
	return err
}

// GetKey reads one key of a principal.
func (s *Store) GetKey(ctx context.Context, principal, id string) (AccessKey, error) {
	var k AccessKey
	err := s.getItem(ctx, "get access key", principalPK(principal), keySK(id), &k)
	return k, err
}

// ListKeys returns a principal's keys.
func (s *Store) ListKeys(ctx context.Context, principal string) ([]AccessKey, error) {
	items, err := s.query(ctx, "list access keys", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: principalPK(principal)},
			":sk": &types.AttributeValueMemberS{Value: prefixKey},
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[AccessKey](items)
}

// DeleteKey revokes a key: the item is gone, so the very next request
// carrying its secret is refused (the authorizer reads the key every time).
func (s *Store) DeleteKey(ctx context.Context, principal, id string) (AccessKey, error) {
	res, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(principalPK(principal), keySK(id)),
		ConditionExpression: aws.String("attribute_exists(PK)"),
		ReturnValues:        types.ReturnValueAllOld,
	})
	if ddb.IsConditionFailed(err) {
		return AccessKey{}, ErrNotFound
	}
	if err != nil {
		return AccessKey{}, wrap("delete access key", err)
	}
	out, err := unmarshalAll[AccessKey]([]map[string]types.AttributeValue{res.Attributes})
	if err != nil {
		return AccessKey{}, err
	}
	return out[0], nil
}

// lastUsedGranularity bounds how often a key's last_used is written: at most
// once a minute per key, so a busy key costs no write per request.
const lastUsedGranularity = time.Minute

// UseIsStale says whether a use at now should be recorded: the key (as
// read) has no last_used within lastUsedGranularity. Callers skip TouchKey
// otherwise: a write whose condition fails is billed all the same.
func (k AccessKey) UseIsStale(now time.Time) bool {
	return k.LastUsed == nil || !k.LastUsed.After(now.Add(-lastUsedGranularity))
}

// TouchKey records that a key was used at now, unless it was already
// recorded within lastUsedGranularity (then the conditional update is a
// no-op). It never fails the caller's request: errors are returned for
// logging only.
func (s *Store) TouchKey(ctx context.Context, principal, id string, now time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(principalPK(principal), keySK(id)),
		UpdateExpression:    aws.String("SET last_used = :now"),
		ConditionExpression: aws.String("attribute_exists(PK) AND (attribute_not_exists(last_used) OR last_used < :cutoff)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":    &types.AttributeValueMemberS{Value: now.UTC().Format(timeLayout)},
			":cutoff": &types.AttributeValueMemberS{Value: now.Add(-lastUsedGranularity).UTC().Format(timeLayout)},
		},
	})
	if ddb.IsConditionFailed(err) {
		return nil
	}
	return wrap("touch access key", err)
}
