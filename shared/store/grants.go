package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

func grantKey(g domain.Grant) keyAttrs {
	if g.Group != "" {
		return keyAttrs{
			PK: principalPK(g.PrincipalID), SK: groupGrantSK(g.AccountID, g.Group),
			// The group's members, so that deleting a group can remove them.
			GSI1PK: groupMembersGSI(g.AccountID, g.Group), GSI1SK: principalPK(g.PrincipalID),
			GSI2PK: heldList(g.PrincipalID), GSI2SK: prefixHeldGroup + heldPosition(g.Created, g.AccountID, g.Group),
			Entity: "group_grant",
		}
	}
	return keyAttrs{
		PK: principalPK(g.PrincipalID), SK: grantSK(g.AccountID, g.RoleID),
		// The role's holders, so that deleting a role can revoke its grants.
		GSI1PK: roleHoldersGSI(g.AccountID, g.RoleID), GSI1SK: principalPK(g.PrincipalID),
		GSI2PK: heldList(g.PrincipalID), GSI2SK: prefixHeldRole + heldPosition(g.Created, g.AccountID, g.RoleID),
		Entity: "grant",
	}
}

// grantItemKey is the table key of g's item.
func grantItemKey(g domain.Grant) map[string]types.AttributeValue {
	k := grantKey(g)
	return key(k.PK, k.SK)
}

// grantTargetKey is the key of what g grants: the role, or the group.
func grantTargetKey(g domain.Grant) map[string]types.AttributeValue {
	if g.Group != "" {
		return key(rbacPK(g.AccountID), groupSK(g.Group))
	}
	return key(rbacPK(g.AccountID), roleSK(g.RoleID))
}

// Grants returns the roles a principal holds directly and the groups it is
// a member of (Group set), with one Query: both kinds of items share the
// "GRANT" prefix of the principal's partition.
func (s *Roles) Grants(ctx context.Context, principal string) ([]domain.Grant, error) {
	items, err := s.query(ctx, "query grants", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(principalPK(principal)),
			":sk": avStr(prefixAnyGrant),
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[domain.Grant](items)
}

// grantsPage reads the principal's grants in key order (role grants by
// account and role, then group memberships by account and group) after
// `after` (from the first when nil): at most limit of them and whether
// more may follow, or with limit 0 all the rest (more is then false).
// DynamoDB answers a Query that stops at its Limit with a LastEvaluatedKey
// even when nothing follows, so "more" may be a false alarm, never a miss.
func (s *Roles) grantsPage(ctx context.Context, principal string, after *domain.Grant, limit int) ([]domain.Grant, bool, error) {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		ConsistentRead:         aws.Bool(true), // a revoked grant is never read again
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(principalPK(principal)),
			":sk": avStr(prefixAnyGrant),
		},
	}
	if after != nil {
		a := *after
		a.PrincipalID = principal
		in.ExclusiveStartKey = grantItemKey(a)
	}
	var items []map[string]types.AttributeValue
	more := false
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, false, wrap("query grants", err)
		}
		items, more = out.Items, len(out.LastEvaluatedKey) > 0
	} else {
		var err error
		if items, err = s.query(ctx, "query grants", in, 0); err != nil {
			return nil, false, err
		}
	}
	grants, err := unmarshalAll[domain.Grant](items)
	return grants, more, err
}

// FirstGrants returns the principal's first n grants in key order and
// whether more may follow (GrantsAfter reads them): what LoadCredential
// reads with the credential, for a caller that asked it for none.
func (s *Roles) FirstGrants(ctx context.Context, principal string, n int) ([]domain.Grant, bool, error) {
	return s.grantsPage(ctx, principal, nil, n)
}

// GrantsAfter returns the principal's grants that follow `after` in key
// order (the last grant of a page LoadCredential read), all of them: the
// authorizer's read of the rest, only when what it read first did not
// grant the request.
func (s *Roles) GrantsAfter(ctx context.Context, principal string, after domain.Grant) ([]domain.Grant, error) {
	grants, _, err := s.grantsPage(ctx, principal, &after, 0)
	return grants, err
}

// PutGrant records that a principal holds a role (or is a member of a group,
// when g.Group is set); the role or group must exist.
func (s *Roles) PutGrant(ctx context.Context, g domain.Grant) error {
	m, err := item(grantKey(g), g)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "put grant", []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: m}},
		{ConditionCheck: &types.ConditionCheck{
			TableName:           aws.String(s.table),
			Key:                 grantTargetKey(g),
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}},
	})
	if errors.Is(err, ddb.ErrConditionFailed) {
		return domain.ErrNotFound
	}
	return err
}

// gsiKeys returns the table keys of the items indexed under one GSI1
// partition (a role's holders, a group's members, ...).
func (s *Table) gsiKeys(ctx context.Context, op, pk string) ([]map[string]types.AttributeValue, error) {
	return s.keyAttrsOf(ctx, op, gsiQuery(pk))
}

// CleanupError means a change was committed but some of the items it left
// dangling (grants of a deleted role, keys of a deleted service user, ...)
// could not be removed. Nothing reads such items for a decision: a grant
// of a missing role or group applies nothing, a key of a missing principal
// authenticates nobody. Callers log it and report success.
type CleanupError struct{ Err error }

func (e *CleanupError) Error() string { return "cleanup after commit: " + e.Err.Error() }
func (e *CleanupError) Unwrap() error { return e.Err }

// commit writes must in one transaction, with the deletes of cleanup in the
// same transaction when everything fits in one; otherwise the cleanup
// deletes follow in batches once must is committed (a *CleanupError when
// they fail). must carries every write whose effect a request can observe
// (a revocation, a state change); cleanup only removes unreachable items.
func (s *Table) commit(ctx context.Context, op string, must []types.TransactWriteItem, cleanup []map[string]types.AttributeValue) error {
	seen := map[string]bool{}
	for _, it := range must {
		if k := txKey(it); k != "" {
			seen[k] = true
		}
	}
	var rest []types.WriteRequest
	tx := must
	for _, k := range cleanup {
		id := keyString(k)
		if seen[id] {
			continue
		}
		seen[id] = true
		if len(tx) < ddb.MaxTransactItems {
			tx = append(tx, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: k}})
		} else {
			rest = append(rest, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
		}
	}
	if err := s.transact(ctx, op, tx); err != nil {
		return err
	}
	if err := ddb.BatchWrite(ctx, s.db, s.table, rest); err != nil {
		return &CleanupError{Err: wrap(op, err)}
	}
	return nil
}

func txKey(it types.TransactWriteItem) string {
	switch {
	case it.Put != nil:
		return keyString(it.Put.Item)
	case it.Update != nil:
		return keyString(it.Update.Key)
	case it.Delete != nil:
		return keyString(it.Delete.Key)
	case it.ConditionCheck != nil:
		return keyString(it.ConditionCheck.Key)
	}
	return ""
}

func keyString(m map[string]types.AttributeValue) string {
	pk, _ := m[AttrPK].(*types.AttributeValueMemberS)
	sk, _ := m[AttrSK].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return ""
	}
	return fmt.Sprintf("%s\x00%s", pk.Value, sk.Value)
}

// Group grant keys: beside the role grants in the principal's partition,
// under the same "GRANT" prefix so that one Query reads both.
func groupGrantSK(acct, group string) string { return "GRANTGROUP#" + acct + "#" + group }
func groupMembersGSI(acct, group string) string {
	return "MEMBERS#" + acct + "#" + group
}

const prefixAnyGrant = "GRANT"

// DeleteGrant removes a direct grant or a group membership of a principal
// and, in the same transaction, marks the invitation that made it declined
// (the holder left). via is that invitation: its account, kind and id, or a
// zero InvitationRef for grants no invitation made (the bootstrap's).
func (s *Roles) DeleteGrant(ctx context.Context, g domain.Grant, via domain.InvitationRef) error {
	tx := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName:           aws.String(s.table),
		Key:                 grantItemKey(g),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}}
	if via.ID != "" {
		tx = append(tx, types.TransactWriteItem{Update: &types.Update{
			TableName:                aws.String(s.table),
			Key:                      key(invitationsPK(via.Account), invitationSK(via.Kind, via.ID)),
			UpdateExpression:         aws.String("SET #st = :declined, updated = :now, " + bumpVersion),
			ConditionExpression:      aws.String("attribute_exists(PK) AND #st = :accepted"),
			ExpressionAttributeNames: map[string]string{"#st": "state"},
			ExpressionAttributeValues: withBump(map[string]types.AttributeValue{
				":declined": avStr(domain.InvitationDeclined),
				":accepted": avStr(domain.InvitationAccepted),
				":now":      avStr(s.now().Format(timeLayout)),
			}),
		}})
	}
	err := s.transact(ctx, "delete grant", tx)
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Index == 0 && r.Code == ddb.ReasonConditionalCheckFailed {
				return domain.ErrNotFound
			}
		}
		if len(tx) > 1 && txe.HasReason(ddb.ReasonConditionalCheckFailed) {
			// The invitation is gone or was answered otherwise: the grant
			// still goes.
			return s.DeleteGrant(ctx, g, domain.InvitationRef{})
		}
	}
	return err
}
