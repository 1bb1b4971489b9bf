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
)

func accessKeyKey(k AccessKey) keyAttrs {
	ka := keyAttrs{PK: principalPK(k.PrincipalID), SK: keySK(k.ID), Entity: "access_key",
		GSI2PK: keysList(k.PrincipalID), GSI2SK: createdPosition(k.Created, k.ID)}
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
	return s.principalKeys(ctx, principal, false)
}

// principalKeys reads every key of a principal; consistent for reads a
// revocation is based on (a key minted a moment ago must be seen).
func (s *Store) principalKeys(ctx context.Context, principal string, consistent bool) ([]AccessKey, error) {
	items, err := s.query(ctx, "list access keys", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: principalPK(principal)},
			":sk": &types.AttributeValueMemberS{Value: prefixKey},
		},
		ConsistentRead: aws.Bool(consistent),
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[AccessKey](items)
}

// DeleteKey revokes a key: the item is gone, so the very next request
// carrying its secret is refused (the authorizer reads the key every time).
// The principal's keys minted under it (its lineage, docs/rbac.md) go in
// the same transaction: one Query of the principal's keys finds them,
// however long the chain, and the authorizer would refuse them anyway
// (their origin or parent is gone) except a grandchild of a key deleted
// in the middle of a chain, which only this deletion reaches. When there
// are more than a transaction holds, the rest follow in batches (a
// *CleanupError if that fails, with the key deleted).
func (s *Store) DeleteKey(ctx context.Context, principal, id string) (AccessKey, error) {
	keys, err := s.principalKeys(ctx, principal, true)
	if err != nil {
		return AccessKey{}, err
	}
	var k *AccessKey
	for i := range keys {
		if keys[i].ID == id {
			k = &keys[i]
		}
	}
	if k == nil {
		return AccessKey{}, ErrNotFound
	}
	del := &types.Delete{
		TableName:           aws.String(s.table),
		Key:                 key(principalPK(principal), keySK(id)),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}
	desc := Descendants(keys, []KeyRef{k.Ref()})
	if len(desc) == 0 {
		// The common case (no key was minted with it) needs no transaction,
		// which DynamoDB bills twice.
		_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: del.TableName, Key: del.Key, ConditionExpression: del.ConditionExpression})
		err = wrap("delete access key", err)
	} else {
		cleanup := make([]map[string]types.AttributeValue, 0, len(desc))
		for _, d := range desc {
			cleanup = append(cleanup, key(principalPK(d.PrincipalID), keySK(d.ID)))
		}
		err = s.commit(ctx, "delete access key", []types.TransactWriteItem{{Delete: del}}, cleanup)
	}
	if errors.Is(err, ddb.ErrConditionFailed) {
		return AccessKey{}, ErrNotFound // a concurrent DELETE won
	}
	var ce *CleanupError
	if err != nil && !errors.As(err, &ce) {
		return AccessKey{}, err
	}
	return *k, err
}

// Descendants returns the keys among keys that were minted under one of
// roots: whose parent is one of them or such a key (at any depth), or
// whose origin is one of them.
func Descendants(keys []AccessKey, roots []KeyRef) []AccessKey {
	gone := make(map[KeyRef]bool, len(roots))
	for _, r := range roots {
		gone[r] = true
	}
	children := map[KeyRef][]int{}
	var queue []KeyRef
	for i, k := range keys {
		if k.Parent != nil {
			children[*k.Parent] = append(children[*k.Parent], i)
		}
		if k.Origin != nil && gone[*k.Origin] && !gone[k.Ref()] {
			gone[k.Ref()] = true
			queue = append(queue, k.Ref())
		}
	}
	queue = append(queue, roots...)
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		for _, i := range children[r] {
			if ref := keys[i].Ref(); !gone[ref] {
				gone[ref] = true
				queue = append(queue, ref)
			}
		}
	}
	rootSet := make(map[KeyRef]bool, len(roots))
	for _, r := range roots {
		rootSet[r] = true
	}
	var out []AccessKey
	for _, k := range keys {
		if gone[k.Ref()] && !rootSet[k.Ref()] {
			out = append(out, k)
		}
	}
	return out
}

// KeyStanding is what a key's validity depends on besides its own item:
// the account it is bound to and the keys of its lineage.
type KeyStanding struct {
	// Account is the key's account, nil when it was not asked for or is
	// gone.
	Account *Account
	// Keys holds the lineage keys that exist, by name.
	Keys map[KeyRef]AccessKey
}

// LoadKeyStanding reads the account (when account != "") and the keys
// refs names with one BatchGetItem: the authorizer's second round trip
// holds it in parallel with the role Queries, so a session key costs no
// sequential round trip more than a persistent one.
func (s *Store) LoadKeyStanding(ctx context.Context, account string, refs []KeyRef) (KeyStanding, error) {
	st := KeyStanding{Keys: make(map[KeyRef]AccessKey, len(refs))}
	keys := make([]map[string]types.AttributeValue, 0, len(refs)+1)
	if account != "" {
		keys = append(keys, key(accountPK(account), skAccount))
	}
	for _, r := range refs {
		keys = append(keys, key(principalPK(r.Principal), keySK(r.ID)))
	}
	items, err := ddb.BatchGet(ctx, s.db, s.table, keys)
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
			st.Account = &Account{}
			err = attributevalue.UnmarshalMap(it, st.Account)
		case "access_key":
			var k AccessKey
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
