package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

func roleKey(r Role) keyAttrs {
	return keyAttrs{PK: rbacPK(r.AccountID), SK: roleSK(r.ID), Entity: "role"}
}

// GetRole reads one role of an account.
func (s *Store) GetRole(ctx context.Context, account, id string) (Role, error) {
	var r Role
	err := s.getItem(ctx, "get role", rbacPK(account), roleSK(id), &r)
	return r, err
}

// RolesOf returns every role of each account, reading the accounts' RBAC
// partitions in parallel: one round trip of wall time however many accounts
// are asked for. The authorizer uses it for the accounts in which the
// principal holds grants.
func (s *Store) RolesOf(ctx context.Context, accounts []string) ([]Role, error) {
	var (
		mu    sync.Mutex
		roles []Role
		first error
		wg    sync.WaitGroup
	)
	for _, acct := range accounts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items, err := s.query(ctx, "query roles", &dynamodb.QueryInput{
				KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": &types.AttributeValueMemberS{Value: rbacPK(acct)},
					":sk": &types.AttributeValueMemberS{Value: prefixRole},
				},
			}, 0)
			var rs []Role
			if err == nil {
				rs, err = unmarshalAll[Role](items)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("roles of account %s: %w", acct, err)
				}
				return
			}
			roles = append(roles, rs...)
		}()
	}
	wg.Wait()
	return roles, first
}

// CreateRole writes a new role; its account must exist.
func (s *Store) CreateRole(ctx context.Context, r Role) error {
	put, err := s.put(roleKey(r), r)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create role", []types.TransactWriteItem{put, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(r.AccountID), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}})
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) {
		for _, reason := range tx.Reasons {
			if reason.Index == 0 && reason.Code == ddb.ReasonConditionalCheckFailed {
				return &ConflictError{Msg: "a role with id " + r.ID + " already exists in account " + r.AccountID}
			}
		}
		if errors.Is(err, ddb.ErrConditionFailed) {
			return ErrNotFound // the account does not exist
		}
	}
	return err
}

// PutRole replaces an existing role, only if the stored version is the one
// before r.Version: two concurrent edits cannot silently overwrite each
// other (the loser gets a *ConflictError).
func (s *Store) PutRole(ctx context.Context, r Role) error {
	m, err := item(roleKey(r), r)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                m,
		ConditionExpression: aws.String("attribute_exists(PK) AND version = :prev"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":prev": &types.AttributeValueMemberN{Value: strconv.Itoa(r.Version - 1)},
		},
	})
	if ddb.IsConditionFailed(err) {
		return &ConflictError{Msg: "the role changed meanwhile; read it again and retry"}
	}
	return wrap("put role", err)
}
