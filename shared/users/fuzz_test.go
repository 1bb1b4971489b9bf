package users_test

import (
	"testing"

	"cads/infra/fuzzkit"
	"cads/shared/wire/userswire"
)

// FuzzUsers sends fuzzed queries and bodies to the users function's
// routes, on the operator and on a user it created.
//
//	go test -run '^$' -fuzz '^FuzzUsers$' -fuzztime 20s ./shared/users
func FuzzUsers(f *testing.F) {
	e := fuzzkit.New(f, userswire.Handler)
	const js = "application/json"
	user := e.Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/users", ContentType: js}, `{"email": "fuzzed@example.com", "name": "Fuzzed"}`)
	op := map[string]string{"id": e.Boot.Operator}
	other := map[string]string{"id": user}
	e.Fuzz(f, []fuzzkit.Route{
		{Method: "POST", Resource: "/v2/users", ContentType: js},
		{Method: "PATCH", Resource: "/v2/users/{id}", Params: other, ContentType: "application/json-patch+json"},
		{Method: "PATCH", Resource: "/v2/users/{id}", Params: op, ContentType: js},
		{Method: "POST", Resource: "/v2/users/{id}/access-keys", Params: op, ContentType: js},
		{Method: "POST", Resource: "/v2/users/self/authorization", ContentType: js},
		{Method: "GET", Resource: "/v2/users/self/authorization"},
		{Method: "GET", Resource: "/v2/users"},
		{Method: "GET", Resource: "/v2/users/{id}/access-keys", Params: op},
	})
}
