package store_test

import (
	"context"
	"fmt"
	"slices"
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

// The flows of issue 26 against the embedded DynamoDB in its realistic
// mode, where an index and an eventually consistent read see a write up to
// 1 s after it (a random delay per write, seeded): each list right after
// the write must show it. Conflicts and throttles are off here: what is
// tested is visibility, not the retry path.
func TestListFlowsUnderRealisticLag(t *testing.T) {
	const seed = 26
	cfg := localaws.Realism{Seed: seed, ReadLag: time.Second, IndexLag: time.Second}
	ctx := context.Background()
	d, err := localaws.StartRealisticDynamo(ctx, "127.0.0.1:0", nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	c, err := localaws.DynamoClient(ctx, d.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	const table = "cads-realistic"
	for _, tb := range testenv.Template(t).Tables {
		if err := localaws.EnsureTable(ctx, c, table, tb); err != nil {
			t.Fatal(err)
		}
	}
	st := store.New(c, table)
	// lagged counts the flows whose write the index did not show yet when
	// the list ran: the test means something only if some did.
	lagged := 0
	indexHas := func(ix, pk, sk string) bool {
		pkName, _ := gsiNames(ix)
		out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String(ix),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": pkName},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if str(it, "SK") == sk {
				return true
			}
		}
		return false
	}
	roleNames := func(acct string) []string {
		var names []string
		after := ""
		for {
			rs, pos, more, err := st.Roles.PageRoles(ctx, acct, after, false, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				names = append(names, r.ID+":"+r.Name)
			}
			if !more || len(pos) == 0 {
				return names
			}
			after = pos[len(pos)-1]
		}
	}
	for i := range 5 {
		acct := fmt.Sprintf("sub%d", i)
		now := st.Now()
		roles := []domain.Role{
			{AccountID: acct, ID: "admin", Name: "admin", Version: 1, Created: now, Updated: now},
			{AccountID: acct, ID: "viewer", Name: "viewer", Version: 1, Created: now, Updated: now},
			{AccountID: acct, ID: "editor", Name: "editor", Version: 1, Created: now, Updated: now},
		}
		// A sub-account, then its roles.
		if err := st.Accounts.CreateAccount(ctx, domain.Account{ID: acct, Name: "account " + acct, Ancestors: []string{}, Created: now}, roles); err != nil {
			t.Fatal(err)
		}
		if !indexHas(store.IndexGSI2, "ROLES#"+acct, "ROLE#admin") {
			lagged++
		}
		if got, want := roleNames(acct), []string{"admin:admin", "editor:editor", "viewer:viewer"}; !slices.Equal(got, want) {
			t.Errorf("%s: roles right after the account's create: %v, want %v", acct, got, want)
		}
		// A role changed, then the list.
		r := roles[1]
		r.Name, r.Version, r.Updated = "renamed", 2, st.Now()
		if err := st.Roles.PutRole(ctx, r); err != nil {
			t.Fatal(err)
		}
		if got, want := roleNames(acct), []string{"admin:admin", "editor:editor", "viewer:renamed"}; !slices.Equal(got, want) {
			t.Errorf("%s: roles right after a rename: %v, want %v", acct, got, want)
		}
		// A role deleted, then the list. DeleteRole finds the role with an
		// eventually consistent read of its own (not a list; another part
		// of the issue), so it is given the read lag to find it.
		time.Sleep(cfg.ReadLag)
		if _, err := st.Roles.DeleteRole(ctx, acct, "editor"); err != nil {
			t.Fatal(err)
		}
		if got, want := roleNames(acct), []string{"admin:admin", "viewer:renamed"}; !slices.Equal(got, want) {
			t.Errorf("%s: roles right after a delete: %v, want %v", acct, got, want)
		}
		// An address set created with entries, then its addresses.
		set := fmt.Sprintf("set%d", i)
		nets := []string{"10.0.0.0/8", "192.168.1.0/24", "8.8.8.8/32"}
		w := store.AddressSetWrite{Create: true, Set: domain.AddressSet{ID: set, Account: acct, Name: set, Type: "manual", Version: 1,
			EntryCount: len(nets), Created: now, Updated: now}}
		for _, n := range nets {
			w.PutEntries = append(w.PutEntries, domain.AddressEntry{Set: set, Prefix: n, Address: n, Created: now})
		}
		if err := st.AddressSets.WriteAddressSet(ctx, w); err != nil {
			t.Fatal(err)
		}
		if !indexHas(store.IndexGSI2, "ADDRENTRIES#"+set, "ENTRY#10.0.0.0/8") {
			lagged++
		}
		es, _, _, err := st.AddressSets.PageAddressEntries(ctx, set, "", false, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Prefix)
		}
		if want := []string{"8.8.8.8/32", "10.0.0.0/8", "192.168.1.0/24"}; !slices.Equal(got, want) {
			t.Errorf("%s: addresses right after the create: %v, want %v", set, got, want)
		}
		// The set deleted, then the account's leftovers: GSI1 may still
		// show the set, and the account must not seem to keep it.
		a, err := st.AddressSets.GetAddressSetItem(ctx, acct, set)
		if err != nil {
			t.Fatalf("read %s: %v", set, err)
		}
		if err := st.AddressSets.DeleteAddressSet(ctx, a, nets, nil); err != nil {
			t.Fatal(err)
		}
		if indexHas(store.IndexGSI1, "ADDRSETS#"+acct, "ADDRSET") {
			lagged++
		}
		if l, err := st.Accounts.AccountLeftovers(ctx, acct); err != nil || l.AddressSets {
			t.Errorf("%s: leftovers right after its only address set's delete: %+v %v", acct, l, err)
		}
	}
	if lagged == 0 {
		t.Fatalf("the index showed every write at once (%s): nothing was tested", cfg)
	}
	t.Logf("%s: the index lagged behind %d of 15 writes when listed", cfg, lagged)
}
