package accounts_test

import (
	"testing"

	"cads/infra/fuzzkit"
	"cads/shared/wire/accountswire"
)

// FuzzAccounts sends fuzzed queries and bodies to every accounts route,
// on a child account and an entitlement that exist.
//
//	go test -run '^$' -fuzz '^FuzzAccounts$' -fuzztime 20s ./shared/accounts
func FuzzAccounts(f *testing.F) {
	e := fuzzkit.New(f, accountswire.Handler)
	const js = "application/json"
	child := e.Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/accounts", ContentType: js}, `{"name": "fuzz child"}`)
	ent := e.Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/accounts/{id}/entitlements", Params: map[string]string{"id": child}, ContentType: js},
		`{"resource": "applications", "quantity": 10, "unit_price": 25}`)
	acct := map[string]string{"id": child}
	entP := map[string]string{"id": child, "entitlement_id": ent}
	e.Fuzz(f, []fuzzkit.Route{
		{Method: "POST", Resource: "/v2/accounts", ContentType: js},
		{Method: "PATCH", Resource: "/v2/accounts/{id}", Params: acct, ContentType: "application/json-patch+json"},
		{Method: "PATCH", Resource: "/v2/accounts/{id}", Params: acct, ContentType: js},
		{Method: "POST", Resource: "/v2/accounts/{id}/entitlements", Params: acct, ContentType: js},
		{Method: "PATCH", Resource: "/v2/accounts/{id}/entitlements/{entitlement_id}", Params: entP, ContentType: "application/json-patch+json"},
		{Method: "GET", Resource: "/v2/accounts"},
		{Method: "GET", Resource: "/v2/accounts/{id}/entitlements", Params: acct},
		{Method: "GET", Resource: "/v2/accounts/{id}/billing", Params: acct},
	})
}
