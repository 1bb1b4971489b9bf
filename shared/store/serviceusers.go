package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

// ServiceUser is a principal of kind service_user: it belongs to one
// account and authenticates with access keys like a user. It is stored as
// the principal item (the authorizer reads it as a Principal) with a
// description and an entry in its account's GSI1 listing.
type ServiceUser struct {
	ID          string    `dynamodbav:"id"`
	Kind        string    `dynamodbav:"kind"`
	Email       string    `dynamodbav:"email"`
	Name        string    `dynamodbav:"name,omitempty"`
	Description string    `dynamodbav:"description,omitempty"`
	Account     string    `dynamodbav:"account"`
	Created     time.Time `dynamodbav:"created"`
	Updated     time.Time `dynamodbav:"updated"`
}

func serviceUsersGSI(acct string) string { return "SERVICEUSERS#" + acct }

// ServiceUserEmail is the generated address of a service user: it is how
// invitations name it, and the .invalid top-level domain (RFC 2606) makes
// sure no mail can ever go to it.
func ServiceUserEmail(account, id string) string {
	return id + "@service-users." + account + ".invalid"
}

// ParseServiceUserEmail is ServiceUserEmail's inverse; ok is false for any
// other address.
func ParseServiceUserEmail(email string) (account, id string, ok bool) {
	local, domain, found := strings.Cut(strings.ToLower(email), "@")
	if !found {
		return "", "", false
	}
	rest, ok1 := strings.CutPrefix(domain, "service-users.")
	acct, ok2 := strings.CutSuffix(rest, ".invalid")
	if !ok1 || !ok2 || acct == "" || local == "" || strings.Contains(acct, ".") {
		return "", "", false
	}
	return acct, local, true
}

func (s *Store) serviceUserWrites(u ServiceUser) []keyAttrsValue {
	return []keyAttrsValue{
		{keyAttrs{PK: principalPK(u.ID), SK: skPrincipal, GSI1PK: serviceUsersGSI(u.Account), GSI1SK: prefixServiceUserG + createdPosition(u.Created, u.ID), Entity: "principal"}, u},
		{keyAttrs{PK: emailPK(u.Email), SK: skEmail, Entity: "email"}, struct {
			Principal string `dynamodbav:"principal"`
		}{u.ID}},
	}
}

// CreateServiceUser writes a service user, its email reservation and its
// first access key in one transaction; its account must exist
// (ErrNotFound).
func (s *Store) CreateServiceUser(ctx context.Context, u ServiceUser, k AccessKey) error {
	kvs := append(s.serviceUserWrites(u), keyAttrsValue{accessKeyKey(k), k})
	items, err := s.puts(kvs)
	if err != nil {
		return err
	}
	items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(u.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}})
	err = s.transact(ctx, "create service user", items)
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code == ddb.ReasonConditionalCheckFailed && r.Index == len(items)-1 {
				return ErrNotFound
			}
		}
		if txe.HasReason(ddb.ReasonConditionalCheckFailed) {
			return &ConflictError{Msg: "a principal with id " + u.ID + " or email " + u.Email + " already exists"}
		}
	}
	return err
}

// GetServiceUser reads a service user of an account; a user, or a service
// user of another account, is ErrNotFound.
func (s *Store) GetServiceUser(ctx context.Context, account, id string) (ServiceUser, error) {
	var u ServiceUser
	if err := s.getItem(ctx, "get service user", principalPK(id), skPrincipal, &u); err != nil {
		return u, err
	}
	if u.Kind != KindServiceUser || u.Account != account {
		return ServiceUser{}, ErrNotFound
	}
	return u, nil
}

// UpdateServiceUser sets the name and description of a service user of an
// account (nil leaves a field as it is; "" empties it).
func (s *Store) UpdateServiceUser(ctx context.Context, account, id string, name, description *string) (ServiceUser, error) {
	set := []string{"updated = :u"}
	names := map[string]string{"#acct": "account", "#kind": "kind"}
	vals := map[string]types.AttributeValue{
		":u": str(s.now().Format(timeLayout)), ":acct": str(account), ":kind": str(KindServiceUser),
	}
	for _, f := range []struct {
		attr string
		v    *string
	}{{"name", name}, {"description", description}} {
		if f.v != nil {
			names["#"+f.attr] = f.attr
			vals[":"+f.attr] = str(*f.v)
			set = append(set, "#"+f.attr+" = :"+f.attr)
		}
	}
	expr := "SET " + strings.Join(set, ", ")
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(principalPK(id), skPrincipal),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("attribute_exists(PK) AND #kind = :kind AND #acct = :acct"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if ddb.IsConditionFailed(err) {
		return ServiceUser{}, ErrNotFound
	}
	if err != nil {
		return ServiceUser{}, wrap("update service user", err)
	}
	var u ServiceUser
	return u, attributevalue.UnmarshalMap(res.Attributes, &u)
}

// DeleteServiceUser deletes a service user of an account. The principal
// item and the email reservation go in one transaction: from then on none
// of its keys authenticates (the authorizer needs the principal item), so
// its access ends at once. Its keys and grants (its partition) and the
// invitations addressed to it go in the same transaction when they fit,
// otherwise right after (see commit).
func (s *Store) DeleteServiceUser(ctx context.Context, account, id string) (ServiceUser, error) {
	// The email follows from the ids, so the invitations addressed to the
	// service user are read in parallel with it.
	var (
		u           ServiceUser
		part, inbox []map[string]types.AttributeValue
		errs        [3]error
		wg          sync.WaitGroup
	)
	wg.Add(3)
	go func() { defer wg.Done(); u, errs[0] = s.GetServiceUser(ctx, account, id) }()
	go func() {
		defer wg.Done()
		part, errs[1] = s.query(ctx, "query service user partition", &dynamodb.QueryInput{
			KeyConditionExpression: aws.String("PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(principalPK(id)),
			},
			ProjectionExpression: aws.String("PK, SK"),
		}, 0)
	}()
	go func() {
		defer wg.Done()
		inbox, errs[2] = s.gsiKeys(ctx, "query service user invitations", inviteeGSI(ServiceUserEmail(account, id)))
	}()
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return ServiceUser{}, err
	}
	must := []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName:                aws.String(s.table),
			Key:                      key(principalPK(id), skPrincipal),
			ConditionExpression:      aws.String("attribute_exists(PK) AND #kind = :kind AND #acct = :acct"),
			ExpressionAttributeNames: map[string]string{"#acct": "account", "#kind": "kind"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":acct": str(account), ":kind": str(KindServiceUser),
			},
		}},
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(emailPK(u.Email), skEmail)}},
	}
	var cleanup []map[string]types.AttributeValue
	for _, it := range part {
		cleanup = append(cleanup, map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]})
	}
	cleanup = append(cleanup, inbox...)
	err := s.commit(ctx, "delete service user", must, cleanup)
	if errors.Is(err, ddb.ErrConditionFailed) {
		return ServiceUser{}, ErrNotFound
	}
	return u, err
}
