package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
