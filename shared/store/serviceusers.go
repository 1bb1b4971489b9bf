package store

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

func serviceUsersGSI(acct string) string { return "SERVICEUSERS#" + acct }

func (s *Principals) serviceUserWrites(u domain.ServiceUser) []keyAttrsValue {
	return []keyAttrsValue{
		{keyAttrs{PK: principalPK(u.ID), SK: skPrincipal, GSI1PK: serviceUsersGSI(u.Account), GSI1SK: prefixServiceUserG + createdPosition(u.Created, u.ID), Entity: "principal"}, u},
		{keyAttrs{PK: emailPK(u.Email), SK: skEmail, Entity: "email"}, struct {
			Principal string `dynamodbav:"principal"`
		}{u.ID}},
	}
}

// CreateServiceUser writes a service user, its email reservation and its
// first access key in one transaction; its account must exist
// (domain.ErrNotFound) and have room in its service users quota
// (domain.QuotaReached), counted in the same transaction.
func (s *Principals) CreateServiceUser(ctx context.Context, u domain.ServiceUser, k domain.AccessKey) error {
	kvs := append(s.serviceUserWrites(u), keyAttrsValue{accessKeyKey(k), k})
	items, err := s.puts(kvs)
	if err != nil {
		return err
	}
	q, err := s.quotaOf(ctx, u.Account, domain.ResourceServiceUsers)
	if err != nil {
		return err
	}
	items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(u.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK)"),
	}}, s.usageOp(u.Account, q, 1))
	err = s.transact(ctx, "create service user", items)
	if qerr := quotaRefused(err, len(items)-1, u.Account, q); qerr != nil {
		return qerr
	}
	var txe *ddb.TxCanceledError
	if errors.As(err, &txe) {
		for _, r := range txe.Reasons {
			if r.Code == ddb.ReasonConditionalCheckFailed && r.Index == len(items)-2 {
				return domain.ErrNotFound
			}
		}
		if txe.HasReason(ddb.ReasonConditionalCheckFailed) {
			return domain.PrincipalTaken(u.ID, u.Email)
		}
	}
	return err
}

// GetServiceUser reads a service user of an account; a user, or a service
// user of another account, is domain.ErrNotFound.
func (s *Principals) GetServiceUser(ctx context.Context, account, id string) (domain.ServiceUser, error) {
	var u domain.ServiceUser
	if err := s.getItem(ctx, "get service user", principalPK(id), skPrincipal, &u); err != nil {
		return u, err
	}
	if u.Kind != domain.KindServiceUser || u.Account != account {
		return domain.ServiceUser{}, domain.ErrNotFound
	}
	return u, nil
}

// UpdateServiceUser sets the name and description of a service user of an
// account (nil leaves a field as it is; "" empties it). With versions (a
// request's If-Match) only a service user at one of them changes: any
// other state, missing included, is domain.ErrChanged.
func (s *Principals) UpdateServiceUser(ctx context.Context, account, id string, name, description *string, versions ...int) (domain.ServiceUser, error) {
	ctx = withLists(ctx, principalPK(id), skPrincipal, serviceUsersGSI(account))
	set := []string{"updated = :u", bumpVersion}
	names := map[string]string{"#acct": "account", "#kind": "kind"}
	cond, vals := atVersions("attribute_exists(PK) AND #kind = :kind AND #acct = :acct", withBump(map[string]types.AttributeValue{
		":u": avStr(s.now().Format(timeLayout)), ":acct": avStr(account), ":kind": avStr(domain.KindServiceUser),
	}), versions)
	for _, f := range []struct {
		attr string
		v    *string
	}{{"name", name}, {"description", description}} {
		if f.v != nil {
			names["#"+f.attr] = f.attr
			vals[":"+f.attr] = avStr(*f.v)
			set = append(set, "#"+f.attr+" = :"+f.attr)
		}
	}
	expr := "SET " + strings.Join(set, ", ")
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(principalPK(id), skPrincipal),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if ddb.IsConditionFailed(err) && len(versions) > 0 {
		return domain.ServiceUser{}, domain.ErrChanged
	}
	if ddb.IsConditionFailed(err) {
		return domain.ServiceUser{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.ServiceUser{}, wrap("update service user", err)
	}
	var u domain.ServiceUser
	return u, attributevalue.UnmarshalMap(res.Attributes, &u)
}

// DeleteServiceUser deletes a service user of an account. The principal
// item and the email reservation go in one transaction: from then on none
// of its keys authenticates (the authorizer needs the principal item), so
// its access ends at once. Its keys and grants (its partition) and the
// invitations addressed to it go in the same transaction when they fit,
// otherwise right after (see commit). pre, when given, judges the service
// user and its keys as read (a request's If-Match): the delete is then
// conditional on the version read, and a change since is domain.ErrChanged.
func (s *Principals) DeleteServiceUser(ctx context.Context, account, id string, pre ...func(domain.ServiceUser, []domain.AccessKey) error) (domain.ServiceUser, error) {
	ctx = withLists(ctx, principalPK(id), skPrincipal, serviceUsersGSI(account))
	// The email follows from the ids, so the invitations addressed to the
	// service user are read in parallel with it.
	var (
		u                   domain.ServiceUser
		part, inbox, recent []map[string]types.AttributeValue
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { u, err = s.GetServiceUser(gctx, account, id); return err })
	g.Go(func() (err error) {
		q := &dynamodb.QueryInput{
			KeyConditionExpression: aws.String("PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": avStr(principalPK(id)),
			},
			ProjectionExpression: aws.String("PK, SK"),
		}
		if len(pre) > 0 {
			q.ProjectionExpression = nil // the keys too, for pre
		}
		part, err = s.query(gctx, "query service user partition", q, 0)
		return err
	})
	g.Go(func() (err error) {
		inbox, err = s.gsiKeys(gctx, "query service user invitations", inviteeGSI(domain.ServiceUserEmail(account, id)))
		return err
	})
	// The index lags: an invitation sent a moment ago is named by the
	// inbox's journal (Read your writes) before GSI3 shows it.
	g.Go(func() (err error) {
		recent, err = s.recent(gctx, inviteeGSI(domain.ServiceUserEmail(account, id)))
		return err
	})
	if err := g.Wait(); err != nil {
		return domain.ServiceUser{}, err
	}
	var versions []int
	if len(pre) > 0 {
		var keyItems []map[string]types.AttributeValue
		for _, it := range part {
			if sk, ok := it[AttrSK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, prefixKey) {
				keyItems = append(keyItems, it)
			}
		}
		keys, err := unmarshalAll[domain.AccessKey](keyItems)
		if err != nil {
			return domain.ServiceUser{}, err
		}
		for _, check := range pre {
			if err := check(u, keys); err != nil {
				return domain.ServiceUser{}, err
			}
		}
		versions = []int{u.Version}
	}
	cond, vals := atVersions("attribute_exists(PK) AND #kind = :kind AND #acct = :acct", map[string]types.AttributeValue{
		":acct": avStr(account), ":kind": avStr(domain.KindServiceUser),
	}, versions)
	must := []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName:                 aws.String(s.table),
			Key:                       key(principalPK(id), skPrincipal),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  map[string]string{"#acct": "account", "#kind": "kind"},
			ExpressionAttributeValues: vals,
		}},
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(emailPK(u.Email), skEmail)}},
		s.usageOp(account, domain.Quota{Kind: domain.ResourceServiceUsers}, -1),
	}
	var cleanup []map[string]types.AttributeValue
	for _, it := range part {
		cleanup = append(cleanup, map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]})
	}
	invKeys := inbox
	for _, k := range recent {
		if !slices.ContainsFunc(inbox, func(it map[string]types.AttributeValue) bool { return keyString(it) == keyString(k) }) {
			invKeys = append(invKeys, k)
		}
	}
	if len(invKeys) > 0 {
		// The index and the journal may name an invitation revoked a
		// moment ago: only those that still exist are deleted and taken
		// off the invitation counts (one consistent read).
		found, err := ddb.BatchGetConsistent(ctx, s.db, s.table, invKeys, AttrPK, AttrSK)
		if err != nil {
			return domain.ServiceUser{}, wrap("read service user invitations", err)
		}
		invKeys = invKeys[:0]
		for _, it := range found {
			invKeys = append(invKeys, map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]})
		}
	}
	invTx, invRest, afterTx := s.repos.Invitations.invitationDeletes(account, invKeys, ddb.MaxTransactItems-len(must))
	must = append(must, invTx...)
	err := s.commit(ctx, "delete service user", must, append(cleanup, invRest...))
	switch {
	case txConditionFailedAt(err, 0) && len(pre) > 0:
		return domain.ServiceUser{}, domain.ErrChanged
	case txConditionFailedAt(err, 0):
		return domain.ServiceUser{}, domain.ErrNotFound
	case errors.Is(err, ddb.ErrConditionFailed):
		return domain.ServiceUser{}, domain.ChangedMeanwhile("one of the service user's invitations")
	case err == nil:
		err = afterTx(ctx)
	}
	return u, err
}
