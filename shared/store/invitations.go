package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

// Invitation kinds: to a role, or to a group.
const (
	InvitationRole  = "role"
	InvitationGroup = "group"
)

// Invitation states (docs/api.md#invitations): queued -> sent ->
// accepted|declined.
const (
	InvitationQueued   = "queued"
	InvitationSent     = "sent"
	InvitationAccepted = "accepted"
	InvitationDeclined = "declined"
)

// Invitation is a role invitation or a group invitation of an account.
//
// It lives in the account's invitations partition. Once delivered (state
// sent, or accepted at creation for a service user) it is also indexed
// under the invitee's email in GSI1: that is the invitee's inbox, read by
// GET /v2/users/self/invitations. A queued invitation is not in it, so
// nobody can answer an invitation before it was sent.
type Invitation struct {
	AccountID string `dynamodbav:"account"`
	ID        string `dynamodbav:"id"`
	Kind      string `dynamodbav:"kind"`
	Email     string `dynamodbav:"user_email"`
	// Target is the id of the role (Kind role) or group (Kind group), of
	// the same account.
	Target    string     `dynamodbav:"target"`
	State     string     `dynamodbav:"state"`
	GrantedBy string     `dynamodbav:"granted_by,omitempty"` // the inviter's principal id
	Principal string     `dynamodbav:"principal,omitempty"`  // who accepted: whose grant to revoke
	Created   time.Time  `dynamodbav:"created"`
	Sent      *time.Time `dynamodbav:"sent,omitempty"`
	Accepted  *time.Time `dynamodbav:"accepted,omitempty"`
	Updated   time.Time  `dynamodbav:"updated"`
}

// InvitationRef names an invitation.
type InvitationRef struct{ Account, Kind, ID string }

// Ref is inv's reference.
func (inv Invitation) Ref() InvitationRef {
	return InvitationRef{Account: inv.AccountID, Kind: inv.Kind, ID: inv.ID}
}

// Href is the invitation's API reference; grants record it as Via.
func (r InvitationRef) Href() string {
	coll := "/invitations/"
	if r.Kind == InvitationGroup {
		coll = "/group-invitations/"
	}
	return "/v2/accounts/" + r.Account + coll + r.ID
}

// ParseInvitationHref is Href's inverse; ok is false for anything else
// (a grant made by the bootstrap, for instance).
func ParseInvitationHref(href string) (InvitationRef, bool) {
	rest, ok := strings.CutPrefix(href, "/v2/accounts/")
	if !ok {
		return InvitationRef{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return InvitationRef{}, false
	}
	r := InvitationRef{Account: parts[0], ID: parts[2]}
	switch parts[1] {
	case "invitations":
		r.Kind = InvitationRole
	case "group-invitations":
		r.Kind = InvitationGroup
	default:
		return InvitationRef{}, false
	}
	return r, true
}

// Grant is what accepting the invitation gives principal.
func (inv Invitation) Grant(principal string, now time.Time) Grant {
	g := Grant{PrincipalID: principal, AccountID: inv.AccountID, Via: inv.Ref().Href(), Created: now}
	if inv.Kind == InvitationGroup {
		g.Group = inv.Target
	} else {
		g.RoleID = inv.Target
	}
	return g
}

func invitationsPK(acct string) string { return "INVITATIONS#" + acct }
func invitationSK(kind, id string) string {
	if kind == InvitationGroup {
		return "GROUPINVITATION#" + id
	}
	return "INVITATION#" + id
}
func inviteeGSI(email string) string { return "INVITEE#" + strings.ToLower(email) }

func invitationKey(inv Invitation) keyAttrs {
	k := keyAttrs{PK: invitationsPK(inv.AccountID), SK: invitationSK(inv.Kind, inv.ID), Entity: "invitation",
		GSI2PK: invitationsPK(inv.AccountID), GSI2SK: invitationSK(inv.Kind, createdPosition(inv.Created, inv.ID))}
	if inv.State != InvitationQueued {
		// The inbox: GSI1 finds one invitation by id, GSI3 lists them in
		// creation order.
		k.GSI1PK, k.GSI1SK = inviteeGSI(inv.Email), invitationSK(inv.Kind, inv.ID)
		k.GSI3PK, k.GSI3SK = inviteeGSI(inv.Email), invitationSK(inv.Kind, createdPosition(inv.Created, inv.ID))
	}
	return k
}

func (s *Store) targetCheck(inv Invitation) types.TransactWriteItem {
	k := key(rbacPK(inv.AccountID), roleSK(inv.Target))
	if inv.Kind == InvitationGroup {
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
// (ErrNotFound). An invitation created accepted (to a service user, whose
// acceptance is implied) writes the grant of inv.Principal in the same
// transaction (ErrAlreadyHeld if it exists). A queued invitation passes
// its outbox marker m, written in the same transaction (nil: none).
func (s *Store) CreateInvitation(ctx context.Context, inv Invitation, m *OutboxMarker) error {
	put, err := s.put(invitationKey(inv), inv)
	if err != nil {
		return err
	}
	tx := []types.TransactWriteItem{put, s.targetCheck(inv)}
	if inv.State == InvitationAccepted {
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
	err = s.transact(ctx, "create invitation", tx)
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code != ddb.ReasonConditionalCheckFailed {
				continue
			}
			switch r.Index {
			case 0:
				return &ConflictError{Msg: "an invitation with id " + inv.ID + " already exists"}
			case 1:
				return ErrNotFound
			default:
				return ErrAlreadyHeld
			}
		}
	}
	return err
}

// GetInvitation reads one invitation of an account.
func (s *Store) GetInvitation(ctx context.Context, account, kind, id string) (Invitation, error) {
	var inv Invitation
	err := s.getItem(ctx, "get invitation", invitationsPK(account), invitationSK(kind, id), &inv)
	return inv, err
}

// ListInvitations returns an account's invitations of one kind.
func (s *Store) ListInvitations(ctx context.Context, account, kind string) ([]Invitation, error) {
	items, err := s.query(ctx, "list invitations", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: invitationsPK(account)},
			":sk": &types.AttributeValueMemberS{Value: invitationSK(kind, "")},
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[Invitation](items)
}

// InboxInvitations returns the delivered invitations of one kind addressed
// to email, from every account.
func (s *Store) InboxInvitations(ctx context.Context, email, kind string) ([]Invitation, error) {
	items, err := s.listByGSI(ctx, "list inbox", inviteeGSI(email), invitationSK(kind, ""))
	if err != nil {
		return nil, err
	}
	return unmarshalAll[Invitation](items)
}

// InboxInvitation returns one delivered invitation addressed to email
// (ErrNotFound when there is none with that id, or it is not delivered
// yet, or it is addressed to someone else).
func (s *Store) InboxInvitation(ctx context.Context, email, kind, id string) (Invitation, error) {
	items, err := s.query(ctx, "get inbox invitation", &dynamodb.QueryInput{
		IndexName:              aws.String(IndexGSI1),
		KeyConditionExpression: aws.String("GSI1PK = :pk AND GSI1SK = :sk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: inviteeGSI(email)},
			":sk": &types.AttributeValueMemberS{Value: invitationSK(kind, id)},
		},
	}, 0)
	if err != nil {
		return Invitation{}, err
	}
	invs, err := unmarshalAll[Invitation](items)
	if err != nil {
		return Invitation{}, err
	}
	if len(invs) == 0 {
		return Invitation{}, ErrNotFound
	}
	return invs[0], nil
}

// ErrStateChanged means the invitation is gone or no longer in a state
// that allows the change (answered meanwhile, revoked, ...).
var ErrStateChanged = errors.New("the invitation changed meanwhile")

func (s *Store) updateInvitation(ctx context.Context, op string, ref InvitationRef, in *dynamodb.UpdateItemInput) (Invitation, error) {
	in.TableName = aws.String(s.table)
	in.Key = key(invitationsPK(ref.Account), invitationSK(ref.Kind, ref.ID))
	in.ReturnValues = types.ReturnValueAllNew
	if in.ExpressionAttributeNames == nil {
		in.ExpressionAttributeNames = map[string]string{}
	}
	in.ExpressionAttributeNames["#st"] = "state"
	res, err := s.db.UpdateItem(ctx, in)
	if ddb.IsConditionFailed(err) {
		return Invitation{}, ErrStateChanged
	}
	if err != nil {
		return Invitation{}, wrap(op, err)
	}
	var inv Invitation
	if err := attributevalue.UnmarshalMap(res.Attributes, &inv); err != nil {
		return Invitation{}, wrap(op, err)
	}
	return inv, nil
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// MarkInvitationSent records the delivery of a queued invitation: state
// sent, the time, and its entry in the invitee's inbox. Only a queued
// invitation changes (ErrStateChanged otherwise), so a redelivered queue
// message cannot move an answered invitation back.
//
// It replaces the item (conditional Put) rather than updating it: the
// update would add the GSI1 keys to an item that had none, which minidyn
// mis-indexes (it overwrites another item's index entry instead of adding
// one). DynamoDB handles both; the Put costs the same round trip.
func (s *Store) MarkInvitationSent(ctx context.Context, inv Invitation) (Invitation, error) {
	now := s.now()
	inv.State, inv.Sent, inv.Updated = InvitationSent, &now, now
	m, err := item(invitationKey(inv), inv)
	if err != nil {
		return Invitation{}, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     m,
		ConditionExpression:      aws.String("attribute_exists(PK) AND #st = :queued"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":queued": str(InvitationQueued),
		},
	})
	if ddb.IsConditionFailed(err) {
		return Invitation{}, ErrStateChanged
	}
	if err != nil {
		return Invitation{}, wrap("mark invitation sent", err)
	}
	return inv, nil
}

// RequeueInvitation puts an unanswered invitation back in state queued, to
// be sent again (ErrStateChanged once answered), and writes its outbox
// marker m in the same transaction. It stays in the invitee's inbox if it
// was delivered before. inv is the invitation as read; the result is inv
// as requeued.
func (s *Store) RequeueInvitation(ctx context.Context, inv Invitation, m *OutboxMarker) (Invitation, error) {
	now := s.now()
	mput, err := s.outboxPut(m, invitationOutboxPK(inv))
	if err != nil {
		return Invitation{}, err
	}
	err = s.transact(ctx, "requeue invitation", []types.TransactWriteItem{{Update: &types.Update{
		TableName:                aws.String(s.table),
		Key:                      key(invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID)),
		UpdateExpression:         aws.String("SET #st = :queued, updated = :now"),
		ConditionExpression:      aws.String("attribute_exists(PK) AND (#st = :queued OR #st = :sent)"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":sent": str(InvitationSent), ":queued": str(InvitationQueued), ":now": str(now.Format(timeLayout)),
		},
	}}, mput})
	if txConditionFailedAt(err, 0) {
		return Invitation{}, ErrStateChanged
	}
	if err != nil {
		return Invitation{}, err
	}
	inv.State, inv.Updated = InvitationQueued, now
	return inv, nil
}

// DeclineInvitation records the invitee's refusal of an unanswered
// invitation (ErrStateChanged once answered).
func (s *Store) DeclineInvitation(ctx context.Context, ref InvitationRef) (Invitation, error) {
	return s.updateInvitation(ctx, "decline invitation", ref, &dynamodb.UpdateItemInput{
		UpdateExpression:    aws.String("SET #st = :declined, updated = :now"),
		ConditionExpression: aws.String("attribute_exists(PK) AND (#st = :queued OR #st = :sent)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":sent": str(InvitationSent), ":queued": str(InvitationQueued), ":declined": str(InvitationDeclined),
			":now": str(s.now().Format(timeLayout)),
		},
	})
}

// AcceptInvitation records principal's acceptance and writes its grant in
// one transaction: the grant exists exactly when the invitation says
// accepted. ErrStateChanged when the invitation was answered or revoked
// meanwhile, ErrAlreadyHeld when principal holds the role or group already,
// ErrNotFound when the role or group no longer exists.
func (s *Store) AcceptInvitation(ctx context.Context, inv Invitation, principal string) (Invitation, error) {
	now := s.now()
	g := inv.Grant(principal, now)
	gput, err := s.put(grantKey(g), g)
	if err != nil {
		return Invitation{}, err
	}
	ts := now.Format(timeLayout)
	tx := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                aws.String(s.table),
			Key:                      key(invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID)),
			UpdateExpression:         aws.String("SET #st = :accepted, accepted = :now, updated = :now, principal = :p"),
			ConditionExpression:      aws.String("attribute_exists(PK) AND (#st = :queued OR #st = :sent)"),
			ExpressionAttributeNames: map[string]string{"#st": "state"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":accepted": str(InvitationAccepted), ":queued": str(InvitationQueued), ":sent": str(InvitationSent),
				":now": str(ts), ":p": str(principal),
			},
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
			switch r.Index {
			case 0:
				return Invitation{}, ErrStateChanged
			case 1:
				return Invitation{}, ErrAlreadyHeld
			default:
				return Invitation{}, ErrNotFound
			}
		}
	}
	if err != nil {
		return Invitation{}, err
	}
	inv.State, inv.Accepted, inv.Updated, inv.Principal = InvitationAccepted, &now, now, principal
	return inv, nil
}

// DeleteInvitation revokes an invitation: it is deleted and, if it was
// accepted, the grant it made goes in the same transaction, so the access
// it gave ends with the very next request. It deletes only the invitation
// as read (ErrStateChanged if it was answered meanwhile: read and retry).
func (s *Store) DeleteInvitation(ctx context.Context, inv Invitation) error {
	tx := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName:                aws.String(s.table),
		Key:                      key(invitationsPK(inv.AccountID), invitationSK(inv.Kind, inv.ID)),
		ConditionExpression:      aws.String("attribute_exists(PK) AND #st = :st"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":st": str(inv.State),
		},
	}}}
	if inv.State == InvitationAccepted && inv.Principal != "" {
		// Only the grant this invitation made: one made by another
		// invitation to the same role stays.
		tx = append(tx, types.TransactWriteItem{Delete: &types.Delete{
			TableName:           aws.String(s.table),
			Key:                 grantItemKey(inv.Grant(inv.Principal, time.Time{})),
			ConditionExpression: aws.String("attribute_not_exists(PK) OR via = :via"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":via": str(inv.Ref().Href()),
			},
		}})
	}
	err := s.transact(ctx, "delete invitation", tx)
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code == ddb.ReasonConditionalCheckFailed && r.Index == 0 {
				return ErrStateChanged
			}
		}
		if len(tx) > 1 && txe.HasReason(ddb.ReasonConditionalCheckFailed) {
			// The principal holds the role through another invitation now
			// (it left this one's grant and accepted another): only the
			// invitation goes.
			inv.Principal = ""
			return s.DeleteInvitation(ctx, inv)
		}
	}
	return err
}
