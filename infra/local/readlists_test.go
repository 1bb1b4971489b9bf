package local_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/infra/localaws"
)

// Lists right after writes, through the gateway, against the embedded
// DynamoDB in its realistic mode with global secondary indexes up to 1 s
// behind the table (seeded): a sub-account then its roles; an address set
// created with entries then its addresses; a role renamed, then deleted,
// then the list (in the operator's account). Base-table reads without ConsistentRead are not delayed
// here (ReadLag 0): what this test holds the lists to is the index's lag;
// the authorizer's and the other reads' own lag is another part of the
// work on read-your-writes.
func TestListsReadTheirWritesThroughTheGateway(t *testing.T) {
	cfg := localaws.Realism{Seed: 2601, IndexLag: time.Second}
	d, err := localaws.StartRealisticDynamo(context.Background(), "127.0.0.1:0", nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	p, _ := localtest.Start(t, func(o *local.Options) { o.DynamoEndpoint = d.Endpoint })
	do := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.Bootstrap.Secret)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, raw
	}
	names := func(path, field string) []string {
		t.Helper()
		st, raw := do("GET", path, "")
		var list []map[string]any
		if st != 200 || json.Unmarshal(raw, &list) != nil {
			t.Fatalf("GET %s: %d %s", path, st, raw)
		}
		var out []string
		for _, m := range list {
			out = append(out, m[field].(string))
		}
		slices.Sort(out)
		return out
	}
	for i := range 3 {
		st, raw := do("POST", "/v2/accounts", `{"name":"sub `+string(rune('a'+i))+`"}`)
		var acct struct{ ID, Href string }
		if st != 200 || json.Unmarshal(raw, &acct) != nil {
			t.Fatalf("create account: %d %s", st, raw)
		}
		roles := names(acct.Href+"/roles", "name")
		if len(roles) != 3 {
			t.Fatalf("roles right after the account's create: %v, want its 3 control roles", roles)
		}
		// Roles are the operator's to change in its own account.
		rootRoles := "/v2/accounts/" + p.Bootstrap.RootAccount + "/roles"
		before := names(rootRoles, "name")
		st, raw = do("POST", rootRoles, `{"name":"custom"}`)
		var role struct{ Href string }
		if st != 200 || json.Unmarshal(raw, &role) != nil {
			t.Fatalf("create role: %d %s", st, raw)
		}
		if got := names(rootRoles, "name"); !slices.Contains(got, "custom") || len(got) != len(before)+1 {
			t.Fatalf("roles right after a create: %v", got)
		}
		if st, raw := do("PATCH", role.Href, `{"name":"renamed"}`); st != 200 {
			t.Fatalf("rename role: %d %s", st, raw)
		}
		if got := names(rootRoles, "name"); !slices.Contains(got, "renamed") || slices.Contains(got, "custom") {
			t.Fatalf("roles right after a rename: %v", got)
		}
		if st, raw := do("DELETE", role.Href, ""); st != 200 {
			t.Fatalf("delete role: %d %s", st, raw)
		}
		if got := names(rootRoles, "name"); !slices.Equal(got, before) {
			t.Fatalf("roles right after a delete: %v", got)
		}

		st, raw = do("POST", "/v2/address-sets", `{"name":"set `+string(rune('a'+i))+`","type":"manual","entries":[{"address":"10.0.0.0/8"},{"address":"192.0.2.0/24"},{"address":"2001:db8::7"}]}`)
		var set struct{ Href string }
		if st != 200 || json.Unmarshal(raw, &set) != nil {
			t.Fatalf("create address set: %d %s", st, raw)
		}
		if got := names(set.Href+"/addresses", "address"); len(got) != 3 {
			t.Fatalf("addresses right after the set's create: %v, want 3", got)
		}
	}
}
