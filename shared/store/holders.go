package store

import (
	"context"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// The holders of a role and the members of a group, in principal id order:
// GSI1 HOLDERS#<account>#<role> and MEMBERS#<account>#<group>, whose sort
// key is PRINCIPAL#<id>. Deleting a role or group reads them to remove the
// grants; "who can" (GET /v2/accounts/{id}/access) pages them like a listed
// collection, so they are journaled (journal.go) and read through page,
// which makes a grant written a moment ago visible despite the index's lag.

const prefixHolder = "PRINCIPAL#"

var principalIDRE = regexp.MustCompile(`^[a-z0-9]{1,64}$`)

// ValidPrincipalPosition reports whether p has the shape of a position in
// a role's holders or a group's members: a principal id.
func ValidPrincipalPosition(p string) bool { return principalIDRE.MatchString(p) }

// PageHolders reads the principals holding role (or, with group set, the
// members of group) of account, in principal id order: at most n grants
// after the principal after, their positions (the principal ids) and
// whether more may follow. One Query of the index beside the collection's
// journal of recent writes (Paged collections, Read your writes).
func (s *Roles) PageHolders(ctx context.Context, ref domain.RBACRef, group bool, after string, desc bool, n int) ([]domain.Grant, []string, bool, error) {
	pk, sk := roleHoldersGSI(ref.Account, ref.ID), grantSK(ref.Account, ref.ID)
	op := "list role holders"
	if group {
		pk, sk, op = groupMembersGSI(ref.Account, ref.ID), groupGrantSK(ref.Account, ref.ID), "list group members"
	}
	return pageOf[domain.Grant](ctx, s.Table, collection{op: op, index: IndexGSI1, pk: pk, skPrefix: prefixHolder,
		tableKey: func(pos string) (string, string) { return principalPK(pos), sk }}, after, desc, n)
}

// GetPrincipals reads principals by id with one consistent BatchGetItem
// per 100; those that do not exist are left out.
func (s *Roles) GetPrincipals(ctx context.Context, ids []string) ([]domain.Principal, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = key(principalPK(id), skPrincipal)
	}
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return nil, wrap("read principals", err)
	}
	return unmarshalAll[domain.Principal](items)
}

// RBACPartitions reads every role and group of each account, the
// accounts' RBAC partitions in parallel (consistent, one round trip of
// wall time).
func (s *Roles) RBACPartitions(ctx context.Context, accounts []string) ([]domain.Role, []domain.Group, error) {
	roles := make([][]domain.Role, len(accounts))
	groups := make([][]domain.Group, len(accounts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxFanOut)
	for i, acct := range accounts {
		g.Go(func() (err error) {
			roles[i], groups[i], err = s.rbacPartition(gctx, acct)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var rs []domain.Role
	var gs []domain.Group
	for i := range accounts {
		rs, gs = append(rs, roles[i]...), append(gs, groups[i]...)
	}
	return rs, gs, nil
}

// holderLists are the journaled collections of a grant item's key: its
// role's holders or its group's members.
func holderLists(sk string) []string {
	if rest, ok := strings.CutPrefix(sk, "GRANTGROUP#"); ok {
		if acct, group, ok := strings.Cut(rest, "#"); ok {
			return []string{groupMembersGSI(acct, group)}
		}
	}
	if rest, ok := strings.CutPrefix(sk, prefixGrant); ok {
		if acct, role, ok := strings.Cut(rest, "#"); ok {
			return []string{roleHoldersGSI(acct, role)}
		}
	}
	return nil
}
