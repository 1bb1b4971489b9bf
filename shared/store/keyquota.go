package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// A user's keys are bounded per user (domain.ResourceAccessKeys,
// ResourceSessionKeys). Unlike the account quotas, the count cannot be
// kept exactly by creates and deletes: DynamoDB's TTL removes an expired
// key, and nothing can take it off a count. So the count is an upper
// bound that is corrected when it matters:
//
//   - `PRINCIPAL#u` `USAGE#<kind>` holds n (the bound) and v (a version).
//     The create's transaction does ADD n 1, v 1 on the condition that the
//     item exists and n < limit. Deletes do not touch it, and expiry
//     cannot: n only overstates.
//   - When that condition fails (at the limit, or no count yet), the
//     create recounts: it reads the count (consistent), then Queries the
//     user's keys (consistent) and counts those of the kind not expired
//     now, and writes n = that on the condition that v is still the one
//     read (or the item is still absent), v + 1. Then it tries once more.
//
// Every write of the item raises v, so the recount's condition fails if
// any create (or another recount) wrote between its read and its write;
// and because it read the count before the keys, any key it missed was
// created after the read, which changed v. A recount that loses its
// condition writes nothing; the retry then meets the real count. Keys that
// expire between the Query and the write are still counted: strict side.
// So concurrent creates never pass the limit, and an expired or deleted
// key frees its room at the next create that needs it.

// keyCount is a user's count of one key kind.
type keyCount struct {
	N int `dynamodbav:"n"`
	V int `dynamodbav:"v"`
}

// KeyQuota is the quota a user's keys of durability count against: the
// root account's active entitlements of its kind, else the default. It is
// its own call so that the handler reads it beside its other reads.
func (s *Entitlements) KeyQuota(ctx context.Context, durability string) (domain.Quota, error) {
	root, err := s.rootAccount(ctx)
	if err != nil {
		return domain.Quota{}, err
	}
	return s.quotaOf(ctx, root, domain.KeyQuota(durability))
}

// createCountedKey is CreateUserKey: the transaction of createKey with the
// count's conditional update; at the condition, one recount and one retry.
func (s *Entitlements) createCountedKey(ctx context.Context, k domain.AccessKey, q domain.Quota) error {
	kind := domain.KeyQuota(k.Durability)
	if q.Kind != kind {
		return fmt.Errorf("create access key: a %s key counts against %s, not %q", k.Durability, kind, q.Kind)
	}
	var err error
	has := strconv.Itoa(q.Limit)
	for attempt := 0; attempt < 2; attempt++ {
		count := s.keyCountOp(k.PrincipalID, q)
		err = s.repos.Principals.createKey(ctx, k, domain.KindUser, &count)
		if !txConditionFailedAt(err, 2) {
			return err
		}
		if attempt == 1 {
			break
		}
		live, err := s.recountKeys(ctx, k.PrincipalID, kind)
		if err != nil {
			return err
		}
		if live >= q.Limit {
			has = strconv.Itoa(live)
			break
		}
	}
	return domain.QuotaReached(k.PrincipalID, q, has)
}

// keyCountOp counts one more key of q.Kind for principal while the count
// exists and is below the limit.
func (s *Entitlements) keyCountOp(principal string, q domain.Quota) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(principalPK(principal), usageSK(q.Kind)),
		UpdateExpression:          aws.String("ADD #n :one, #v :one"),
		ConditionExpression:       aws.String("attribute_exists(#n) AND #n < :limit"),
		ExpressionAttributeNames:  map[string]string{"#n": "n", "#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": avNum(1), ":limit": avNum(int64(q.Limit))},
	}}
}

// recountKeys sets principal's count of kind to its keys of that kind not
// expired now, unless the count changed since it was read, and returns
// that number.
func (s *Entitlements) recountKeys(ctx context.Context, principal, kind string) (int, error) {
	var c keyCount
	err := s.getItem(ctx, "read key count", principalPK(principal), usageSK(kind), &c)
	absent := errors.Is(err, domain.ErrNotFound)
	if err != nil && !absent {
		return 0, err
	}
	keys, err := s.repos.Principals.principalKeys(ctx, principal)
	if err != nil {
		return 0, err
	}
	now := s.now()
	live := 0
	for _, k := range keys {
		if domain.KeyQuota(k.Durability) == kind && !k.Expired(now) {
			live++
		}
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(principalPK(principal), usageSK(kind)),
		UpdateExpression:          aws.String("SET #n = :n, #v = :v1"),
		ConditionExpression:       aws.String("#v = :v0"),
		ExpressionAttributeNames:  map[string]string{"#n": "n", "#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": avNum(int64(live)), ":v0": avNum(int64(c.V)), ":v1": avNum(int64(c.V + 1))},
	}
	if absent {
		in.ConditionExpression = aws.String("attribute_not_exists(PK)")
		delete(in.ExpressionAttributeValues, ":v0")
	}
	_, err = s.db.UpdateItem(ctx, in)
	if err != nil && !ddb.IsConditionFailed(err) {
		return 0, wrap("recount keys", err)
	}
	// A lost condition means a create or another recount wrote first: the
	// caller's retry meets that count.
	return live, nil
}

// rootAccount is the installation's root account, read once per Store.
func (s *Table) rootAccount(ctx context.Context) (string, error) {
	if r := s.root.Load(); r != nil {
		return *r, nil
	}
	in, err := s.repos.Installation.GetInstallation(ctx)
	if err != nil {
		return "", fmt.Errorf("root account for the key quota: %w", err)
	}
	s.root.Store(&in.RootAccount)
	return in.RootAccount, nil
}
