package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

func accessKeyKey(k domain.AccessKey) keyAttrs {
	ka := keyAttrs{PK: principalPK(k.PrincipalID), SK: keySK(k.ID), Entity: "access_key",
		GSI2PK: keysList(k.PrincipalID), GSI2SK: createdPosition(k.Created, k.ID)}
	if k.Account != "" {
		// Lets an account's deletion find and revoke every key bound to it.
		ka.GSI1PK, ka.GSI1SK = accountKeysGSI(k.Account), keySK(k.ID)
	}
	return ka
}

// CreateKey stores a new access key; the principal must exist. It counts
// against no quota: the API creates keys with CreateUserKey (and service
// users' with CreateServiceUser); this is for setups that place keys.
func (s *Principals) CreateKey(ctx context.Context, k domain.AccessKey) error {
	return s.createKey(ctx, k, "", nil)
}

// CreateUserKey is CreateKey for a principal that must be a user (service
// users get keys with their principal, from their account): one
// transaction checks both, so the caller needs no read first. The key
// counts against q, the user's access_keys or session_keys quota (from
// KeyQuota; domain.QuotaReached past it; keyquota.go).
func (s *Principals) CreateUserKey(ctx context.Context, k domain.AccessKey, q domain.Quota) error {
	return s.repos.Entitlements.createCountedKey(ctx, k, q)
}

// createKey writes k in one transaction with the check of its principal
// and, when count is not nil, the count's update (the last item).
func (s *Principals) createKey(ctx context.Context, k domain.AccessKey, kind string, count *types.TransactWriteItem) error {
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
		check.ExpressionAttributeValues = map[string]types.AttributeValue{":kind": avStr(kind)}
	}
	items := []types.TransactWriteItem{put, {ConditionCheck: check}}
	if count != nil {
		items = append(items, *count)
	}
	err = s.transact(ctx, "create access key", items)
	if txConditionFailedAt(err, 1) || (count == nil && errors.Is(err, ddb.ErrConditionFailed)) {
		return domain.ErrNotFound
	}
	return err
}

// GetKey reads one key of a principal.
func (s *Principals) GetKey(ctx context.Context, principal, id string) (domain.AccessKey, error) {
	var k domain.AccessKey
	err := s.getItem(ctx, "get access key", principalPK(principal), keySK(id), &k)
	return k, err
}

// ListKeys returns a principal's keys.
func (s *Principals) ListKeys(ctx context.Context, principal string) ([]domain.AccessKey, error) {
	return s.principalKeys(ctx, principal)
}

// principalKeys reads every key of a principal (consistent, as every
// base-table read: a key minted a moment ago must be seen by a revocation).
func (s *Principals) principalKeys(ctx context.Context, principal string) ([]domain.AccessKey, error) {
	items, err := s.query(ctx, "list access keys", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(principalPK(principal)),
			":sk": avStr(prefixKey),
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[domain.AccessKey](items)
}

// DeleteKey revokes a key: the item is gone, so the very next request
// carrying its secret is refused (the authorizer reads the key every time).
// The principal's keys minted under it (its lineage, docs/rbac.md) go in
// the same transaction: one Query of the principal's keys finds them,
// however long the chain, and the authorizer would refuse them anyway
// (their origin or parent is gone) except a grandchild of a key deleted
// in the middle of a chain, which only this deletion reaches. When there
// are more than a transaction holds, the rest follow in batches (a
// *CleanupError if that fails, with the key deleted). pre, when given,
// judges the key as read (a request's If-Match): the delete is then
// conditional on the key's use as read (the one thing of a key that
// changes), and a use since is domain.ErrChanged.
func (s *Principals) DeleteKey(ctx context.Context, principal, id string, pre ...func(domain.AccessKey) error) (domain.AccessKey, error) {
	keys, err := s.principalKeys(ctx, principal)
	if err != nil {
		return domain.AccessKey{}, err
	}
	var k *domain.AccessKey
	for i := range keys {
		if keys[i].ID == id {
			k = &keys[i]
		}
	}
	if k == nil {
		return domain.AccessKey{}, domain.ErrNotFound
	}
	del := &types.Delete{
		TableName:           aws.String(s.table),
		Key:                 key(principalPK(principal), keySK(id)),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}
	for _, check := range pre {
		if err := check(*k); err != nil {
			return domain.AccessKey{}, err
		}
		if k.LastUsed == nil {
			del.ConditionExpression = aws.String("attribute_exists(PK) AND attribute_not_exists(last_used)")
		} else {
			del.ConditionExpression = aws.String("attribute_exists(PK) AND last_used = :lu")
			del.ExpressionAttributeValues = map[string]types.AttributeValue{":lu": avStr(k.LastUsed.UTC().Format(timeLayout))}
		}
	}
	desc := domain.Descendants(keys, []domain.KeyRef{k.Ref()})
	if len(desc) == 0 {
		// The common case (no key was minted with it) needs no transaction,
		// which DynamoDB bills twice.
		_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: del.TableName, Key: del.Key, ConditionExpression: del.ConditionExpression,
			ExpressionAttributeValues: del.ExpressionAttributeValues})
		if ddb.IsConditionFailed(err) {
			err = ddb.ErrConditionFailed // as commit reports it
		}
		err = wrap("delete access key", err)
	} else {
		cleanup := make([]map[string]types.AttributeValue, 0, len(desc))
		for _, d := range desc {
			cleanup = append(cleanup, key(principalPK(d.PrincipalID), keySK(d.ID)))
		}
		err = s.commit(ctx, "delete access key", []types.TransactWriteItem{{Delete: del}}, cleanup)
	}
	if errors.Is(err, ddb.ErrConditionFailed) && len(pre) > 0 {
		return domain.AccessKey{}, domain.ErrChanged
	}
	if errors.Is(err, ddb.ErrConditionFailed) {
		return domain.AccessKey{}, domain.ErrNotFound // a concurrent DELETE won
	}
	var ce *CleanupError
	if err != nil && !errors.As(err, &ce) {
		return domain.AccessKey{}, err
	}
	return *k, err
}

// LoadKeyStanding reads the account (when account != "") and the keys
// refs names with one BatchGetItem: the authorizer's second round trip
// holds it in parallel with the role Queries, so a session key costs no
// sequential round trip more than a persistent one.
func (s *Principals) LoadKeyStanding(ctx context.Context, account string, refs []domain.KeyRef) (domain.KeyStanding, error) {
	st := domain.KeyStanding{Keys: make(map[domain.KeyRef]domain.AccessKey, len(refs))}
	keys := make([]map[string]types.AttributeValue, 0, len(refs)+1)
	if account != "" {
		keys = append(keys, key(accountPK(account), skAccount))
	}
	for _, r := range refs {
		keys = append(keys, key(principalPK(r.Principal), keySK(r.ID)))
	}
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return st, wrap("load key standing", err)
	}
	for _, it := range items {
		var ka keyAttrs
		if err := attributevalue.UnmarshalMap(it, &ka); err != nil {
			return st, fmt.Errorf("load key standing: %w", err)
		}
		switch ka.Entity {
		case "account":
			st.Account = &domain.Account{}
			err = attributevalue.UnmarshalMap(it, st.Account)
		case "access_key":
			var k domain.AccessKey
			if err = attributevalue.UnmarshalMap(it, &k); err == nil {
				st.Keys[k.Ref()] = k
			}
		}
		if err != nil {
			return st, fmt.Errorf("load key standing: unmarshal %s: %w", ka.Entity, err)
		}
	}
	return st, nil
}

// TouchKey records that a key was used at now, unless it was already
// recorded within domain.KeyUseGranularity (then the conditional update is a
// no-op). It never fails the caller's request: errors are returned for
// logging only.
func (s *Principals) TouchKey(ctx context.Context, principal, id string, now time.Time) error {
	ctx = unjournaled(ctx)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(principalPK(principal), keySK(id)),
		UpdateExpression:    aws.String("SET last_used = :now"),
		ConditionExpression: aws.String("attribute_exists(PK) AND (attribute_not_exists(last_used) OR last_used < :cutoff)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":    avStr(now.UTC().Format(timeLayout)),
			":cutoff": avStr(now.Add(-domain.KeyUseGranularity).UTC().Format(timeLayout)),
		},
	})
	if ddb.IsConditionFailed(err) {
		return nil
	}
	return wrap("touch access key", err)
}
