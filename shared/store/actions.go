package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

const prefixAction = "ACTION#"

func actionKey(app, id string) keyAttrs {
	return keyAttrs{PK: appPK(app), SK: prefixAction + id, Entity: "action"}
}

// CreateAction adds an action to an application of account in one
// transaction with the check that the application is the account's: a
// missing application is domain.ErrNotFound, a taken id a *domain.Error,
// an application at its actions quota domain.QuotaReached (the count is
// the application's, kept in the same transaction).
func (s *Applications) CreateAction(ctx context.Context, account string, a domain.Action) error {
	p, err := s.put(actionKey(a.App, a.ID), a)
	if err != nil {
		return err
	}
	q, err := s.quotaOf(ctx, account, domain.ResourceActions)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create action", []types.TransactWriteItem{p, s.appInAccount(account, a.App), s.usageOpAt(appPK(a.App), q, 1)})
	switch {
	case txConditionFailedAt(err, 1):
		return domain.ErrNotFound
	case txConditionFailedAt(err, 2):
		return domain.QuotaReached(account, q, strconv.Itoa(q.Limit))
	case txConditionFailedAt(err, 0):
		return domain.DuplicateAction(a.App, a.ID)
	}
	return err
}

// GetAction reads an action and its application in one consistent
// BatchGetItem; either missing, or the application in another account, is
// domain.ErrNotFound.
func (s *Applications) GetAction(ctx context.Context, account, app, id string) (domain.Action, error) {
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, []map[string]types.AttributeValue{
		key(appPK(app), skApp), key(appPK(app), prefixAction+id),
	})
	if err != nil {
		return domain.Action{}, wrap("get action", err)
	}
	var (
		act   domain.Action
		found bool
		owner string
	)
	for _, it := range items {
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		switch {
		case sk == nil:
		case sk.Value == skApp:
			var a domain.Application
			if err := attributevalue.UnmarshalMap(it, &a); err != nil {
				return domain.Action{}, fmt.Errorf("get action: unmarshal application: %w", err)
			}
			owner = a.Account
		default:
			if err := attributevalue.UnmarshalMap(it, &act); err != nil {
				return domain.Action{}, fmt.Errorf("get action: unmarshal: %w", err)
			}
			found = true
		}
	}
	if owner != account || !found {
		return domain.Action{}, domain.ErrNotFound
	}
	return act, nil
}

// childrenOf reads an application (to check its account) and queries its
// partition for sk prefix, in parallel: one round trip of wall time.
func (s *Applications) childrenOf(ctx context.Context, account, app, prefix string) ([]map[string]types.AttributeValue, error) {
	var g errgroup.Group // the partition's error is reported only if the application exists
	g.Go(func() error { _, err := s.GetApplication(ctx, account, app); return err })
	items, err := s.query(ctx, "query application partition", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(appPK(app)), ":sk": avStr(prefix),
		},
		ConsistentRead: aws.Bool(true),
	}, 0)
	if appErr := g.Wait(); appErr != nil {
		return nil, appErr
	}
	return items, err
}

// ReplaceAction writes a changed action if it is still at version from
// (domain.ErrChanged otherwise) and its application still belongs to
// account (domain.ErrNotFound otherwise). a.Version must already be from+1.
func (s *Applications) ReplaceAction(ctx context.Context, account string, a domain.Action, from int) error {
	p, err := s.put(actionKey(a.App, a.ID), a)
	if err != nil {
		return err
	}
	p.Put.ConditionExpression = aws.String("version = :v")
	p.Put.ExpressionAttributeValues = map[string]types.AttributeValue{":v": avNum(int64(from))}
	err = s.transact(ctx, "replace action", []types.TransactWriteItem{p, s.appInAccount(account, a.App)})
	return actionWriteError(err)
}

// DeleteAction deletes an action read at version from.
func (s *Applications) DeleteAction(ctx context.Context, account, app, id string, from int) error {
	err := s.transact(ctx, "delete action", []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName:                 aws.String(s.table),
			Key:                       key(appPK(app), prefixAction+id),
			ConditionExpression:       aws.String("version = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(int64(from))},
		}},
		s.appInAccount(account, app),
		s.usageOpAt(appPK(app), domain.Quota{Kind: domain.ResourceActions}, -1),
	})
	return actionWriteError(err)
}

func actionWriteError(err error) error {
	switch {
	case txConditionFailedAt(err, 1):
		return domain.ErrNotFound
	case txConditionFailedAt(err, 0):
		return domain.ErrChanged
	case errors.Is(err, ddb.ErrConditionFailed):
		return domain.ErrChanged
	}
	return err
}
