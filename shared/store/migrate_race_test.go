package store

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/localaws"
	"cads/infra/sam"
	"cads/shared/ddb"
	"cads/shared/domain"
	"cads/shared/names"
)

// rawStore is a Store over the template's table on an embedded server
// (this package's own tests cannot use infra/testenv, which imports it).
func rawStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	endpoint, stop, err := localaws.StartDynamo(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	c, err := localaws.DynamoClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := sam.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := localaws.EnsureTable(ctx, c, "t", tpl.Tables["Table"]); err != nil {
		t.Fatal(err)
	}
	return New(c, "t")
}

func (s *Table) raw(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := s.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// The migration's writes lose to any write the current code made after
// the migration read the item: keys are set only on the item as read, a
// deleted item is not brought back, and a claim is not written for an
// alias the application dropped meanwhile.
func TestMigrationNeverOverwritesANewerWrite(t *testing.T) {
	s := rawStore(t)
	ctx := context.Background()
	now := s.Now()
	if err := s.Accounts.CreateAccount(ctx, domain.Account{ID: "a1", Name: "A1", Keyword: "a1", Created: now, Updated: now}, nil); err != nil {
		t.Fatal(err)
	}
	r := domain.Role{AccountID: "a1", ID: "r1", Name: "r", Version: 1, Created: now, Updated: now}
	if err := s.Roles.CreateRole(ctx, r); err != nil {
		t.Fatal(err)
	}
	// As older code left it, and as the migration read it.
	stale := s.raw(t, rbacPK("a1"), roleSK("r1"))
	delete(stale, AttrGSI2PK)
	delete(stale, AttrGSI2SK)
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: stale}); err != nil {
		t.Fatal(err)
	}
	// The API's write in between: a newer version, with its keys.
	r.Description, r.Version = "newer", 2
	if err := s.Roles.PutRole(ctx, r); err != nil {
		t.Fatal(err)
	}
	newer := s.raw(t, rbacPK("a1"), roleSK("r1"))
	if _, err := s.Installation.fixKeys(ctx, stale, roleKey(r)); !errors.Is(err, ddb.ErrConditionFailed) {
		t.Fatalf("keys set on a role changed since read: %v", err)
	}
	if got := s.raw(t, rbacPK("a1"), roleSK("r1")); !reflect.DeepEqual(got, newer) {
		t.Errorf("the newer write was changed:\n%v\n%v", got, newer)
	}
	// Deleted meanwhile: not written back.
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key(rbacPK("a1"), roleSK("r1"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Installation.fixKeys(ctx, stale, roleKey(r)); !errors.Is(err, ddb.ErrConditionFailed) || s.raw(t, rbacPK("a1"), roleSK("r1")) != nil {
		t.Fatalf("a deleted role came back: %v", err)
	}

	// An application read with an alias whose claim is missing, which the
	// API then drops (a configuration change: a new version).
	a := domain.Application{ID: "p1", Account: "a1", State: domain.AppStopped, Config: "{}", Aliases: []string{"old.example.com"}, Version: 1, Created: now, Updated: now}
	if err := s.Applications.CreateApplication(ctx, a, domain.Quota{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key(aliasPK("old.example.com"), skAlias)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key(appPK("p1"), skApp),
		UpdateExpression:          aws.String("SET version = :v, aliases = :none"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(2), ":none": &types.AttributeValueMemberL{}}}); err != nil {
		t.Fatal(err)
	}
	n, skipped, _, err := s.Installation.fixClaims(ctx, a)
	if err != nil || n != 0 || skipped != 1 || s.raw(t, aliasPK("old.example.com"), skAlias) != nil {
		t.Fatalf("claim of a dropped alias: %d written, %d skipped, %v", n, skipped, err)
	}
	// Still on the application: claimed.
	a.Version = 2
	if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key(appPK("p1"), skApp),
		UpdateExpression:          aws.String("SET aliases = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberL{Value: []types.AttributeValue{avStr("old.example.com")}}}}); err != nil {
		t.Fatal(err)
	}
	if n, _, _, err := s.Installation.fixClaims(ctx, a); err != nil || n != 1 || s.raw(t, aliasPK("old.example.com"), skAlias) == nil {
		t.Fatalf("claim of a current alias: %d written, %v", n, err)
	}
}

// An item whose attributes give another key than its own is left alone:
// keys computed from them would belong to another item.
func TestMigrationLeavesAnItemNamingAnotherKey(t *testing.T) {
	s := rawStore(t)
	ctx := context.Background()
	odd := map[string]types.AttributeValue{AttrPK: avStr(rbacPK("a1")), AttrSK: avStr(roleSK("r1")), "entity": avStr("role"),
		"id": avStr("r2"), "account": avStr("a1"), "name": avStr("r"), "version": avNum(1)}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: odd}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Installation.MigratePage(ctx, "", "", 10, names.KeyAndSkeleton)
	if err != nil || len(p.Odd) != 1 || len(p.Fixed) != 0 {
		t.Fatalf("page: %+v %v", p, err)
	}
	if got := s.raw(t, rbacPK("a1"), roleSK("r1")); !reflect.DeepEqual(got, odd) {
		t.Errorf("the item was changed: %v", got)
	}
}
