package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/localaws"
	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/store"
)

// usageOf reads an account's usage count of kind as the account's
// deletion does (consistently); a missing item is 0.
func usageOf(t *testing.T, c *dynamodb.Client, table, account, kind string) int {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "ACCOUNT#" + account}, "SK": &types.AttributeValueMemberS{Value: "USAGE#" + kind}}})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := out.Item["n"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func metricProto(account, id string) domain.MetricPrototype {
	return domain.MetricPrototype{ID: id, Account: account, DefaultName: "m", Display: "number", Expression: "count()", LogType: "proxy-logs",
		DefaultFrequency: 60, Created: time.Now().UTC().Truncate(time.Millisecond)}
}

// The counts of sub-accounts, application tests and metric prototypes
// follow their creates and deletes (a refused create or a repeated delete
// changes nothing), and the account's deletion is refused while one is
// above zero.
func TestUsageCountsOfAccountDependants(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	usage := func(account, kind string) int { return usageOf(t, d.Client, d.Table, account, kind) }
	root := rootAccount(t, st)
	a1 := subAccount(root, "a1", "Acme")
	if err := st.Accounts.CreateSubAccount(ctx, a1, nil); err != nil {
		t.Fatal(err)
	}
	c1 := subAccount(a1, "c1", "Acme child")
	if err := st.Accounts.CreateSubAccount(ctx, c1, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Accounts.CreateSubAccount(ctx, subAccount(a1, "c2", "Acme child"), nil); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("a taken name: %v, want a conflict", err)
	}
	at := newAppTest(st, "a1", "t1", "b1", []byte("x"))
	if err := st.Tests.CreateAppTest(ctx, at, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Tests.CreateAppTest(ctx, newAppTest(st, "a1", "t1", "b2", []byte("y")), []byte("y"), nil); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("the same test id again: %v, want a conflict", err)
	}
	if err := st.Metrics.CreateMetricPrototype(ctx, metricProto("a1", "p1")); err != nil {
		t.Fatal(err)
	}
	if err := st.Metrics.CreateMetricPrototype(ctx, metricProto("a1", "p1")); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("the same prototype id again: %v, want a conflict", err)
	}
	for _, c := range []struct {
		account, kind string
		want          int
	}{{"root", "accounts", 1}, {"a1", "accounts", 1}, {"a1", "tests", 1}, {"a1", "metric_prototypes", 1}, {"c1", "accounts", 0}} {
		if got := usage(c.account, c.kind); got != c.want {
			t.Errorf("after the creates: %s's %s count is %d, want %d", c.account, c.kind, got, c.want)
		}
	}

	_, err := st.Accounts.DeleteAccount(ctx, "a1")
	if domain.ErrorCode(err) != domain.Conflict || !strings.Contains(err.Error(), "sub-accounts, application tests and metric prototypes") {
		t.Fatalf("delete a1 with dependants: %v, want a conflict naming them", err)
	}

	if _, err := st.Accounts.DeleteAccount(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Tests.DeleteAppTest(ctx, "a1", "t1"); err != nil {
		t.Fatal(err)
	}
	d.Counter.Reset()
	if _, err := st.Metrics.DeleteMetricPrototype(ctx, "a1", "p1"); err != nil {
		t.Fatal(err)
	}
	// The consistent read of the prototype (the answer), then the
	// transaction deleting it and counting it out.
	if n := d.Counter.Sequential(); n != 2 {
		t.Errorf("DeleteMetricPrototype: %d round trips, want 2", n)
	}
	if _, err := st.Accounts.DeleteAccount(ctx, "c1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("delete c1 again: %v, want ErrNotFound", err)
	}
	if _, err := st.Tests.DeleteAppTest(ctx, "a1", "t1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("delete t1 again: %v, want ErrNotFound", err)
	}
	if _, err := st.Metrics.DeleteMetricPrototype(ctx, "a1", "p1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("delete p1 again: %v, want ErrNotFound", err)
	}
	for _, kind := range []string{"accounts", "tests", "metric_prototypes"} {
		if got := usage("a1", kind); got != 0 {
			t.Errorf("after the deletes: a1's %s count is %d, want 0", kind, got)
		}
	}
	if _, err := st.Accounts.DeleteAccount(ctx, "a1"); err != nil {
		t.Fatalf("delete the emptied a1: %v", err)
	}
	if got := usage("root", "accounts"); got != 0 {
		t.Errorf("root's sub-account count is %d after a1's deletion, want 0", got)
	}
	if err := st.Tests.CreateAppTest(ctx, newAppTest(st, "a1", "t2", "b3", []byte("x")), []byte("x"), nil); domain.ErrorCode(err) != domain.Conflict {
		t.Errorf("a test in the deleted account: %v, want a conflict", err)
	}
}

// Right after a sub-account, an application test or a metric prototype is
// created, its account's deletion is refused, though GSI1 (up to 1 s
// behind here) does not show it yet: the usage counts, read consistently,
// do.
func TestAccountDeleteRefusedRightAfterACreate(t *testing.T) {
	ctx := context.Background()
	d, err := localaws.StartRealisticDynamo(ctx, "127.0.0.1:0", nil, localaws.Realism{Seed: 26, ReadLag: time.Second, IndexLag: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	c, err := localaws.DynamoClient(ctx, d.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	const table = "cads-leftovers"
	for _, tb := range testenv.Template(t).Tables {
		if err := localaws.EnsureTable(ctx, c, table, tb); err != nil {
			t.Fatal(err)
		}
	}
	st := store.New(c, table)
	root := rootAccount(t, st)
	indexShows := func(gsi1pk string) bool {
		out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String(store.IndexGSI1),
			KeyConditionExpression:    aws.String("GSI1PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: gsi1pk}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Items) > 0
	}
	kinds := []struct {
		name   string
		gsi1pk string
		create func(a domain.AccountRecord) error
	}{
		{"sub-accounts", "CHILDREN#", func(a domain.AccountRecord) error {
			return st.Accounts.CreateSubAccount(ctx, subAccount(a, a.ID+"c", a.Name+" child"), nil)
		}},
		{"application tests", "APPTESTS#", func(a domain.AccountRecord) error {
			return st.Tests.CreateAppTest(ctx, newAppTest(st, a.ID, "t", "b", []byte("x")), []byte("x"), nil)
		}},
		{"metric prototypes", "METRICPROTOS#", func(a domain.AccountRecord) error {
			return st.Metrics.CreateMetricPrototype(ctx, metricProto(a.ID, a.ID+"p"))
		}},
	}
	lagged := 0
	for _, k := range kinds {
		for i := range 4 {
			a := subAccount(root, fmt.Sprintf("%s%d", strings.ReplaceAll(k.name, " ", ""), i), k.name+strconv.Itoa(i))
			if err := st.Accounts.CreateSubAccount(ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			if err := k.create(a); err != nil {
				t.Fatal(err)
			}
			if !indexShows(k.gsi1pk + a.ID) {
				lagged++
			}
			_, err := st.Accounts.DeleteAccount(ctx, a.ID)
			if domain.ErrorCode(err) != domain.Conflict || !strings.Contains(err.Error(), "still has "+k.name) {
				t.Errorf("delete %s right after creating one of its %s: %v, want a conflict naming them", a.ID, k.name, err)
			}
			// Refused by the leftovers read, before access was revoked:
			// the account is unmarked again (the delete transaction's own
			// checks would refuse later and leave it marked).
			if got, err := st.Accounts.GetAccountRecord(ctx, a.ID); err != nil || got.Deleting != nil {
				t.Errorf("%s after the refused delete: deleting %v, %v; want unmarked", a.ID, got.Deleting, err)
			}
		}
	}
	// Without writes the index had not shown yet, this test proves nothing.
	if lagged == 0 {
		t.Fatal("GSI1 showed every dependant at once: no lag was exercised")
	}
	t.Logf("%d of %d dependants were not in GSI1 yet when their account's deletion ran", lagged, 4*len(kinds))
}
