package store

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// The collections below are read a page at a time (page.go): every Page
// method reads at most n members after a position, in the collection's
// stored order, with one Query (and, for the members that name another
// item, one BatchGetItem of those). docs/data-model.md, Paged collections.

// GSI2 partitions of collections kept in creation order.
func rolesList(acct string) string        { return "ROLES#" + acct }
func groupsList(acct string) string       { return "GROUPS#" + acct }
func entitlementsList(acct string) string { return "ENTITLEMENTS#" + acct }
func keysList(principal string) string    { return "KEYS#" + principal }
func heldList(principal string) string    { return "HELD#" + principal }

const accountsList = "ACCOUNTS"

const (
	prefixServiceUserG = "PRINCIPAL#"
	prefixHeldRole     = "ROLE#"
	prefixHeldGroup    = "GROUP#"
)

// heldPosition is the position of a member that is named by two ids (an
// account's role or group held by a principal; an invitation in an
// inbox, which holds invitations of every account): the creation time,
// the account and the id.
func heldPosition(created time.Time, acct, id string) string {
	return created.UTC().Format(timeLayout) + "#" + acct + "#" + id
}

var pairPositionRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z#[a-z0-9]{1,64}#[a-z0-9]{1,64}$`)

// ValidPairPosition reports whether p has the shape of a position of a
// collection whose members are named by an account and an id (a user's
// roles, groups and invitations).
func ValidPairPosition(p string) bool { return pairPositionRE.MatchString(p) }

// pairOf splits a pair position into its account and id.
func pairOf(pos string) (acct, id string) {
	parts := strings.SplitN(pos, "#", 3)
	if len(parts) != 3 {
		return "", ""
	}
	return parts[1], parts[2]
}

// PageRoles reads an account's roles in creation order.
func (s *Roles) PageRoles(ctx context.Context, account, after string, desc bool, n int) ([]domain.Role, []string, bool, error) {
	return pageOf[domain.Role](ctx, s.Table, collection{op: "list roles", index: IndexGSI2, pk: rolesList(account),
		tableKey: func(pos string) (string, string) { return rbacPK(account), roleSK(idOf(pos)) }}, after, desc, n)
}

// PageGroups reads an account's groups in creation order.
func (s *Roles) PageGroups(ctx context.Context, account, after string, desc bool, n int) ([]domain.Group, []string, bool, error) {
	return pageOf[domain.Group](ctx, s.Table, collection{op: "list groups", index: IndexGSI2, pk: groupsList(account),
		tableKey: func(pos string) (string, string) { return rbacPK(account), groupSK(idOf(pos)) }}, after, desc, n)
}

// PageEntitlements reads an account's entitlements in creation order.
func (s *Entitlements) PageEntitlements(ctx context.Context, account, after string, desc bool, n int) ([]domain.Entitlement, []string, bool, error) {
	return pageOf[domain.Entitlement](ctx, s.Table, collection{op: "list entitlements", index: IndexGSI2, pk: entitlementsList(account),
		tableKey: func(pos string) (string, string) { return accountPK(account), entitlementSK(idOf(pos)) }}, after, desc, n)
}

// PageInvitations reads an account's invitations of one kind in creation
// order.
func (s *Invitations) PageInvitations(ctx context.Context, account, kind, after string, desc bool, n int) ([]domain.Invitation, []string, bool, error) {
	return pageOf[domain.Invitation](ctx, s.Table, collection{op: "list invitations", index: IndexGSI2, pk: invitationsPK(account), skPrefix: invitationSK(kind, ""),
		tableKey: func(pos string) (string, string) { return invitationsPK(account), invitationSK(kind, idOf(pos)) }}, after, desc, n)
}

// PageInbox reads the delivered invitations of one kind addressed to
// email, in creation order (positions: ValidPairPosition).
func (s *Invitations) PageInbox(ctx context.Context, email, kind, after string, desc bool, n int) ([]domain.Invitation, []string, bool, error) {
	return pageOf[domain.Invitation](ctx, s.Table, collection{op: "list inbox", index: IndexGSI3, pk: inviteeGSI(email), skPrefix: invitationSK(kind, ""),
		tableKey: func(pos string) (string, string) {
			acct, id := pairOf(pos)
			return invitationsPK(acct), invitationSK(kind, id)
		}}, after, desc, n)
}

// PageKeys reads a principal's access keys in creation order, expired
// ones included (they stay until their TTL removes them).
func (s *Principals) PageKeys(ctx context.Context, principal, after string, desc bool, n int) ([]domain.AccessKey, []string, bool, error) {
	return pageOf[domain.AccessKey](ctx, s.Table, collection{op: "list access keys", index: IndexGSI2, pk: keysList(principal),
		tableKey: func(pos string) (string, string) { return principalPK(principal), keySK(idOf(pos)) }}, after, desc, n)
}

// PageServiceUsers reads an account's service users in creation order.
func (s *Principals) PageServiceUsers(ctx context.Context, account, after string, desc bool, n int) ([]domain.ServiceUser, []string, bool, error) {
	return pageOf[domain.ServiceUser](ctx, s.Table, collection{op: "list service users", index: IndexGSI1, pk: serviceUsersGSI(account), skPrefix: prefixServiceUserG,
		tableKey: func(pos string) (string, string) { return principalPK(idOf(pos)), skPrincipal }}, after, desc, n)
}

// PageAppTests reads an account's application tests in id order (the
// position is the test's id).
func (s *Tests) PageAppTests(ctx context.Context, account, after string, desc bool, n int) ([]domain.AppTest, []string, bool, error) {
	return pageOf[domain.AppTest](ctx, s.Table, collection{op: "list application tests", index: IndexGSI1, pk: appTestsGSI(account), skPrefix: appTestGSISK(""),
		tableKey: func(pos string) (string, string) { return appTestPK(account, pos), skAppTest }}, after, desc, n)
}

// PageActions reads an application's actions in id order (the position is
// the action's id). The caller checks that the application belongs to
// the account (ApplicationInAccount).
func (s *Applications) PageActions(ctx context.Context, app, after string, desc bool, n int) ([]domain.Action, []string, bool, error) {
	return pageOf[domain.Action](ctx, s.Table, collection{op: "list actions", pk: appPK(app), skPrefix: prefixAction}, after, desc, n)
}

// ApplicationInAccount is ErrNotFound unless application app exists in
// account.
func (s *Applications) ApplicationInAccount(ctx context.Context, account, app string) error {
	_, err := s.GetApplication(ctx, account, app)
	return err
}

// PageHeldRoles reads the roles a principal holds directly, in the order
// they were granted: a page of its grants, then the roles they name (one
// BatchGetItem). A grant whose role is gone comes back as a zero domain.Role
// (empty ID). Positions: ValidPairPosition.
func (s *Roles) PageHeldRoles(ctx context.Context, principal, after string, desc bool, n int) ([]domain.Role, []string, bool, error) {
	return pageHeld[domain.Role](ctx, s.Table, principal, prefixHeldRole, after, desc, n)
}

// PageHeldGroups is PageHeldRoles for group memberships.
func (s *Roles) PageHeldGroups(ctx context.Context, principal, after string, desc bool, n int) ([]domain.Group, []string, bool, error) {
	return pageHeld[domain.Group](ctx, s.Table, principal, prefixHeldGroup, after, desc, n)
}

func pageHeld[T any](ctx context.Context, s *Table, principal, prefix, after string, desc bool, n int) ([]T, []string, bool, error) {
	sk := func(acct, id string) string { return grantSK(acct, id) }
	target := func(acct, id string) map[string]types.AttributeValue { return key(rbacPK(acct), roleSK(id)) }
	if prefix == prefixHeldGroup {
		sk = groupGrantSK
		target = func(acct, id string) map[string]types.AttributeValue { return key(rbacPK(acct), groupSK(id)) }
	}
	_, pos, more, err := s.page(ctx, collection{op: "list held " + strings.ToLower(strings.TrimSuffix(prefix, "#")) + "s", index: IndexGSI2,
		pk: heldList(principal), skPrefix: prefix,
		tableKey: func(pos string) (string, string) {
			acct, id := pairOf(pos)
			return principalPK(principal), sk(acct, id)
		}}, after, desc, n)
	if err != nil || len(pos) == 0 {
		return nil, nil, more, err
	}
	keys := make([]map[string]types.AttributeValue, len(pos))
	for i, p := range pos {
		keys[i] = target(pairOf(p))
	}
	// Consistent: a role changed a moment ago is listed as it now is.
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return nil, nil, false, wrap("list held "+prefix, err)
	}
	byKey := map[string]map[string]types.AttributeValue{}
	for _, it := range items {
		pk, _ := it[AttrPK].(*types.AttributeValueMemberS)
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		if pk != nil && sk != nil {
			byKey[pk.Value+"|"+sk.Value] = it
		}
	}
	// A grant whose role (group) is gone stays a member, as a zero value
	// (empty ID) for the caller to pass over like any hidden member: its
	// position is read, so the next page starts after it.
	out := make([]T, len(keys))
	for i, k := range keys {
		it, ok := byKey[k[AttrPK].(*types.AttributeValueMemberS).Value+"|"+k[AttrSK].(*types.AttributeValueMemberS).Value]
		if !ok {
			continue
		}
		v, err := unmarshalAll[T]([]map[string]types.AttributeValue{it})
		if err != nil {
			return nil, nil, false, err
		}
		out[i] = v[0]
	}
	return out, pos, more, nil
}

// PageAccounts reads the installation's accounts in creation order.
func (s *Accounts) PageAccounts(ctx context.Context, after string, desc bool, n int) ([]domain.AccountRecord, []string, bool, error) {
	return pageOf[domain.AccountRecord](ctx, s.Table, collection{op: "list accounts", index: IndexGSI2, pk: accountsList,
		tableKey: func(pos string) (string, string) { return accountPK(idOf(pos)), skAccount }}, after, desc, n)
}
