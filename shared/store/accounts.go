package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// GetAccount reads one account.
func (s *Accounts) GetAccount(ctx context.Context, id string) (domain.Account, error) {
	var a domain.Account
	err := s.getItem(ctx, "get account", accountPK(id), skAccount, &a)
	return a, err
}

// accountWrites are the items that create an account: the account item
// (item: a, or the AccountRecord holding it) and the reservations of its
// name (one per name key), which make names unique across all accounts
// even under concurrent creates (the second transaction fails its
// condition).
func (s *Accounts) accountWrites(a domain.Account, item any) []keyAttrsValue {
	kvs := []keyAttrsValue{{accountKey(a), item}}
	for _, pk := range accountNamePKs(a) {
		kvs = append(kvs, keyAttrsValue{nameClaimKey(pk), accountName{a.ID}})
	}
	return kvs
}

func nameClaimKey(pk string) keyAttrs {
	return keyAttrs{PK: pk, SK: skAccountName, Entity: "account_name"}
}

// deleteNameClaim deletes the name claim in partition pk while it is
// account id's (or already gone).
func (s *Table) deleteNameClaim(pk, id string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       key(pk, skAccountName),
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR account = :id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": avStr(id)},
	}}
}

// nameKeysAsRead is the condition (and its values, added to values) that
// an account item's name keys are still as in a: the schema migration
// sets them, and moves the claims, without changing updated.
func nameKeysAsRead(a domain.Account, values map[string]types.AttributeValue) string {
	cond := ""
	for _, k := range []struct{ attr, val, ph string }{{"name_key", a.NameKey, ":prevkey"}, {"name_skeleton", a.NameSkeleton, ":prevskeleton"}} {
		if cond != "" {
			cond += " AND "
		}
		if k.val == "" {
			cond += "attribute_not_exists(" + k.attr + ")"
			continue
		}
		cond += k.attr + " = " + k.ph
		values[k.ph] = avStr(k.val)
	}
	return cond
}

type keyAttrsValue struct {
	k keyAttrs
	v any
}

// CreateAccount writes an account, its name reservation and its roles (the
// control roles of docs/api.md#control-roles) in one transaction: all or nothing. A taken
// name is a *domain.Error, also when two creates race.
func (s *Accounts) CreateAccount(ctx context.Context, a domain.Account, roles []domain.Role) error {
	kvs := s.accountWrites(a, a)
	for _, r := range roles {
		kvs = append(kvs, keyAttrsValue{roleKey(r), r})
	}
	items, err := s.puts(kvs)
	if err != nil {
		return err
	}
	if a.Parent != "" {
		// The parent's deletion counts its sub-accounts through this.
		items = append(items, s.usageOp(a.Parent, domain.Quota{Kind: usageSubAccounts}, 1))
	}
	err = s.transact(ctx, "create account", items)
	if errors.Is(err, ddb.ErrConditionFailed) {
		return domain.AccountNameTaken(a.Name)
	}
	return err
}

const (
	accountItemHeadroom = 1024 // bytes kept free for attributes added later
	generatedIDLen      = 16   // ids.New()
)

func accountKey(a domain.Account) keyAttrs {
	return keyAttrs{PK: accountPK(a.ID), SK: skAccount, GSI1PK: childrenGSI(a.Parent), GSI1SK: accountPK(a.ID), Entity: "account",
		// Every account of the installation in creation order: GET
		// /v2/accounts pages through it with the permission filter.
		GSI2PK: accountsList, GSI2SK: createdPosition(a.Created, a.ID)}
}

// MaxAccountDepth is the deepest an account can be (the root is at depth
// 0; depth = number of ancestors). The limit is DynamoDB's 400 KB item
// size: the account item and every access key bound to the account copy
// the ancestor list, and both must fit with the largest allowed names and
// 1 KiB to spare. With generated 16-character ids (17 bytes per ancestor
// stored) it is 23,914. Nothing else in the design depends on depth.
func MaxAccountDepth() int { return maxAccountDepth() }

var maxAccountDepth = sync.OnceValue(func() int {
	id := strings.Repeat("a", generatedIDLen)
	// Nine fractional digits: user-given times (key expiry) are not
	// truncated, and RFC 3339 with nanoseconds is their longest form.
	ts := time.Date(2000, 1, 1, 0, 0, 0, 123456789, time.UTC)
	size := func(n int) int {
		anc := make([]string, n)
		for i := range anc {
			anc[i] = id
		}
		acct := domain.AccountRecord{
			Account: domain.Account{ID: id, Name: strings.Repeat("\U0010FFFF", domain.AccountNameMaxRunes), Keyword: strings.Repeat("k", domain.AccountKeywordMaxBytes),
				NameKey: strings.Repeat("k", domain.NameKeyMaxBytes), NameSkeleton: strings.Repeat("k", domain.NameKeyMaxBytes), Parent: id, Ancestors: anc, Owner: id, Created: ts, Updated: ts},
			LogRetention: []domain.LogRetention{{Type: "events", OnlineDays: 1 << 30, ArchiveDays: 1 << 30, OnlineSpaceAllowance: 1 << 30, ArchiveSpaceAllowance: 1 << 30}},
			Deleting:     &ts,
		}
		key := domain.AccessKey{ID: id, PrincipalID: id, Type: "bearer", Durability: domain.DurabilityPersistent, Account: id, AccountAncestors: anc,
			SecretHash: strings.Repeat("f", 64), Expiry: &ts, LastUsed: &ts, Created: ts, TTL: 1 << 40,
			Origin: &domain.KeyRef{Principal: id, ID: id}, Parent: &domain.KeyRef{Principal: id, ID: id}}
		worst := 0
		for _, kv := range []keyAttrsValue{{accountKey(acct.Account), acct}, {accessKeyKey(key), key}} {
			m, err := attributevalue.MarshalMap(kv.v)
			if err != nil {
				panic(err) // fixed, valid values: cannot happen
			}
			km, _ := attributevalue.MarshalMap(kv.k)
			for a, v := range km {
				m[a] = v
			}
			worst = max(worst, ddb.ItemSize(m))
		}
		return worst
	}
	per := size(2) - size(1)
	base := size(1) - per
	return (ddb.MaxItemBytes - accountItemHeadroom - base) / per
})

// GetAccountRecord reads one account with all its fields.
func (s *Accounts) GetAccountRecord(ctx context.Context, id string) (domain.AccountRecord, error) {
	var a domain.AccountRecord
	err := s.getItem(ctx, "get account", accountPK(id), skAccount, &a)
	return a, err
}

// GetAccountRecords reads many accounts in one BatchGetItem (per 100);
// accounts that do not exist are left out.
func (s *Accounts) GetAccountRecords(ctx context.Context, ids []string) ([]domain.AccountRecord, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(ids))
	for _, id := range ids {
		keys = append(keys, key(accountPK(id), skAccount))
	}
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return nil, wrap("get accounts", err)
	}
	return unmarshalAll[domain.AccountRecord](items)
}

func gsiQuery(pk string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		IndexName:                 aws.String(IndexGSI1),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(pk)},
	}
}

// CreateSubAccount writes a sub-account, its name reservation and its
// roles in one transaction that also checks that the parent exists and is
// not being deleted and counts the sub-account in the parent's usage
// (which the parent's deletion reads). A taken name is a *domain.Error (also when two
// creates race); so are a parent that is going away and a depth beyond
// MaxAccountDepth.
func (s *Accounts) CreateSubAccount(ctx context.Context, a domain.AccountRecord, roles []domain.Role) error {
	if a.Parent == "" || len(a.Ancestors) == 0 || a.Ancestors[len(a.Ancestors)-1] != a.Parent {
		return fmt.Errorf("create sub-account %s: parent %q and ancestors %v disagree", a.ID, a.Parent, a.Ancestors)
	}
	if d := len(a.Ancestors); d > MaxAccountDepth() {
		return domain.TooDeep(a.Parent, d-1, MaxAccountDepth())
	}
	kvs := s.accountWrites(a.Account, a)
	for _, r := range roles {
		kvs = append(kvs, keyAttrsValue{roleKey(r), r})
	}
	items, err := s.puts(kvs)
	if err != nil {
		return err
	}
	parentCheck := len(items)
	items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(a.Parent), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(deleting)"),
	}}, s.usageOp(a.Parent, domain.Quota{Kind: usageSubAccounts}, 1))
	err = s.transact(ctx, "create account", items)
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) {
		for _, r := range tx.Reasons {
			if r.Code != ddb.ReasonConditionalCheckFailed {
				continue
			}
			switch r.Index {
			case 1:
				return domain.AccountNameTaken(a.Name)
			case parentCheck:
				return domain.ParentGone(a.Parent)
			}
		}
	}
	return err
}

type accountName struct {
	Account string `dynamodbav:"account"`
}

// UpdateAccount changes the account item from prev to next, only if the
// stored account is still prev (same `updated`) and is not being deleted
// (domain.ErrChanged otherwise: read it again):
// it sets next's attributes and removes those next no longer has (a
// cleared owner or log_retention). A rename moves the name reservation in
// the same transaction; a taken name is a *domain.Error.
func (s *Accounts) UpdateAccount(ctx context.Context, prev, next domain.AccountRecord) error {
	prevUpdated, err := attributevalue.Marshal(prev.Updated)
	if err != nil {
		return fmt.Errorf("update account: %w", err)
	}
	next.ID, next.Parent, next.Ancestors, next.Deleting = prev.ID, prev.Parent, prev.Ancestors, nil
	m, err := item(accountKey(next.Account), next)
	if err != nil {
		return err
	}
	old, err := item(accountKey(prev.Account), prev)
	if err != nil {
		return err
	}
	expr, names, values := updateFromTo(old, m)
	values[":prev"] = prevUpdated
	// The name keys as read too (nameKeysAsRead).
	cond := "attribute_exists(PK) AND attribute_not_exists(deleting) AND updated = :prev AND " + nameKeysAsRead(prev.Account, values)
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(accountPK(prev.ID), skAccount),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}}
	// A rename claims the new name's keys it does not hold yet and gives
	// up those it no longer has; the claims come first, so a refused one
	// is at index 1 to len(claims).
	from, to := accountNamePKs(prev.Account), accountNamePKs(next.Account)
	claims := 0
	for _, pk := range to {
		if !slices.Contains(from, pk) {
			put, err := s.put(nameClaimKey(pk), accountName{prev.ID})
			if err != nil {
				return err
			}
			items = append(items, put)
			claims++
		}
	}
	for _, pk := range from {
		if !slices.Contains(to, pk) {
			items = append(items, s.deleteNameClaim(pk, prev.ID))
		}
	}
	err = s.transact(ctx, "update account", items)
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) {
		for _, r := range tx.Reasons {
			if r.Code != ddb.ReasonConditionalCheckFailed {
				continue
			}
			if r.Index >= 1 && r.Index <= claims {
				return domain.AccountNameTaken(next.Name)
			}
			if r.Index == 0 {
				return domain.ErrChanged
			}
		}
	}
	return err
}

// leftoverCounts are the usage items that count what an account must not
// hold when it is deleted, with the Leftovers field each one sets.
func leftoverCounts(l *domain.Leftovers) []struct {
	kind  string
	found *bool
} {
	return []struct {
		kind  string
		found *bool
	}{
		{usageSubAccounts, &l.SubAccounts}, {domain.ResourceApplications, &l.Applications}, {domain.ResourceAddressSets, &l.AddressSets},
		{usageTests, &l.Tests}, {usageMetricPrototypes, &l.MetricPrototypes},
	}
}

// AccountLeftovers tells whether an account still has sub-accounts,
// applications, address sets, application tests or metric prototypes:
// one consistent BatchGetItem of the account's usage items in parallel
// with five small GSI1 queries. GSI1 may not show what was created a
// moment ago; the usage counts, kept by the create and delete
// transactions, do. The queries still find what was created before the
// counts existed and the schema migration has not counted yet; what they
// find is read again, consistently, since GSI1 may also still show what
// was deleted a moment ago.
func (s *Accounts) AccountLeftovers(ctx context.Context, id string) (domain.Leftovers, error) {
	var l, counted domain.Leftovers
	counts := leftoverCounts(&counted)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		keys := make([]map[string]types.AttributeValue, len(counts))
		for i, c := range counts {
			keys[i] = key(accountPK(id), usageSK(c.kind))
		}
		items, err := ddb.BatchGetConsistent(gctx, s.db, s.table, keys)
		if err != nil {
			return wrap("read usage", err)
		}
		for _, it := range items {
			var u struct {
				SK string `dynamodbav:"SK"`
				N  int    `dynamodbav:"n"`
			}
			if err := attributevalue.UnmarshalMap(it, &u); err != nil {
				return fmt.Errorf("read usage: %w", err)
			}
			for _, c := range counts {
				if u.SK == usageSK(c.kind) {
					*c.found = u.N > 0
				}
			}
		}
		return nil
	})
	for pk, found := range map[string]*bool{childrenGSI(id): &l.SubAccounts, appsGSI(id): &l.Applications, addressSetsGSI(id): &l.AddressSets, appTestsGSI(id): &l.Tests,
		metricProtosGSI(id): &l.MetricPrototypes} {
		g.Go(func() error {
			items, err := s.query(gctx, "query "+pk, gsiQuery(pk), leftoverProbe)
			if err != nil || len(items) == 0 {
				return err
			}
			// GSI1 may still show what was deleted a moment ago: a
			// refusal comes only from a consistent read of the item
			// itself (the usage counts answer for the usual case).
			*found, err = s.anyStillThere(gctx, items) // each goroutine writes its own field
			return err
		})
	}
	err := g.Wait()
	l = domain.Leftovers{
		SubAccounts: l.SubAccounts || counted.SubAccounts, Applications: l.Applications || counted.Applications,
		AddressSets: l.AddressSets || counted.AddressSets, Tests: l.Tests || counted.Tests,
		MetricPrototypes: l.MetricPrototypes || counted.MetricPrototypes,
	}
	return l, err
}

// leftoverProbe is how many of a kind's GSI1 entries AccountLeftovers
// checks: more deletes than this within the index's lag, with an older
// uncounted item behind them, would go unseen by this read (the delete
// transaction's count checks still hold).
const leftoverProbe = 10

// anyStillThere reports whether any of the items an index query found
// still exists in the table, by a consistent read of their keys.
func (s *Accounts) anyStillThere(ctx context.Context, found []map[string]types.AttributeValue) (bool, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(found))
	for _, it := range found {
		keys = append(keys, map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]})
	}
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return false, wrap("read leftovers", err)
	}
	return len(items) > 0, nil
}

// emptyChecks are the delete transaction's checks that the account's usage
// counts are still zero (or absent). Every create checks the account's
// `deleting` mark, so none can commit between the leftovers read and the
// delete while this DELETE's mark stands; but a concurrent DELETE that
// found leftovers removes the mark when it unmarks (it may have
// overwritten ours), and then only these checks keep a create from
// surviving its account. A count below zero (a delete of something
// created before the counts existed) counts as empty, like the GSI1 query
// that already found nothing.
func (s *Accounts) emptyChecks(id string) []types.TransactWriteItem {
	var l domain.Leftovers
	var checks []types.TransactWriteItem
	for _, c := range leftoverCounts(&l) {
		checks = append(checks, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                 aws.String(s.table),
			Key:                       key(accountPK(id), usageSK(c.kind)),
			ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n <= :zero"),
			ExpressionAttributeNames:  map[string]string{"#n": "n"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":zero": avNum(0)},
		}})
	}
	return checks
}

// DeleteAccount deletes an empty account and revokes all access to it. In
// order:
//
//  1. mark the account `deleting` (new sub-accounts, entitlements and edits
//     are refused from here on) and read it;
//  2. refuse with a *domain.Error naming what is left if the account has
//     sub-accounts, applications, address sets, application tests or metric
//     prototypes (and unmark it);
//  3. delete every access key bound to the account and everything that
//     exists for it elsewhere: its roles and groups, their grants and
//     memberships, its invitations and its service users;
//  4. delete the account and its name reservation in one transaction,
//     with the parent's sub-account count and a check that the account's
//     usage counts are still zero (emptyChecks);
//  5. delete keys bound to it that a concurrent switch wrote after step 3,
//     and the rest of its partition (entitlements, invoices, payments).
//
// Access therefore ends before the account disappears: by the time DELETE
// answers, no key and no grant refers to it. If a step up to 4 fails, the
// account stays marked and a retried DELETE finishes the job; a failure in
// step 5 is a *CleanupError (the account is deleted).
//
// With at (a request's If-Match: the `updated` of the states it names),
// only an account at one of them is marked: any other state, missing
// included, is domain.ErrChanged.
func (s *Accounts) DeleteAccount(ctx context.Context, id string, at ...time.Time) (domain.AccountRecord, error) {
	mark := s.now()
	a, err := s.markDeleting(ctx, id, mark, at)
	if err != nil {
		return a, err
	}
	var left domain.Leftovers
	if a.Parent == "" {
		err = domain.RootUndeletable(id)
	} else if left, err = s.AccountLeftovers(ctx, id); err == nil && left.Any() {
		err = domain.NotEmpty(id, left)
	}
	if err != nil {
		if uerr := s.unmarkDeleting(ctx, a, mark); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return a, err
	}
	if err := s.revokeAccountAccess(ctx, id); err != nil {
		return a, err
	}
	items := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(id), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}}
	for _, pk := range accountNamePKs(a.Account) {
		items = append(items, s.deleteNameClaim(pk, id))
	}
	items = append(items, s.usageOp(a.Parent, domain.Quota{Kind: usageSubAccounts}, -1))
	checksFrom := len(items) // emptyChecks' first index
	items = append(items, s.emptyChecks(id)...)
	err = s.transact(ctx, "delete account", items)
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) && tx.HasReason(ddb.ReasonConditionalCheckFailed) {
		var late domain.Leftovers
		counts := leftoverCounts(&late)
		for _, r := range tx.Reasons {
			switch {
			case r.Index == 0:
				return a, domain.ErrNotFound // a concurrent DELETE finished first
			case r.Code == ddb.ReasonConditionalCheckFailed && r.Index >= checksFrom && r.Index-checksFrom < len(counts):
				*counts[r.Index-checksFrom].found = true
			}
		}
		if late.Any() {
			// Created after the leftovers were read: the account stays
			// marked (its access is already revoked) and a retried DELETE
			// finishes once they are gone.
			return a, domain.NotEmpty(id, late)
		}
	}
	if err != nil {
		return a, err
	}
	var (
		keys, rest, tasks, ca []map[string]types.AttributeValue
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		keys, err = s.keyAttrsOf(gctx, "query account keys", gsiQuery(accountKeysGSI(id)))
		return err
	})
	g.Go(func() (err error) {
		rest, err = s.keyAttrsOf(gctx, "query account partition", partitionQuery(accountPK(id)))
		return err
	})
	// The account's task history and certificate authority live only for it.
	g.Go(func() (err error) {
		tasks, err = s.keyAttrsOf(gctx, "query account tasks", gsiQuery(tasksGSI(id)))
		return err
	})
	g.Go(func() (err error) {
		ca, err = s.keyAttrsOf(gctx, "query account CA", partitionQuery(caPK(id)))
		return err
	})
	err = g.Wait()
	if err == nil {
		err = s.deleteKeys(ctx, "delete account leftovers", append(append(append(keys, rest...), tasks...), ca...))
	}
	if err != nil {
		// The account is gone: the caller reports success and logs this.
		return a, &CleanupError{Err: err}
	}
	return a, nil
}

func (s *Accounts) markDeleting(ctx context.Context, id string, mark time.Time, at []time.Time) (domain.AccountRecord, error) {
	m, err := attributevalue.Marshal(mark)
	if err != nil {
		return domain.AccountRecord{}, fmt.Errorf("mark account: %w", err)
	}
	cond, vals := "attribute_exists(PK)", map[string]types.AttributeValue{":m": m}
	if len(at) > 0 {
		alts := make([]string, len(at))
		for i, t := range at {
			vals[fmt.Sprintf(":at%d", i)] = avTime(t.UTC())
			alts[i] = fmt.Sprintf("updated = :at%d", i)
		}
		cond += " AND (" + strings.Join(alts, " OR ") + ")"
	}
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(accountPK(id), skAccount),
		UpdateExpression:          aws.String("SET deleting = :m"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if ddb.IsConditionFailed(err) && len(at) > 0 {
		return domain.AccountRecord{}, domain.ErrChanged
	}
	if ddb.IsConditionFailed(err) {
		return domain.AccountRecord{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.AccountRecord{}, wrap("mark account", err)
	}
	var a domain.AccountRecord
	if err := attributevalue.UnmarshalMap(res.Attributes, &a); err != nil {
		return a, fmt.Errorf("mark account: unmarshal: %w", err)
	}
	return a, nil
}

// updateFromTo is the update expression that turns item from into item to
// (both with the same key): SET every attribute of to but the key, REMOVE
// those that only from has. Names and values are placeholders (#aN, :aN), in
// attribute name order.
func updateFromTo(from, to map[string]types.AttributeValue) (string, map[string]string, map[string]types.AttributeValue) {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	var set, remove []string
	for _, a := range slices.Sorted(maps.Keys(to)) {
		if a == AttrPK || a == AttrSK {
			continue
		}
		n, v := fmt.Sprintf("#a%d", len(names)), fmt.Sprintf(":a%d", len(values))
		names[n], values[v] = a, to[a]
		set = append(set, n+" = "+v)
	}
	for _, a := range slices.Sorted(maps.Keys(from)) {
		if _, ok := to[a]; !ok {
			n := fmt.Sprintf("#a%d", len(names))
			names[n] = a
			remove = append(remove, n)
		}
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return expr, names, values
}

// unmarkDeleting removes this DELETE's mark, unless another DELETE has
// marked the account since.
func (s *Accounts) unmarkDeleting(ctx context.Context, a domain.AccountRecord, mark time.Time) error {
	m, err := attributevalue.Marshal(mark)
	if err != nil {
		return fmt.Errorf("unmark account: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(accountPK(a.ID), skAccount),
		UpdateExpression:          aws.String("REMOVE deleting"),
		ConditionExpression:       aws.String("deleting = :m"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": m},
	})
	if ddb.IsConditionFailed(err) {
		return nil
	}
	return wrap("unmark account", err)
}

// revokeAccountAccess removes everything that gives access to the account
// or lives only for it: every key bound to it, its RBAC partition (roles,
// groups), the grants of its roles and the memberships of its groups, its
// invitations, and its service users (principal partition and email
// reservation). Two rounds of parallel queries, then batched deletes.
func (s *Accounts) revokeAccountAccess(ctx context.Context, id string) error {
	var (
		keys, rbac, invs []map[string]types.AttributeValue
		sus              []map[string]types.AttributeValue
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		keys, err = s.keyAttrsOf(gctx, "query account keys", gsiQuery(accountKeysGSI(id)))
		return err
	})
	g.Go(func() (err error) {
		rbac, err = s.keyAttrsOf(gctx, "query account rbac", partitionQuery(rbacPK(id)))
		return err
	})
	g.Go(func() (err error) {
		invs, err = s.keyAttrsOf(gctx, "query account invitations", partitionQuery(invitationsPK(id)))
		return err
	})
	g.Go(func() (err error) {
		sus, err = s.query(gctx, "query account service users", gsiQuery(serviceUsersGSI(id)), 0)
		return err
	})
	if err := g.Wait(); err != nil {
		return err
	}
	var (
		mu   sync.Mutex
		more []map[string]types.AttributeValue
		errs []error // of the decoding below, which runs beside the queries
	)
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(maxFanOut)
	collect := func(op string, in *dynamodb.QueryInput) {
		g.Go(func() error {
			found, err := s.keyAttrsOf(gctx, op, in)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			more = append(more, found...)
			return nil
		})
	}
	for _, it := range rbac {
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		if sk == nil {
			continue
		}
		if role, ok := strings.CutPrefix(sk.Value, prefixRole); ok {
			collect("query role holders", gsiQuery(roleHoldersGSI(id, role)))
		} else if group, ok := strings.CutPrefix(sk.Value, prefixGroup); ok {
			collect("query group members", gsiQuery(groupMembersGSI(id, group)))
		}
	}
	// Keys minted under the account's keys (session keys into other
	// accounts, and what those minted) are found in their principals'
	// partitions, in this same wave: the authorizer refuses the ones whose
	// origin or parent goes here, and this reaches the rest.
	swept := map[string][]domain.KeyRef{}
	for _, it := range keys {
		var ka keyAttrs
		if err := attributevalue.UnmarshalMap(it, &ka); err != nil {
			// Not a return: the role and group queries started above
			// must finish before this function does.
			errs = append(errs, fmt.Errorf("revoke account access: key: %w", err))
			continue
		}
		p, ok1 := strings.CutPrefix(ka.PK, "PRINCIPAL#")
		k, ok2 := strings.CutPrefix(ka.SK, prefixKey)
		if ok1 && ok2 {
			swept[p] = append(swept[p], domain.KeyRef{Principal: p, ID: k})
		}
	}
	for p, refs := range swept {
		g.Go(func() error {
			all, err := s.repos.Principals.principalKeys(gctx, p)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, d := range domain.Descendants(all, refs) {
				more = append(more, key(principalPK(d.PrincipalID), keySK(d.ID)))
			}
			return nil
		})
	}
	for _, it := range sus {
		var su domain.ServiceUser
		if err := attributevalue.UnmarshalMap(it, &su); err != nil {
			errs = append(errs, fmt.Errorf("revoke account access: service user: %w", err))
			continue
		}
		// collect's goroutines append to more under mu: so must this.
		mu.Lock()
		more = append(more, key(emailPK(su.Email), skEmail))
		mu.Unlock()
		collect("query service user", partitionQuery(principalPK(su.ID)))
	}
	if err := errors.Join(append(errs, g.Wait())...); err != nil {
		return err
	}
	all := append(append(append(keys, rbac...), invs...), more...)
	return s.deleteKeys(ctx, "revoke account access", all)
}

func partitionQuery(pk string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(pk)},
	}
}

// keyAttrsOf runs a query (all pages) and returns only the table keys of
// the items found.
func (s *Table) keyAttrsOf(ctx context.Context, op string, in *dynamodb.QueryInput) ([]map[string]types.AttributeValue, error) {
	in.ProjectionExpression = aws.String("#pk, #sk")
	in.ExpressionAttributeNames = map[string]string{"#pk": AttrPK, "#sk": AttrSK}
	items, err := s.query(ctx, op, in, 0)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]types.AttributeValue, 0, len(items))
	for _, it := range items {
		out = append(out, map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]})
	}
	return out, nil
}

func (s *Accounts) deleteKeys(ctx context.Context, op string, keys []map[string]types.AttributeValue) error {
	reqs := make([]types.WriteRequest, 0, len(keys))
	for _, k := range keys {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
	}
	return wrap(op, ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// RevokeGrants deletes grant items (batched; not atomic). Access ends with
// the next request of each holder, since the authorizer reads grants every
// time.
func (s *Accounts) RevokeGrants(ctx context.Context, grants []domain.Grant) error {
	keys := make([]map[string]types.AttributeValue, 0, len(grants))
	for _, g := range grants {
		k := grantKey(g)
		keys = append(keys, key(k.PK, k.SK))
	}
	return s.deleteKeys(ctx, "revoke grants", keys)
}
