package roles_test

import (
	"testing"

	"cads/infra/fuzzkit"
	"cads/shared/wire/roleswire"
)

// FuzzRoles sends fuzzed queries and bodies to the roles function's
// routes (roles, groups, invitations, service users and the user-side
// inboxes), on resources that exist in the root account.
//
//	go test -run '^$' -fuzz '^FuzzRoles$' -fuzztime 20s ./shared/roles
func FuzzRoles(f *testing.F) {
	e := fuzzkit.NewWithQueues(f, roleswire.Handler)
	const js, jp = "application/json", "application/json-patch+json"
	root := map[string]string{"id": "{{root}}"}
	in := func(res string) fuzzkit.Route {
		return fuzzkit.Route{Method: "POST", Resource: "/v2/accounts/{id}/" + res, Params: root, ContentType: js}
	}
	role := e.Create(f, in("roles"), `{"name": "Fuzz maintainer", "permissions": [{"method": "GET", "effect": "permit", "spec": ["/v2/applications/*"]}]}`)
	group := e.Create(f, in("groups"), `{"name": "Fuzzers", "roles": []}`)
	su := e.Create(f, in("service-users"), `{"name": "fuzz robot"}`)
	inv := e.Create(f, in("invitations"), `{"user_email": "fuzz@example.com", "role": "/v2/accounts/`+e.Boot.RootAccount+`/roles/`+role+`"}`)
	ginv := e.Create(f, in("group-invitations"), `{"user_email": "fuzz@example.com", "group": "/v2/accounts/`+e.Boot.RootAccount+`/groups/`+group+`"}`)
	with := func(k, v string) map[string]string { return map[string]string{"id": "{{root}}", k: v} }
	self := func(k, v string) map[string]string { return map[string]string{"id": e.Boot.Operator, k: v} }
	e.Fuzz(f, []fuzzkit.Route{
		in("roles"), in("groups"), in("service-users"), in("invitations"), in("group-invitations"),
		{Method: "PATCH", Resource: "/v2/accounts/{id}/roles/{role_id}", Params: with("role_id", role), ContentType: jp},
		{Method: "PATCH", Resource: "/v2/accounts/{id}/groups/{group_id}", Params: with("group_id", group), ContentType: jp},
		{Method: "PATCH", Resource: "/v2/accounts/{id}/service-users/{service_user_id}", Params: with("service_user_id", su), ContentType: jp},
		{Method: "PATCH", Resource: "/v2/accounts/{id}/invitations/{invitation_id}", Params: with("invitation_id", inv), ContentType: js},
		{Method: "PATCH", Resource: "/v2/accounts/{id}/group-invitations/{invitation_id}", Params: with("invitation_id", ginv), ContentType: js},
		{Method: "PATCH", Resource: "/v2/users/{id}/invitations/{invitation_id}", Params: self("invitation_id", inv), ContentType: js},
		{Method: "PATCH", Resource: "/v2/users/{id}/group-invitations/{invitation_id}", Params: self("invitation_id", ginv), ContentType: js},
		{Method: "GET", Resource: "/v2/accounts/{id}/roles", Params: root},
		{Method: "GET", Resource: "/v2/accounts/{id}/groups", Params: root},
		{Method: "GET", Resource: "/v2/accounts/{id}/invitations", Params: root},
		{Method: "GET", Resource: "/v2/accounts/{id}/service-users", Params: root},
		{Method: "GET", Resource: "/v2/users/{id}/roles", Params: map[string]string{"id": e.Boot.Operator}},
	})
}
