package applications_test

import (
	"testing"

	"cads/infra/fuzzkit"
	"cads/shared/wire/applicationswire"
)

// FuzzApplications sends fuzzed queries and bodies to the applications
// function's routes, on an application and an action that exist.
//
//	go test -run '^$' -fuzz '^FuzzApplications$' -fuzztime 20s ./shared/applications
func FuzzApplications(f *testing.F) {
	e := fuzzkit.New(f, applicationswire.Handler)
	const js, jp = "application/json", "application/json-patch+json"
	app := e.Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/applications", ContentType: js}, `{"name": "Fuzz shop", "aliases": ["fuzz.example.com"]}`)
	e.Vars["app"] = app
	a := map[string]string{"id": app}
	routes := []fuzzkit.Route{
		{Method: "POST", Resource: "/v2/applications", ContentType: js},
		{Method: "PATCH", Resource: "/v2/applications/{id}", Params: a, ContentType: jp},
		{Method: "POST", Resource: "/v2/applications/{id}/actions", Params: a, ContentType: js},
		{Method: "POST", Resource: "/v2/applications/{id}/pagecontrols", Params: a, ContentType: js},
		{Method: "GET", Resource: "/v2/applications"},
		{Method: "GET", Resource: "/v2/applications/{id}/actions", Params: a},
		{Method: "GET", Resource: "/v2/applications/{id}/pagecontrols", Params: a},
	}
	e.Fuzz(f, routes)
}
