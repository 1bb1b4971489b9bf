package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

const prefixEntitlement = "ENTITLEMENT#"

func entitlementSK(id string) string { return prefixEntitlement + id }

func entitlementKey(e domain.Entitlement) keyAttrs {
	return keyAttrs{PK: accountPK(e.Account), SK: entitlementSK(e.ID), Entity: "entitlement",
		GSI2PK: entitlementsList(e.Account), GSI2SK: createdPosition(e.Created, e.ID)}
}

// CreateEntitlement writes a new entitlement; its account must exist and
// not be being deleted (else a *domain.Error).
func (s *Entitlements) CreateEntitlement(ctx context.Context, e domain.Entitlement) error {
	put, err := s.put(entitlementKey(e), e)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create entitlement", []types.TransactWriteItem{put, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(e.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(deleting)"),
	}}})
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) && tx.HasReason(ddb.ReasonConditionalCheckFailed) {
		for _, r := range tx.Reasons {
			if r.Index == 0 {
				return domain.Duplicate("entitlement", e.ID, e.Account)
			}
		}
		return domain.AccountGone(e.Account)
	}
	return err
}

// GetEntitlement reads one entitlement of an account; another account's
// entitlement is domain.ErrNotFound, since the account is part of the key.
func (s *Entitlements) GetEntitlement(ctx context.Context, account, id string) (domain.Entitlement, error) {
	var e domain.Entitlement
	err := s.getItem(ctx, "get entitlement", accountPK(account), entitlementSK(id), &e)
	return e, err
}

// ListEntitlements returns every entitlement of an account.
func (s *Entitlements) ListEntitlements(ctx context.Context, account string) ([]domain.Entitlement, error) {
	items, err := s.query(ctx, "list entitlements", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(accountPK(account)),
			":sk": avStr(prefixEntitlement),
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[domain.Entitlement](items)
}

// PutEntitlement replaces an existing entitlement, only if the stored
// version is the one before e.Version (else domain.ErrChanged) and its
// account is not being deleted.
func (s *Entitlements) PutEntitlement(ctx context.Context, e domain.Entitlement) error {
	m, err := item(entitlementKey(e), e)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "put entitlement", []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:           aws.String(s.table),
			Item:                m,
			ConditionExpression: aws.String("attribute_exists(PK) AND version = :prev"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":prev": avNum(int64(e.Version - 1)),
			},
		}},
		{ConditionCheck: &types.ConditionCheck{
			TableName:           aws.String(s.table),
			Key:                 key(accountPK(e.Account), skAccount),
			ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(deleting)"),
		}},
	})
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) && tx.HasReason(ddb.ReasonConditionalCheckFailed) {
		for _, r := range tx.Reasons {
			if r.Index == 0 {
				return domain.ErrChanged
			}
		}
		return domain.AccountGone(e.Account)
	}
	return err
}

// DeleteEntitlement deletes one entitlement of an account and returns it;
// a missing one (or another account's) is domain.ErrNotFound. With
// versions (a request's If-Match), only an entitlement at one of them is
// deleted: any other state, missing included, is domain.ErrChanged.
func (s *Entitlements) DeleteEntitlement(ctx context.Context, account, id string, versions ...int) (domain.Entitlement, error) {
	cond, vals := atVersions("attribute_exists(PK)", nil, versions)
	res, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(accountPK(account), entitlementSK(id)),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllOld,
	})
	if ddb.IsConditionFailed(err) && len(versions) > 0 {
		return domain.Entitlement{}, domain.ErrChanged
	}
	if ddb.IsConditionFailed(err) {
		return domain.Entitlement{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Entitlement{}, wrap("delete entitlement", err)
	}
	out, err := unmarshalAll[domain.Entitlement]([]map[string]types.AttributeValue{res.Attributes})
	if err != nil {
		return domain.Entitlement{}, err
	}
	return out[0], nil
}

// Allowance is how many resources of a kind an account may have (or, for
// application tests, run per period) now: the sum of the quantities of its
// active entitlements of that kind. limited is false when the account has
// no entitlement of that kind at all (active or not): such accounts are
// not metered for it, which is how an installation that does not use
// entitlements works. An account whose entitlements of the kind have all
// expired or not started yet is limited to 0.
//
// A quota kind (domain.DefaultQuota: roles, groups, ...) is always
// limited: to the sum of its active entitlements when it has any, else to
// its default. Its entitlements set the quota rather than add to the
// default, so the entitlement administrator can lower it as well as raise
// it; one that expires gives the default back, not 0, as nothing is paid
// for.
//
// One Query of the account's entitlements. Families that create metered
// resources call CheckAllowance (below) before their create.
func (s *Entitlements) Allowance(ctx context.Context, account, kind string) (limit int, limited bool, err error) {
	es, err := s.ListEntitlements(ctx, account)
	if err != nil {
		return 0, false, err
	}
	limit, limited = domain.Allowance(es, kind, s.now())
	return limit, limited, nil
}

// Kinds of usage items the account's deletion reads (AccountLeftovers),
// as GSI1 may not show what was created a moment ago: sub-accounts,
// counted without a limit, and the tests and metric prototypes quotas.
const (
	usageSubAccounts      = "accounts"
	usageTests            = domain.ResourceTests
	usageMetricPrototypes = domain.ResourceMetricPrototypes
)

// usage is an account's count of one kind of resource, kept by the
// transactions that create and delete them.
type usage struct {
	N int `dynamodbav:"n"`
}

// CheckAllowance refuses (with domain.QuotaReached, a conflict) creating
// one more application or address set in an account that already has as
// many as its entitlements allow, and otherwise returns the Quota the
// create must pass on. It reads the allowance and the account's usage
// item in parallel: one round trip of wall time.
func (s *Entitlements) CheckAllowance(ctx context.Context, account, kind string) (domain.Quota, error) {
	switch kind {
	case domain.ResourceApplications, domain.ResourceAddressSets:
	default:
		return domain.Quota{}, fmt.Errorf("check allowance: %q resources are not counted by the store", kind)
	}
	var (
		q = domain.Quota{Kind: kind}
		u usage
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { q.Limit, q.Limited, err = s.Allowance(gctx, account, kind); return err })
	g.Go(func() error {
		if err := s.getItem(gctx, "read usage", accountPK(account), usageSK(kind), &u); !errors.Is(err, domain.ErrNotFound) {
			return err
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return q, err
	}
	if q.Limited && u.N >= q.Limit {
		return q, domain.QuotaReached(account, q, strconv.Itoa(u.N))
	}
	return q, nil
}

// quotaOf is the Quota of a quota kind (domain.DefaultQuota: roles,
// groups, service users, actions, page controls) for account. It reads
// only the allowance (one Query): the create's transaction checks the
// count against it, and reading the count first would add a read without
// making the check any safer. For a per-application kind it would also be
// wrong: it could answer "quota reached" about another account's
// application, where the transaction's check of the application answers
// 404.
func (s *Table) quotaOf(ctx context.Context, account, kind string) (domain.Quota, error) {
	q := domain.Quota{Kind: kind}
	var err error
	q.Limit, q.Limited, err = s.repos.Entitlements.Allowance(ctx, account, kind)
	return q, err
}

// quotaRefused is the QuotaReached of a create whose transaction the
// usage item's condition (at index i) cancelled: the count is at the
// limit. (The count is not read: "has" is the limit it reached.)
func quotaRefused(err error, i int, account string, q domain.Quota) error {
	if txConditionFailedAt(err, i) {
		return domain.QuotaReached(account, q, strconv.Itoa(q.Limit))
	}
	return nil
}

// usageOp counts delta more (delta 1) or fewer (delta < 0) resources of
// q.Kind in account's usage item, in the transaction that creates or
// deletes them; more only while the quota allows (a Quota{Kind: k} has no
// limit).
func (s *Table) usageOp(account string, q domain.Quota, delta int) types.TransactWriteItem {
	return s.usageOpAt(accountPK(account), q, delta)
}

// usageOpAt is usageOp for the usage item in partition pk.
func (s *Table) usageOpAt(pk string, q domain.Quota, delta int) types.TransactWriteItem {
	u := &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(pk, usageSK(q.Kind)),
		UpdateExpression:          aws.String("ADD #n :d"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": avNum(int64(delta))},
	}
	if delta > 0 && q.Limited {
		// A missing count is zero, below any positive limit; a limit of
		// zero (an entitlement of quantity 0) must refuse even the first.
		cond := "attribute_not_exists(#n) OR #n < :limit"
		if q.Limit <= 0 {
			cond = "#n < :limit"
		}
		u.ConditionExpression = aws.String(cond)
		u.ExpressionAttributeValues[":limit"] = avNum(int64(q.Limit))
	}
	return types.TransactWriteItem{Update: u}
}
