package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// An alias names one application in the whole installation: the edge
// routes a request by its Host, so two applications with one alias would
// let one tenant's traffic (or its application tests) reach another's
// site. Each alias is claimed by an ALIAS#<alias> item written in the
// same transaction as the application's create or the configuration
// change that adds it, on the condition that no other application holds
// it, and deleted in the transaction that drops the alias or deletes the
// application. So the claim exists exactly while the alias is on the
// application's configuration, and a GetItem finds the one application a
// host name belongs to.

const skAlias = "ALIAS"

func aliasPK(alias string) string { return "ALIAS#" + domain.AliasKey(alias) }

// appTxItems is how many actions of an application's create transaction
// are not alias claims: the application, the account check and the usage
// count. A patch-application task's transaction has as many (the task,
// its outbox marker, the configuration).
const appTxItems = 3

// MaxAliasWrites is how many alias claims one transaction can write or
// delete beside the application's own items: an application holds at
// most this many aliases, and one configuration change adds and removes
// at most this many together (DynamoDB's 100 actions per transaction).
const MaxAliasWrites = ddb.MaxTransactItems - appTxItems

// ErrTooManyAliasChanges is returned (wrapped) when one write would add
// and remove more aliases than MaxAliasWrites.
var ErrTooManyAliasChanges = errors.New("too many alias changes for one transaction")

type aliasClaim struct {
	App     string `dynamodbav:"app"`
	Account string `dynamodbav:"account"`
	Alias   string `dynamodbav:"alias"`
}

// claimAlias is the transaction action claiming alias for app: it fails
// when another application holds it.
func (s *Applications) claimAlias(account, app, alias string) (types.TransactWriteItem, error) {
	it, err := item(keyAttrs{PK: aliasPK(alias), SK: skAlias, Entity: "alias"}, aliasClaim{App: app, Account: account, Alias: domain.AliasKey(alias)})
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR app = :app"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":app": avStr(app)},
	}}, nil
}

// releaseAlias is the transaction action deleting app's claim of alias; a
// claim of another application is never deleted (the transaction fails).
func (s *Applications) releaseAlias(app, alias string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       key(aliasPK(alias), skAlias),
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR app = :app"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":app": avStr(app)},
	}}
}

// aliasChanges are the claim actions that move app's aliases from `from`
// to `to`: claims of the added ones, then deletions of the removed ones.
// It also returns the added aliases, in the order of their actions.
func (s *Applications) aliasChanges(account, app string, from, to []string) ([]types.TransactWriteItem, []string, error) {
	var items []types.TransactWriteItem
	var added []string
	for _, a := range to {
		if k := domain.AliasKey(a); !slices.ContainsFunc(from, func(f string) bool { return domain.AliasKey(f) == k }) && !slices.Contains(added, k) {
			added = append(added, k)
		}
	}
	var removed []string
	for _, f := range from {
		if k := domain.AliasKey(f); !slices.ContainsFunc(to, func(a string) bool { return domain.AliasKey(a) == k }) && !slices.Contains(removed, k) {
			removed = append(removed, k)
		}
	}
	if n := len(added) + len(removed); n > MaxAliasWrites {
		return nil, nil, fmt.Errorf("application %s: %d aliases added or removed, at most %d: %w", app, n, MaxAliasWrites, ErrTooManyAliasChanges)
	}
	for _, a := range added {
		p, err := s.claimAlias(account, app, a)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, p)
	}
	for _, r := range removed {
		items = append(items, s.releaseAlias(app, r))
	}
	return items, added, nil
}

// aliasFailure is the conflict of a canceled transaction whose claim at
// action index first+i (for added[i]) failed, or nil.
func aliasFailure(err error, first int, added []string) *domain.Error {
	for i, a := range added {
		if txConditionFailedAt(err, first+i) {
			return domain.AliasTaken(a)
		}
	}
	return nil
}

// AliasOwner returns the application (and its account) that alias names,
// read consistently; domain.ErrNotFound when no application has it.
func (s *Applications) AliasOwner(ctx context.Context, alias string) (app, account string, err error) {
	var c aliasClaim
	if err := s.getItem(ctx, "get alias", aliasPK(alias), skAlias, &c); err != nil {
		return "", "", err
	}
	return c.App, c.Account, nil
}

// AliasAccounts returns, for those of aliases that an application holds,
// the account of that application, keyed by AliasKey: what an alias check
// reads, so that an application created a moment ago counts and one
// deleted does not (the GSI1 list of an account's applications may lag
// behind both).
func (s *Applications) AliasAccounts(ctx context.Context, aliases []string) (map[string]string, error) {
	return s.aliasClaims(ctx, "get alias claims", aliases, func(c aliasClaim) string { return c.Account })
}

// AliasOwners returns, for those of aliases that an application holds,
// the application's id, keyed by AliasKey.
func (s *Applications) AliasOwners(ctx context.Context, aliases []string) (map[string]string, error) {
	return s.aliasClaims(ctx, "get aliases", aliases, func(c aliasClaim) string { return c.App })
}

// aliasClaims reads the claims of aliases (one consistent BatchGetItem
// per 100) and maps each claimed alias to what of its claim pick takes.
func (s *Applications) aliasClaims(ctx context.Context, op string, aliases []string, pick func(aliasClaim) string) (map[string]string, error) {
	out := map[string]string{}
	if len(aliases) == 0 {
		return out, nil
	}
	var keys []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, a := range aliases {
		if k := domain.AliasKey(a); !seen[k] {
			seen[k] = true
			keys = append(keys, key(aliasPK(k), skAlias))
		}
	}
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return nil, wrap(op, err)
	}
	for _, it := range items {
		var c aliasClaim
		if err := attributevalue.UnmarshalMap(it, &c); err != nil {
			return nil, fmt.Errorf("%s: unmarshal: %w", op, err)
		}
		out[c.Alias] = pick(c)
	}
	return out, nil
}
