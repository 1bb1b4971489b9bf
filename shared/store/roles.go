package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

func roleKey(r domain.Role) keyAttrs {
	return keyAttrs{PK: rbacPK(r.AccountID), SK: roleSK(r.ID), Entity: "role",
		GSI2PK: rolesList(r.AccountID), GSI2SK: createdPosition(r.Created, r.ID)}
}

// GetRole reads one role of an account.
func (s *Roles) GetRole(ctx context.Context, account, id string) (domain.Role, error) {
	var r domain.Role
	err := s.getItem(ctx, "get role", rbacPK(account), roleSK(id), &r)
	return r, err
}

// RolesOf returns every role of each account, reading the accounts' RBAC
// partitions in parallel: one round trip of wall time however many accounts
// are asked for. Groups share the partition and are left out.
func (s *Roles) RolesOf(ctx context.Context, accounts []string) ([]domain.Role, error) {
	var (
		mu    sync.Mutex
		roles []domain.Role
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxFanOut)
	for _, acct := range accounts {
		g.Go(func() error {
			rs, _, err := s.rbacPartition(gctx, acct)
			if err != nil {
				return fmt.Errorf("roles of account %s: %w", acct, err)
			}
			mu.Lock()
			defer mu.Unlock()
			roles = append(roles, rs...)
			return nil
		})
	}
	err := g.Wait()
	return roles, err
}

// RolesAndGroups reads the roles and the groups refs name, by key: one
// BatchGetItem per 100 keys, all in parallel (one round trip of wall
// time). Those that do not exist are left out. The authorizer reads the
// roles and groups a principal holds this way, so its cost follows what
// the principal holds, not what the account defines.
func (s *Roles) RolesAndGroups(ctx context.Context, roles, groups []domain.RBACRef) ([]domain.Role, []domain.Group, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(roles)+len(groups))
	for _, r := range roles {
		keys = append(keys, key(rbacPK(r.Account), roleSK(r.ID)))
	}
	for _, g := range groups {
		keys = append(keys, key(rbacPK(g.Account), groupSK(g.ID)))
	}
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return nil, nil, wrap("read roles and groups", err)
	}
	return splitRBAC(items)
}

func (s *Roles) rbacPartition(ctx context.Context, acct string) ([]domain.Role, []domain.Group, error) {
	items, err := s.query(ctx, "query rbac", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(rbacPK(acct)),
		},
	}, 0)
	if err != nil {
		return nil, nil, err
	}
	return splitRBAC(items)
}

// splitRBAC unmarshals items of RBAC partitions into roles and groups.
func splitRBAC(items []map[string]types.AttributeValue) ([]domain.Role, []domain.Group, error) {
	var rs, gs []map[string]types.AttributeValue
	for _, it := range items {
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		switch {
		case sk == nil:
		case strings.HasPrefix(sk.Value, prefixRole):
			rs = append(rs, it)
		case strings.HasPrefix(sk.Value, prefixGroup):
			gs = append(gs, it)
		}
	}
	roles, err := unmarshalAll[domain.Role](rs)
	if err != nil {
		return nil, nil, err
	}
	groups, err := unmarshalAll[domain.Group](gs)
	return roles, groups, err
}

// CreateRole writes a new custom role; its account must exist and have
// room in its roles quota (domain.QuotaReached otherwise), counted in the
// same transaction.
func (s *Roles) CreateRole(ctx context.Context, r domain.Role) error {
	put, err := s.put(roleKey(r), r)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{put, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(r.AccountID), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}}
	var q domain.Quota
	if r.Custom() {
		if q, err = s.quotaOf(ctx, r.AccountID, domain.ResourceRoles); err != nil {
			return err
		}
		items = append(items, s.usageOp(r.AccountID, q, 1))
	}
	err = s.transact(ctx, "create role", items)
	if qerr := quotaRefused(err, 2, r.AccountID, q); r.Custom() && qerr != nil {
		return qerr
	}
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) {
		for _, reason := range tx.Reasons {
			if reason.Index == 0 && reason.Code == ddb.ReasonConditionalCheckFailed {
				return domain.Duplicate("role", r.ID, r.AccountID)
			}
		}
		if errors.Is(err, ddb.ErrConditionFailed) {
			return domain.ErrNotFound // the account does not exist
		}
	}
	return err
}

// PutRole replaces an existing role, only if the stored version is the one
// before r.Version: two concurrent edits cannot silently overwrite each
// other (the loser gets domain.ErrChanged: read again and re-apply).
func (s *Roles) PutRole(ctx context.Context, r domain.Role) error {
	m, err := item(roleKey(r), r)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                m,
		ConditionExpression: aws.String("attribute_exists(PK) AND version = :prev"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":prev": avNum(int64(r.Version - 1)),
		},
	})
	if ddb.IsConditionFailed(err) {
		return domain.ErrChanged
	}
	return wrap("put role", err)
}

// DeleteRole deletes a custom role of an account and, in the same
// transaction, takes it out of the account's groups. Its holders' grants
// and the invitations to it go too: in the same transaction when everything
// fits in one, otherwise afterwards (a *CleanupError if that fails; grants
// of a missing role never apply, so access ends with the role either way).
// A control role is a *domain.Error; a missing one domain.ErrNotFound.
// pre, when given, judges the role as read (a request's If-Match); the
// delete is conditional on that version, and a lost race is domain.ErrChanged.
func (s *Roles) DeleteRole(ctx context.Context, account, id string, pre ...func(domain.Role) error) (domain.Role, error) {
	var (
		roles   []domain.Role
		groups  []domain.Group
		holders []map[string]types.AttributeValue
		invs    []domain.Invitation
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { roles, groups, err = s.rbacPartition(gctx, account); return err })
	g.Go(func() (err error) {
		holders, err = s.gsiKeys(gctx, "query role holders", roleHoldersGSI(account, id))
		return err
	})
	g.Go(func() (err error) {
		invs, err = s.repos.Invitations.ListInvitations(gctx, account, domain.InvitationRole)
		return err
	})
	if err := g.Wait(); err != nil {
		return domain.Role{}, err
	}
	var r domain.Role
	for _, x := range roles {
		if x.ID == id {
			r = x
		}
	}
	if r.ID == "" {
		return domain.Role{}, domain.ErrNotFound
	}
	for _, check := range pre {
		if err := check(r); err != nil {
			return domain.Role{}, err
		}
	}
	if r.Control {
		return domain.Role{}, domain.ControlRoleUndeletable(r.Name)
	}
	must := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName:           aws.String(s.table),
		Key:                 key(rbacPK(account), roleSK(id)),
		ConditionExpression: aws.String("attribute_exists(PK) AND version = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":v": avNum(int64(r.Version)),
		},
	}}}
	if r.Custom() {
		must = append(must, s.usageOp(account, domain.Quota{Kind: domain.ResourceRoles}, -1))
	}
	now := s.now()
	for _, g := range groups {
		if !slices.Contains(g.Roles, id) {
			continue
		}
		g.Roles = slices.DeleteFunc(slices.Clone(g.Roles), func(x string) bool { return x == id })
		g.Version++
		g.Updated = now
		put, err := s.replaceGroup(g)
		if err != nil {
			return domain.Role{}, err
		}
		must = append(must, put)
	}
	var invKeys []map[string]types.AttributeValue
	for _, inv := range invs {
		if inv.Target == id {
			invKeys = append(invKeys, key(invitationsPK(account), invitationSK(inv.Kind, inv.ID)))
		}
	}
	invTx, invRest, afterTx := s.repos.Invitations.invitationDeletes(account, invKeys, ddb.MaxTransactItems-len(must))
	must = append(must, invTx...)
	err := s.commit(ctx, "delete role", must, append(holders, invRest...))
	var ce *CleanupError
	if err != nil && !errors.As(err, &ce) {
		if errors.Is(err, ddb.ErrConditionFailed) {
			if len(pre) > 0 {
				return domain.Role{}, domain.ErrChanged
			}
			return domain.Role{}, domain.ChangedMeanwhile("the role, one of its groups or one of its invitations")
		}
		return domain.Role{}, err
	}
	if err == nil {
		err = afterTx(ctx)
	}
	return r, err
}
