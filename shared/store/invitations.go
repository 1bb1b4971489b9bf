package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

func invitationsPK(acct string) string { return "INVITATIONS#" + acct }
func invitationSK(kind, id string) string {
	if kind == domain.InvitationGroup {
		return "GROUPINVITATION#" + id
	}
	return "INVITATION#" + id
}
func inviteeGSI(email string) string { return "INVITEE#" + strings.ToLower(email) }

// invitationRefPK is the partition of an invitation's reference item,
// which names its account: the invitee finds an invitation by id alone,
// and GSI1 (the inbox) may not show one sent a moment ago.
func invitationRefPK(id string) string { return "INVITATIONREF#" + id }

const skInvitationRef = "INVITATIONREF"

// invitationRef is an invitation's reference item: where it lives.
type invitationRef struct {
	Account string `dynamodbav:"account"`
	Kind    string `dynamodbav:"kind"`
}

func invitationKey(inv domain.Invitation) keyAttrs {
	k := keyAttrs{PK: invitationsPK(inv.AccountID), SK: invitationSK(inv.Kind, inv.ID), Entity: "invitation",
		GSI2PK: invitationsPK(inv.AccountID), GSI2SK: invitationSK(inv.Kind, createdPosition(inv.Created, inv.ID))}
	if inv.State != domain.InvitationQueued {
		// The inbox: GSI1 finds one invitation by id, GSI3 lists them in
		// creation order.
		k.GSI1PK, k.GSI1SK = inviteeGSI(inv.Email), invitationSK(inv.Kind, inv.ID)
		// An inbox holds invitations of every account: the position names
		// the account too (ValidPairPosition).
		k.GSI3PK, k.GSI3SK = inviteeGSI(inv.Email), invitationSK(inv.Kind, heldPosition(inv.Created, inv.AccountID, inv.ID))
	}
	return k
}

func (s *Invitations) targetCheck(inv domain.Invitation) types.TransactWriteItem {
	k := key(rbacPK(inv.AccountID), roleSK(inv.Target))
	if inv.Kind == domain.InvitationGroup {
		k = key(rbacPK(inv.AccountID), groupSK(inv.Target))
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 k,
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}
}

// ErrAlreadyHeld means the principal already holds the role (or is already
// a member of the group) an invitation grants.
var ErrAlreadyHeld = errors.New("already held")

// CreateInvitation writes a new invitation; its role or group must exist
// (domain.ErrNotFound). An invitation created accepted (to a service user, whose
// acceptance is implied) writes the grant of inv.Principal in the same
// transaction (ErrAlreadyHeld if it exists). A queued invitation passes
// its outbox marker m, written in the same transaction (nil: none).
func (s *Invitations) CreateInvitation(ctx context.Context, inv domain.Invitation, m *OutboxMarker) error {
	put, err := s.put(invitationKey(inv), inv)
	if err != nil {
		return err
	}
	ref, err := item(keyAttrs{PK: invitationRefPK(inv.ID), SK: skInvitationRef, Entity: "invitation_ref"}, invitationRef{Account: inv.AccountID, Kind: inv.Kind})
	if err != nil {
		return err
	}
	tx := []types.TransactWriteItem{put, s.targetCheck(inv), {Put: &types.Put{TableName: aws.String(s.table), Item: ref}}}
	if inv.State == domain.InvitationAccepted {
		gput, err := s.put(grantKey(inv.Grant(inv.Principal, inv.Created)), inv.Grant(inv.Principal, inv.Created))
		if err != nil {
			return err
		}
		tx = append(tx, gput)
	}
	if m != nil {
		mput, err := s.outboxPut(m, invitationOutboxPK(inv))
		if err != nil {
			return err
		}
		tx = append(tx, mput)
	}
	q, err := s.quotaOf(ctx, inv.AccountID, domain.InvitationQuota(inv.Kind))
	if err != nil {
		return err
	}
	tx = append(tx, s.usageOp(inv.AccountID, q, 1))
	err = s.transact(ctx, "create invitation", tx)
	if qerr := quotaRefused(err, len(tx)-1, inv.AccountID, q); qerr != nil {
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
				return domain.Duplicate("invitation", inv.ID, "")
			case 1:
				return domain.ErrNotFound
			default:
				return ErrAlreadyHeld
			}
		}
	}
	return err
}

// GetInvitation reads one invitation of an account.
func (s *Invitations) GetInvitation(ctx context.Context, account, kind, id string) (domain.Invitation, error) {
	var inv domain.Invitation
	err := s.getItem(ctx, "get invitation", invitationsPK(account), invitationSK(kind, id), &inv)
	return inv, err
}

// ListInvitations returns an account's invitations of one kind.
func (s *Invitations) ListInvitations(ctx context.Context, account, kind string) ([]domain.Invitation, error) {
	items, err := s.query(ctx, "list invitations", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(invitationsPK(account)),
			":sk": avStr(invitationSK(kind, "")),
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[domain.Invitation](items)
}

// InboxInvitation returns one delivered invitation addressed to email
// (domain.ErrNotFound when there is none with that id, or it is not delivered
// yet, or it is addressed to someone else).
func (s *Invitations) InboxInvitation(ctx context.Context, email, kind, id string) (domain.Invitation, error) {
	items, err := s.query(ctx, "get inbox invitation", &dynamodb.QueryInput{
		IndexName:              aws.String(IndexGSI1),
		KeyConditionExpression: aws.String("GSI1PK = :pk AND GSI1SK = :sk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(inviteeGSI(email)),
			":sk": avStr(invitationSK(kind, id)),
		},
	}, 0)
	if err != nil {
		return domain.Invitation{}, err
	}
	invs, err := unmarshalAll[domain.Invitation](items)
	if err != nil {
		return domain.Invitation{}, err
	}
	if len(invs) == 1 {
		return invs[0], nil
	}
	// Not in the index (yet): decide from the base table, consistently,
	// before answering that there is no such invitation.
	var ref invitationRef
	if err := s.getItem(ctx, "get invitation reference", invitationRefPK(id), skInvitationRef, &ref); err != nil {
		return domain.Invitation{}, err
	}
	if ref.Kind != kind {
		return domain.Invitation{}, domain.ErrNotFound
	}
	inv, err := s.GetInvitation(ctx, ref.Account, kind, id)
	if err != nil {
		return domain.Invitation{}, err
	}
	// What the inbox index holds (invitationKey): sent, to this invitee.
	if inv.State == domain.InvitationQueued || !strings.EqualFold(inv.Email, email) {
		return domain.Invitation{}, domain.ErrNotFound
	}
	return inv, nil
}

// ErrStateChanged means the invitation is gone or no longer in a state
// that allows the change (answered meanwhile, revoked, ...).
var ErrStateChanged = errors.New("the invitation changed meanwhile")

// updateInvitation runs in on the invitation ref; pinned is whether its
// condition names a version (atVersions), whose failure is then domain.ErrChanged.
func (s *Invitations) updateInvitation(ctx context.Context, op string, ref domain.InvitationRef, pinned bool, in *dynamodb.UpdateItemInput) (domain.Invitation, error) {
	in.TableName = aws.String(s.table)
	in.Key = key(invitationsPK(ref.Account), invitationSK(ref.Kind, ref.ID))
	in.ReturnValues = types.ReturnValueAllNew
	if in.ExpressionAttributeNames == nil {
		in.ExpressionAttributeNames = map[string]string{}
	}
	in.ExpressionAttributeNames["#st"] = "state"
	res, err := s.db.UpdateItem(ctx, in)
	if ddb.IsConditionFailed(err) && pinned {
		return domain.Invitation{}, domain.ErrChanged
	}
	if ddb.IsConditionFailed(err) {
		return domain.Invitation{}, ErrStateChanged
	}
	if err != nil {
		return domain.Invitation{}, wrap(op, err)
	}
	var inv domain.Invitation
	if err := attributevalue.UnmarshalMap(res.Attributes, &inv); err != nil {
		return domain.Invitation{}, wrap(op, err)
	}
	return inv, nil
}

// MarkInvitationSent records the delivery of a queued invitation: state
// sent, the time, and its entry in the invitee's inbox (the GSI1 keys a
// queued invitation does not have). Only a queued invitation changes
// (ErrStateChanged otherwise), so a redelivered queue message cannot move
// an answered invitation back.
func (s *Invitations) MarkInvitationSent(ctx context.Context, inv domain.Invitation) (domain.Invitation, error) {
	ctx = withLists(ctx, invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID), inviteeGSI(inv.Email))
	now := s.now()
	inv.State, inv.Sent, inv.Updated = domain.InvitationSent, &now, now
	k := invitationKey(inv)
	at, err := attributevalue.Marshal(now)
	if err != nil {
		return domain.Invitation{}, fmt.Errorf("mark invitation sent: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(k.PK, k.SK),
		UpdateExpression:         aws.String("SET #st = :sent, sent = :at, updated = :at, GSI1PK = :gpk, GSI1SK = :gsk, GSI3PK = :ipk, GSI3SK = :isk, " + bumpVersion),
		ConditionExpression:      aws.String("attribute_exists(PK) AND #st = :queued"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: withBump(map[string]types.AttributeValue{
			":queued": avStr(domain.InvitationQueued), ":sent": avStr(domain.InvitationSent), ":at": at,
			":gpk": avStr(k.GSI1PK), ":gsk": avStr(k.GSI1SK), ":ipk": avStr(k.GSI3PK), ":isk": avStr(k.GSI3SK),
		}),
	})
	if ddb.IsConditionFailed(err) {
		return domain.Invitation{}, ErrStateChanged
	}
	if err != nil {
		return domain.Invitation{}, wrap("mark invitation sent", err)
	}
	inv.Version++
	return inv, nil
}

// RequeueInvitation puts an unanswered invitation back in state queued, to
// be sent again (ErrStateChanged once answered), and writes its outbox
// marker m in the same transaction. It stays in the invitee's inbox if it
// was delivered before. inv is the invitation as read; the result is inv
// as requeued. With versions (a request's If-Match) only an invitation at
// one of them changes: domain.ErrChanged otherwise.
func (s *Invitations) RequeueInvitation(ctx context.Context, inv domain.Invitation, m *OutboxMarker, versions ...int) (domain.Invitation, error) {
	ctx = withLists(ctx, invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID), inviteeGSI(inv.Email))
	now := s.now()
	mput, err := s.outboxPut(m, invitationOutboxPK(inv))
	if err != nil {
		return domain.Invitation{}, err
	}
	cond, vals := atVersions("attribute_exists(PK) AND (#st = :queued OR #st = :sent)", withBump(map[string]types.AttributeValue{
		":sent": avStr(domain.InvitationSent), ":queued": avStr(domain.InvitationQueued), ":now": avStr(now.Format(timeLayout)),
	}), versions)
	err = s.transact(ctx, "requeue invitation", []types.TransactWriteItem{{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID)),
		UpdateExpression:          aws.String("SET #st = :queued, updated = :now, " + bumpVersion),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: vals,
	}}, mput})
	if txConditionFailedAt(err, 0) && len(versions) > 0 {
		return domain.Invitation{}, domain.ErrChanged
	}
	if txConditionFailedAt(err, 0) {
		return domain.Invitation{}, ErrStateChanged
	}
	if err != nil {
		return domain.Invitation{}, err
	}
	inv.State, inv.Updated, inv.Version = domain.InvitationQueued, now, inv.Version+1
	return inv, nil
}

// DeclineInvitation records the invitee's refusal of an unanswered
// invitation (ErrStateChanged once answered). The invitation as read
// names the invitee's inbox, which lists it too. With versions (a
// request's If-Match) only an invitation at one of them changes:
// domain.ErrChanged otherwise.
func (s *Invitations) DeclineInvitation(ctx context.Context, inv domain.Invitation, versions ...int) (domain.Invitation, error) {
	ctx = withLists(ctx, invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID), inviteeGSI(inv.Email))
	cond, vals := atVersions("attribute_exists(PK) AND (#st = :queued OR #st = :sent)", withBump(map[string]types.AttributeValue{
		":sent": avStr(domain.InvitationSent), ":queued": avStr(domain.InvitationQueued), ":declined": avStr(domain.InvitationDeclined),
		":now": avStr(s.now().Format(timeLayout)),
	}), versions)
	return s.updateInvitation(ctx, "decline invitation", inv.Ref(), len(versions) > 0, &dynamodb.UpdateItemInput{
		UpdateExpression:          aws.String("SET #st = :declined, updated = :now, " + bumpVersion),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
	})
}

// AcceptInvitation records principal's acceptance and writes its grant in
// one transaction: the grant exists exactly when the invitation says
// accepted. ErrStateChanged when the invitation was answered or revoked
// meanwhile, ErrAlreadyHeld when principal holds the role or group already,
// domain.ErrNotFound when the role or group no longer exists. With
// versions (a request's If-Match) only an invitation at one of them
// changes: domain.ErrChanged otherwise.
func (s *Invitations) AcceptInvitation(ctx context.Context, inv domain.Invitation, principal string, versions ...int) (domain.Invitation, error) {
	ctx = withLists(ctx, invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID), inviteeGSI(inv.Email))
	now := s.now()
	g := inv.Grant(principal, now)
	gput, err := s.put(grantKey(g), g)
	if err != nil {
		return domain.Invitation{}, err
	}
	ts := now.Format(timeLayout)
	cond, vals := atVersions("attribute_exists(PK) AND (#st = :queued OR #st = :sent)", withBump(map[string]types.AttributeValue{
		":accepted": avStr(domain.InvitationAccepted), ":queued": avStr(domain.InvitationQueued), ":sent": avStr(domain.InvitationSent),
		":now": avStr(ts), ":p": avStr(principal),
	}), versions)
	tx := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(s.table),
			Key:                       key(invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID)),
			UpdateExpression:          aws.String("SET #st = :accepted, accepted = :now, updated = :now, principal = :p, " + bumpVersion),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  map[string]string{"#st": "state"},
			ExpressionAttributeValues: vals,
		}},
		gput,
		s.targetCheck(inv),
	}
	err = s.transact(ctx, "accept invitation", tx)
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code != ddb.ReasonConditionalCheckFailed {
				continue
			}
			switch {
			case r.Index == 0 && len(versions) > 0:
				return domain.Invitation{}, domain.ErrChanged
			case r.Index == 0:
				return domain.Invitation{}, ErrStateChanged
			case r.Index == 1:
				return domain.Invitation{}, ErrAlreadyHeld
			default:
				return domain.Invitation{}, domain.ErrNotFound
			}
		}
	}
	if err != nil {
		return domain.Invitation{}, err
	}
	inv.State, inv.Accepted, inv.Updated, inv.Principal, inv.Version = domain.InvitationAccepted, &now, now, principal, inv.Version+1
	return inv, nil
}

// DeleteInvitation revokes an invitation: it is deleted and, if it was
// accepted, the grant it made goes in the same transaction, so the access
// it gave ends with the very next request. It deletes only the invitation
// as read (ErrStateChanged if it was answered meanwhile: read and retry).
// With versions (a request's If-Match) only an invitation at one of them
// goes: domain.ErrChanged otherwise.
func (s *Invitations) DeleteInvitation(ctx context.Context, inv domain.Invitation, versions ...int) error {
	ctx = withLists(ctx, invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID), inviteeGSI(inv.Email))
	cond, vals := atVersions("attribute_exists(PK) AND #st = :st", map[string]types.AttributeValue{":st": avStr(inv.State)}, versions)
	tx := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       key(invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID)),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: vals,
	}}, {Delete: &types.Delete{TableName: aws.String(s.table), Key: key(invitationRefPK(inv.ID), skInvitationRef)}}}
	if inv.State == domain.InvitationAccepted && inv.Principal != "" {
		// Only the grant this invitation made: one made by another
		// invitation to the same role stays.
		tx = append(tx, types.TransactWriteItem{Delete: &types.Delete{
			TableName:           aws.String(s.table),
			Key:                 grantItemKey(inv.Grant(inv.Principal, time.Time{})),
			ConditionExpression: aws.String("attribute_not_exists(PK) OR via = :via"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":via": avStr(inv.Ref().Href()),
			},
		}})
	}
	tx = append(tx, s.usageOp(inv.AccountID, domain.Quota{Kind: domain.InvitationQuota(inv.Kind)}, -1))
	err := s.transact(ctx, "delete invitation", tx)
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code == ddb.ReasonConditionalCheckFailed && r.Index == 0 && len(versions) > 0 {
				return domain.ErrChanged
			}
			if r.Code == ddb.ReasonConditionalCheckFailed && r.Index == 0 {
				return ErrStateChanged
			}
		}
		if len(tx) > 1 && txe.HasReason(ddb.ReasonConditionalCheckFailed) {
			// The principal holds the role through another invitation now
			// (it left this one's grant and accepted another): only the
			// invitation goes.
			inv.Principal = ""
			return s.DeleteInvitation(ctx, inv, versions...)
		}
	}
	return err
}

// invitationDeletes is how a delete that takes invitations with it (of a
// role, a group, a service user) keeps the invitation quotas' counts: each
// invitation of account a Delete that must find it, and per kind one
// ADD -n on the account's count, in the caller's transaction, for as many
// as room allows. A concurrent revoke of one of them then cancels the
// transaction (the caller answers "changed meanwhile; retry") instead of
// counting it twice. Those past room are returned as keys for the deletes
// after the transaction, with afterTx, which takes them off the counts
// once they are deleted.
func (s *Invitations) invitationDeletes(account string, keys []map[string]types.AttributeValue, room int) (tx []types.TransactWriteItem, rest []map[string]types.AttributeValue, afterTx func(context.Context) error) {
	kindOf := func(k map[string]types.AttributeValue) string {
		if strings.HasPrefix(str(k[AttrSK]), invitationSK(domain.InvitationGroup, "")) {
			return domain.InvitationGroup
		}
		return domain.InvitationRole
	}
	inTx, later := map[string]int{}, map[string]int{}
	kinds := 0
	for _, k := range keys {
		if len(tx)+kinds+1 < room {
			kind := kindOf(k)
			if inTx[kind] == 0 {
				kinds++
			}
			inTx[kind]++
			tx = append(tx, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: k,
				ConditionExpression: aws.String("attribute_exists(PK)")}})
			continue
		}
		later[kindOf(k)]++
		rest = append(rest, k)
	}
	for _, kind := range []string{domain.InvitationRole, domain.InvitationGroup} {
		if n := inTx[kind]; n > 0 {
			tx = append(tx, s.usageOp(account, domain.Quota{Kind: domain.InvitationQuota(kind)}, -n))
		}
	}
	afterTx = func(ctx context.Context) error {
		for kind, n := range later {
			u := s.usageOp(account, domain.Quota{Kind: domain.InvitationQuota(kind)}, -n).Update
			if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
				ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues}); err != nil {
				// The deletes are done: like a failed cleanup, this leaves
				// the count too high (stricter), not the request failed.
				return &CleanupError{Err: wrap("count invitations deleted", err)}
			}
		}
		return nil
	}
	return tx, rest, afterTx
}
