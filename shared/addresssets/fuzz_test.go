package addresssets_test

import (
	"testing"

	"cads/infra/fuzzkit"
	"cads/shared/wire/addresssetswire"
)

// FuzzAddressSets sends fuzzed queries and bodies to the address-sets
// routes, on a manual set that exists ({{set}} in seeds).
//
//	go test -run '^$' -fuzz '^FuzzAddressSets$' -fuzztime 20s ./shared/addresssets
func FuzzAddressSets(f *testing.F) {
	e := fuzzkit.New(f, addresssetswire.Handler)
	const js = "application/json"
	set := e.Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/address-sets", ContentType: js},
		`{"name": "fuzz exits", "type": "manual", "entries": [{"address": "192.0.2.0/24", "description": "HQ"}]}`)
	e.Vars["set"] = set
	s := map[string]string{"id": set}
	e.Fuzz(f, []fuzzkit.Route{
		{Method: "POST", Resource: "/v2/address-sets", ContentType: js},
		{Method: "PATCH", Resource: "/v2/address-sets/{id}", Params: s, ContentType: "application/json-patch+json"},
		{Method: "PATCH", Resource: "/v2/address-sets/{id}", Params: s, ContentType: "application/merge-patch+json"},
		{Method: "GET", Resource: "/v2/address-sets"},
		{Method: "GET", Resource: "/v2/address-sets/{id}/addresses", Params: s},
	})
}
