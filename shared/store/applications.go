package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

const skApp = "APP"

func appPK(id string) string { return "APP#" + id }

// appsGSISKPrefix starts the GSI1 sort key of an application in its
// account's APPS# partition, which holds them in creation order (page.go).
const appsGSISKPrefix = "APP#"

func appKey(a domain.Application) keyAttrs {
	return keyAttrs{PK: appPK(a.ID), SK: skApp, GSI1PK: appsGSI(a.Account), GSI1SK: appsGSISKPrefix + createdPosition(a.Created, a.ID), Entity: "application"}
}

// CreateApplication writes a new application, in one transaction with the
// check that its account exists and is not being deleted (the account's
// deletion marks it `deleting` before it looks for applications, so no
// application can slip into an account on its way out), the count of the
// account's applications, which q (from CheckAllowance) bounds, and the
// claim of each of its aliases: an alias another application holds is a
// *domain.Error naming it, and nothing is written.
func (s *Applications) CreateApplication(ctx context.Context, a domain.Application, q domain.Quota) error {
	p, err := s.put(appKey(a), a)
	if err != nil {
		return err
	}
	claims, added, err := s.aliasChanges(a.Account, a.ID, nil, a.Aliases)
	if err != nil {
		return err
	}
	q.Kind = domain.ResourceApplications
	// Every create and delete of the account's applications updates its
	// usage item: concurrent ones may cancel each other (TransactionConflict)
	// and are tried again.
	items := []types.TransactWriteItem{p, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(a.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(deleting)"),
	}}, s.usageOp(a.Account, q, 1)}
	err = s.transact(ctx, "create application", append(items, claims...))
	switch {
	case txConditionFailedAt(err, 0):
		return domain.Duplicate("application", a.ID, "")
	case txConditionFailedAt(err, 1):
		return domain.AccountGone(a.Account)
	case txConditionFailedAt(err, 2):
		return domain.QuotaReached(a.Account, q, "as many")
	}
	if c := aliasFailure(err, appTxItems, added); c != nil {
		return c
	}
	return err
}

// GetApplication reads an application of account; one of another account
// is domain.ErrNotFound, exactly like a missing one.
func (s *Applications) GetApplication(ctx context.Context, account, id string) (domain.Application, error) {
	var a domain.Application
	if err := s.getItem(ctx, "get application", appPK(id), skApp, &a); err != nil {
		return domain.Application{}, err
	}
	if a.Account != account {
		return domain.Application{}, domain.ErrNotFound
	}
	return a, nil
}

// ListApplications returns every application of an account (GSI1, so
// eventually consistent).
func (s *Applications) ListApplications(ctx context.Context, account string) ([]domain.Application, error) {
	items, err := s.query(ctx, "list applications", &dynamodb.QueryInput{
		IndexName:              aws.String(IndexGSI1),
		KeyConditionExpression: aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(appsGSI(account)),
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[domain.Application](items)
}

// PageApplications reads at most n applications of account after position
// after in creation order (desc: newest first), with their positions and
// whether more may follow: one Query of n items.
func (s *Applications) PageApplications(ctx context.Context, account, after string, desc bool, n int) ([]domain.Application, []string, bool, error) {
	return pageOf[domain.Application](ctx, s.Table, collection{op: "list applications", index: IndexGSI1, pk: appsGSI(account), skPrefix: appsGSISKPrefix,
		tableKey: func(pos string) (string, string) { return appPK(idOf(pos)), skApp }}, after, desc, n)
}

// UpdateApplicationConfig replaces the configuration of an application if
// it is still at version from; a concurrent change is domain.ErrChanged
// (re-read and re-apply), a missing application domain.ErrNotFound. It leaves
// the aliases and their claims alone: it writes descriptive changes only
// (name, labels); a change of aliases is a patch-application task's,
// written by FinishTask with its claims.
func (s *Applications) UpdateApplicationConfig(ctx context.Context, account, id string, from int, config string) (domain.Application, error) {
	ctx = withLists(ctx, appPK(id), skApp, appsGSI(account))
	in, err := s.configUpdate(account, id, from, config, nil)
	if err != nil {
		return domain.Application{}, err
	}
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
		ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
		ExpressionAttributeValues: in.ExpressionAttributeValues, ReturnValues: types.ReturnValueAllNew,
	})
	if ddb.IsConditionFailed(err) {
		if _, gerr := s.GetApplication(ctx, account, id); gerr != nil {
			return domain.Application{}, gerr
		}
		return domain.Application{}, domain.ErrChanged
	}
	if err != nil {
		return domain.Application{}, wrap("update application", err)
	}
	var a domain.Application
	return a, attributevalue.UnmarshalMap(res.Attributes, &a)
}

// maxConfigBytes leaves room in the item for everything but the
// configuration; the configuration's own limits keep it far below.
const maxConfigBytes = 300 * 1024

// configUpdate replaces the configuration at version from; aliases, when
// not nil, replace the stored aliases too (the caller claims them).
func (s *Applications) configUpdate(account, id string, from int, config string, aliases []string) (*types.Update, error) {
	if len(config) > maxConfigBytes {
		return nil, domain.ConfigTooLarge(len(config), maxConfigBytes, fmt.Errorf("application %s: configuration of %d bytes: %w", id, len(config), ddb.ErrItemTooLarge))
	}
	u := &types.Update{
		TableName:                aws.String(s.table),
		Key:                      key(appPK(id), skApp),
		UpdateExpression:         aws.String("SET config = :c, version = :next, updated = :u"),
		ConditionExpression:      aws.String("account = :acct AND version = :v"),
		ExpressionAttributeNames: nil,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": avStr(config), ":next": avNum(int64(from + 1)), ":v": avNum(int64(from)),
			":u": avStr(s.now().Format(timeLayout)), ":acct": avStr(account),
		},
	}
	if aliases != nil {
		list := make([]types.AttributeValue, 0, len(aliases))
		for _, a := range aliases {
			list = append(list, avStr(domain.AliasKey(a)))
		}
		*u.UpdateExpression += ", aliases = :al"
		u.ExpressionAttributeValues[":al"] = &types.AttributeValueMemberL{Value: list}
	}
	return u, nil
}

// BeginTransition moves account's application id from state `from` (as last read) to
// the transitional state `mid` on behalf of task, recording both so that
// the task can finish or undo it. It is domain.ErrChanged when the state
// is no longer `from` or another task holds a transition.
func (s *Applications) BeginTransition(ctx context.Context, account, id, from, mid, task string) error {
	ctx = withLists(ctx, appPK(id), skApp, appsGSI(account))
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(appPK(id), skApp),
		UpdateExpression:         aws.String("SET #st = :mid, transition_task = :t, transition_from = :from, updated = :u"),
		ConditionExpression:      aws.String("#st = :from AND (attribute_not_exists(transition_task) OR transition_task = :none)"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":mid": avStr(mid), ":t": avStr(task), ":from": avStr(from), ":u": avStr(s.now().Format(timeLayout)), ":none": avStr(""),
		},
	})
	if ddb.IsConditionFailed(err) {
		return domain.ErrChanged
	}
	return wrap("begin application transition", err)
}

// endTransition sets the state a task's transition ends in (its target on
// success, the state it came from on failure), if that task still holds it.
func (s *Applications) endTransition(id, task, to string, restore bool) *types.Update {
	set := "SET #st = :to, updated = :u"
	if !restore {
		set += ", state_task = :t"
	}
	return &types.Update{
		TableName:                aws.String(s.table),
		Key:                      key(appPK(id), skApp),
		UpdateExpression:         aws.String(set + " REMOVE transition_task, transition_from"),
		ConditionExpression:      aws.String("transition_task = :t"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":to": avStr(to), ":t": avStr(task), ":u": avStr(s.now().Format(timeLayout)),
		},
	}
}

// DeleteApplication deletes a stopped application of account, then its
// actions, page controls and invalidation records. A missing application
// (or another account's) is domain.ErrNotFound; one in another state a
// *domain.Error. The children are unreachable once the application item is
// gone (every read of them checks it), so a failure while deleting them
// leaves garbage, never a visible half-deleted application. pre, when
// given, judges the application as read (a request's If-Match); a change
// between that read and the delete is then domain.ErrChanged.
func (s *Applications) DeleteApplication(ctx context.Context, account, id string, pre ...func(domain.Application) error) (domain.Application, error) {
	ctx = withLists(ctx, appPK(id), skApp, appsGSI(account))
	// Read first: the delete and the account's usage count change in one
	// transaction, which returns no old item, and the caller answers with
	// the application.
	a, err := s.GetApplication(ctx, account, id)
	if err != nil {
		return domain.Application{}, err
	}
	for _, check := range pre {
		if err := check(a); err != nil {
			return domain.Application{}, err
		}
	}
	if a.State != domain.AppStopped {
		return domain.Application{}, domain.NotStopped(a.ID, a.State)
	}
	// The application's claims go with it; the delete is conditional on
	// the version read, so a.Aliases are the ones it holds.
	claims, _, err := s.aliasChanges(account, id, a.Aliases, nil)
	if err != nil {
		return domain.Application{}, err
	}
	err = s.transact(ctx, "delete application", append([]types.TransactWriteItem{{Delete: &types.Delete{
		TableName:                aws.String(s.table),
		Key:                      key(appPK(id), skApp),
		ConditionExpression:      aws.String("account = :acct AND #st = :stopped AND version = :v"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":acct": avStr(account), ":stopped": avStr(domain.AppStopped), ":v": avNum(int64(a.Version)),
		},
	}}, s.usageOp(account, domain.Quota{Kind: domain.ResourceApplications}, -1)}, claims...))
	if txConditionFailedAt(err, 0) && len(pre) > 0 {
		return domain.Application{}, domain.ErrChanged
	}
	if txConditionFailedAt(err, 0) {
		// Changed since it was read: say what it is now.
		cur, gerr := s.GetApplication(ctx, account, id)
		if gerr != nil {
			return domain.Application{}, gerr
		}
		if cur.State != domain.AppStopped {
			return domain.Application{}, domain.NotStopped(cur.ID, cur.State)
		}
		return domain.Application{}, domain.ChangedWhileDeleting("application " + id)
	}
	if err != nil {
		return domain.Application{}, err
	}
	return a, s.deletePartition(ctx, appPK(id))
}

// deletePartition deletes every item left in an application's partition.
func (s *Applications) deletePartition(ctx context.Context, pk string) error {
	items, err := s.query(ctx, "list application children", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(pk)},
		ProjectionExpression:      aws.String("PK, SK"),
	}, 0)
	if err != nil {
		return err
	}
	reqs := make([]types.WriteRequest, 0, len(items))
	for _, it := range items {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}}})
	}
	return wrap("delete application children", ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// appInAccount is the condition every write to an application's children
// carries: the application exists and belongs to account.
func (s *Applications) appInAccount(account, app string) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       key(appPK(app), skApp),
		ConditionExpression:       aws.String("account = :acct"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":acct": avStr(account)},
	}}
}

// txConditionFailedAt reports whether a canceled transaction failed its condition
// at action index i.
func txConditionFailedAt(err error, i int) bool {
	var tx *ddb.TxCanceledError
	if !errors.As(err, &tx) {
		return false
	}
	for _, r := range tx.Reasons {
		if r.Index == i && r.Code == ddb.ReasonConditionalCheckFailed {
			return true
		}
	}
	return false
}
