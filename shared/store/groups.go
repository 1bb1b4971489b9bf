package store

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

func groupSK(id string) string { return "GROUP#" + id }

const prefixGroup = "GROUP#"

func groupKey(g domain.Group) keyAttrs {
	return keyAttrs{PK: rbacPK(g.AccountID), SK: groupSK(g.ID), Entity: "group",
		GSI2PK: groupsList(g.AccountID), GSI2SK: createdPosition(g.Created, g.ID)}
}

// roleChecks are condition checks that every listed role of the group's
// account exists, so a group never starts out naming a missing role.
func (s *Roles) roleChecks(g domain.Group) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, 0, len(g.Roles))
	for _, r := range g.Roles {
		out = append(out, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:           aws.String(s.table),
			Key:                 key(rbacPK(g.AccountID), roleSK(r)),
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}})
	}
	return out
}

// MissingRoleError means a group names a role its account does not have.
type MissingRoleError struct{ RoleID string }

func (e *MissingRoleError) Error() string { return "role " + e.RoleID + " does not exist" }

// CreateGroup writes a new group; its account and every listed role must
// exist (domain.ErrNotFound for the account, a *MissingRoleError for a
// role), and the account must have room in its groups quota
// (domain.QuotaReached), counted in the same transaction.
func (s *Roles) CreateGroup(ctx context.Context, g domain.Group) error {
	put, err := s.put(groupKey(g), g)
	if err != nil {
		return err
	}
	q, err := s.quotaOf(ctx, g.AccountID, domain.ResourceGroups)
	if err != nil {
		return err
	}
	// The usage update goes last so the role checks keep their indexes.
	checks := s.roleChecks(g)
	tx := append([]types.TransactWriteItem{put, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(g.AccountID), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}}, checks...)
	tx = append(tx, s.usageOp(g.AccountID, q, 1))
	err = s.transact(ctx, "create group", tx)
	if qerr := quotaRefused(err, len(tx)-1, g.AccountID, q); qerr != nil {
		return qerr
	}
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code != ddb.ReasonConditionalCheckFailed {
				continue
			}
			switch r.Index {
			case 0:
				return domain.Duplicate("group", g.ID, g.AccountID)
			case 1:
				return domain.ErrNotFound
			default:
				return &MissingRoleError{RoleID: g.Roles[r.Index-2]}
			}
		}
	}
	return err
}

// GetGroup reads one group of an account.
func (s *Roles) GetGroup(ctx context.Context, account, id string) (domain.Group, error) {
	var g domain.Group
	err := s.getItem(ctx, "get group", rbacPK(account), groupSK(id), &g)
	return g, err
}

// replaceGroup is the transaction action that replaces a group only if the
// stored version is the one before g.Version.
func (s *Roles) replaceGroup(g domain.Group) (types.TransactWriteItem, error) {
	m, err := item(groupKey(g), g)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String(s.table),
		Item:                m,
		ConditionExpression: aws.String("attribute_exists(PK) AND version = :prev"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":prev": avNum(int64(g.Version - 1)),
		},
	}}, nil
}

// PutGroup replaces a group, only if the stored version is the one before
// g.Version (domain.ErrChanged otherwise) and every listed role exists
// (a *MissingRoleError).
func (s *Roles) PutGroup(ctx context.Context, g domain.Group) error {
	put, err := s.replaceGroup(g)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "put group", append([]types.TransactWriteItem{put}, s.roleChecks(g)...))
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code != ddb.ReasonConditionalCheckFailed {
				continue
			}
			if r.Index == 0 {
				return domain.ErrChanged
			}
			return &MissingRoleError{RoleID: g.Roles[r.Index-1]}
		}
	}
	return err
}

// DeleteGroup deletes a group: its members lose its roles with the very
// next request. The memberships and the invitations to the group go in the
// same transaction when they fit, otherwise right after (see commit).
// pre, when given, judges the group as read (a request's If-Match); the
// delete is then conditional on that version, and a lost race domain.ErrChanged.
func (s *Roles) DeleteGroup(ctx context.Context, account, id string, pre ...func(domain.Group) error) (domain.Group, error) {
	var (
		g       domain.Group
		members []map[string]types.AttributeValue
		invs    []domain.Invitation
	)
	eg, gctx := errgroup.WithContext(ctx)
	eg.Go(func() (err error) { g, err = s.GetGroup(gctx, account, id); return err })
	eg.Go(func() (err error) {
		members, err = s.gsiKeys(gctx, "query group members", groupMembersGSI(account, id))
		return err
	})
	eg.Go(func() (err error) {
		invs, err = s.repos.Invitations.ListInvitations(gctx, account, domain.InvitationGroup)
		return err
	})
	if err := eg.Wait(); err != nil {
		return domain.Group{}, err
	}
	del := &types.Delete{
		TableName:           aws.String(s.table),
		Key:                 key(rbacPK(account), groupSK(id)),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}
	for _, check := range pre {
		if err := check(g); err != nil {
			return domain.Group{}, err
		}
		del.ConditionExpression = aws.String("attribute_exists(PK) AND version = :v")
		del.ExpressionAttributeValues = map[string]types.AttributeValue{":v": avNum(int64(g.Version))}
	}
	must := []types.TransactWriteItem{{Delete: del}, s.usageOp(account, domain.Quota{Kind: domain.ResourceGroups}, -1)}
	var invKeys []map[string]types.AttributeValue
	for _, inv := range invs {
		if inv.Target == id {
			invKeys = append(invKeys, key(invitationsPK(account), invitationSK(inv.Kind, inv.ID)))
		}
	}
	invTx, invRest, afterTx := s.repos.Invitations.invitationDeletes(account, invKeys, ddb.MaxTransactItems-len(must))
	must = append(must, invTx...)
	err := s.commit(ctx, "delete group", must, append(members, invRest...))
	switch {
	case txConditionFailedAt(err, 0) && len(pre) > 0:
		return domain.Group{}, domain.ErrChanged
	case txConditionFailedAt(err, 0):
		return domain.Group{}, domain.ErrNotFound
	case errors.Is(err, ddb.ErrConditionFailed):
		return domain.Group{}, domain.ChangedMeanwhile("one of the group's invitations")
	case err == nil:
		err = afterTx(ctx)
	}
	return g, err
}
