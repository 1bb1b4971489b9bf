package store

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

func (s *Principals) principalWrites(p domain.Principal) []keyAttrsValue {
	k := keyAttrs{PK: principalPK(p.ID), SK: skPrincipal, Entity: "principal"}
	if p.Kind == domain.KindUser {
		k.GSI1PK, k.GSI1SK = gsiUsers, usersGSISKPrefix+createdPosition(p.Created, p.ID)
	}
	return []keyAttrsValue{
		{k, p},
		{keyAttrs{PK: emailPK(p.Email), SK: skEmail, Entity: "email"}, struct {
			Principal string `dynamodbav:"principal"`
		}{p.ID}},
	}
}

// CreatePrincipal writes a principal and reserves its email in one
// transaction; a taken email is a *domain.Error.
func (s *Principals) CreatePrincipal(ctx context.Context, p domain.Principal) error {
	items, err := s.puts(s.principalWrites(p))
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create principal", items)
	if errors.Is(err, ddb.ErrConditionFailed) {
		return domain.EmailTaken(p.Email)
	}
	return err
}

// GetPrincipal reads a user or service user.
func (s *Principals) GetPrincipal(ctx context.Context, id string) (domain.Principal, error) {
	var p domain.Principal
	err := s.getItem(ctx, "get principal", principalPK(id), skPrincipal, &p)
	return p, err
}

// usersGSISKPrefix starts the GSI1 sort key of a user in the USERS
// partition, which holds them in creation order (page.go).
const usersGSISKPrefix = "USER#"

var usersPage = collection{op: "list users", index: IndexGSI1, pk: gsiUsers, skPrefix: usersGSISKPrefix,
	tableKey: func(pos string) (string, string) { return principalPK(idOf(pos)), skPrincipal }}

// PageUsers reads at most n users after position after in creation order
// (desc: newest first), with their positions and whether more may follow:
// one Query of n items, whatever the number of users.
func (s *Principals) PageUsers(ctx context.Context, after string, desc bool, n int) ([]domain.Principal, []string, bool, error) {
	return pageOf[domain.Principal](ctx, s.Table, usersPage, after, desc, n)
}

// UpdatePrincipal sets a principal's display name and phone number. With
// versions (a request's If-Match) only a principal at one of them
// changes: any other state, missing included, is domain.ErrChanged.
func (s *Principals) UpdatePrincipal(ctx context.Context, id string, c PrincipalChange, versions ...int) (domain.Principal, error) {
	// A service user's changes go through UpdateServiceUser; USERS names
	// this one's collection when it is a user (the list checks).
	ctx = withLists(ctx, principalPK(id), skPrincipal, gsiUsers)
	set := []string{"updated = :u", bumpVersion}
	var remove []string
	names := map[string]string{}
	cond, vals := atVersions("attribute_exists(PK)", withBump(map[string]types.AttributeValue{":u": avStr(s.now().Format(timeLayout))}), versions)
	if c.Name != nil {
		set = append(set, "#n = :n")
		names["#n"] = "name"
		vals[":n"] = avStr(*c.Name)
	}
	if c.Phone != nil {
		names["#ph"] = "phone"
		if *c.Phone == "" {
			remove = append(remove, "#ph")
		} else {
			set = append(set, "#ph = :p")
			vals[":p"] = avStr(*c.Phone)
		}
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(principalPK(id), skPrincipal),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	}
	if len(names) > 0 {
		in.ExpressionAttributeNames = names
	}
	res, err := s.db.UpdateItem(ctx, in)
	if ddb.IsConditionFailed(err) && len(versions) > 0 {
		return domain.Principal{}, domain.ErrChanged
	}
	if ddb.IsConditionFailed(err) {
		return domain.Principal{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Principal{}, wrap("update principal", err)
	}
	var p domain.Principal
	return p, attributevalue.UnmarshalMap(res.Attributes, &p)
}

// PrincipalChange is what UpdatePrincipal sets: the fields that are not
// nil; an empty Phone removes it.
type PrincipalChange struct {
	Name, Phone *string
}

// timeLayout is a fixed-width RFC 3339 form (UTC, milliseconds) for times
// written by update expressions: fixed width keeps string comparison in
// conditions equal to time order, which RFC3339Nano's trimmed zeros break.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func (s *Table) puts(kvs []keyAttrsValue) ([]types.TransactWriteItem, error) {
	out := make([]types.TransactWriteItem, 0, len(kvs))
	for _, kv := range kvs {
		p, err := s.put(kv.k, kv.v)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
