package tests_test

import (
	"context"
	"testing"

	"cads/infra/fuzzkit"
	"cads/shared/apigw"
	"cads/shared/domain"
	"cads/shared/tests"
	"cads/shared/wire/testswire"
)

// multipartBoundary is the boundary of the multipart route; seeds for it
// are bodies framed with it.
const multipartBoundary = "fuzzboundary"

// FuzzTests sends fuzzed queries and bodies to the tests function's routes:
// PUT /v2/tests/{id} once per accepted media type and as multipart, and
// PATCH of a configuration that exists ({{test}} in seeds).
//
//	go test -run '^$' -fuzz '^FuzzTests$' -fuzztime 20s ./shared/tests
func FuzzTests(f *testing.F) {
	e := fuzzkit.NewWithQueues(f, testswire.Handler)
	// Uploads name an alias of the account's applications.
	now := e.Deps.Store.Now()
	if err := e.Deps.Store.Applications.CreateApplication(context.Background(), domain.Application{ID: "fuzzapp", Account: e.Principal.AccountID, State: domain.AppStopped,
		Config: `{"name":"fuzz","aliases":["shop.example.com"]}`, Aliases: []string{"shop.example.com"}, Version: 1, Created: now, Updated: now}, domain.Quota{}); err != nil {
		f.Fatal(err)
	}
	put := func(id, ct string) fuzzkit.Route {
		return fuzzkit.Route{Method: "PUT", Resource: "/v2/tests/{id}", Params: map[string]string{"id": id}, ContentType: ct}
	}
	e.Do(f, put("fuzzexisting", tests.TypeJSON), "", []byte(`{"probabilities": 1, "models": {"home": {"type": "user.StaticSession", "requests": [{"name": "home", "method": "GET", "url": "http://shop.example.com/"}]}}}`))
	e.Vars["test"] = "fuzzexisting"
	var routes []fuzzkit.Route
	for _, mt := range tests.MediaTypes {
		routes = append(routes, put("fuzzed", mt))
	}
	routes = append(routes,
		put("fuzzed", "multipart/form-data; boundary="+multipartBoundary),
		fuzzkit.Route{Method: "PATCH", Resource: "/v2/tests/{id}", Params: map[string]string{"id": "fuzzexisting"}, ContentType: "application/json-patch+json"},
		fuzzkit.Route{Method: "POST", Resource: "/v2/tests", ContentType: "application/json"},
		fuzzkit.Route{Method: "GET", Resource: "/v2/tests"},
	)
	e.Fuzz(f, routes)
}

// FuzzOpenArchive checks the archive and configuration parsers alone: any
// bytes of any accepted type give a configuration or a 4xx error, never a
// panic.
//
//	go test -run '^$' -fuzz '^FuzzOpenArchive$' -fuzztime 20s ./shared/tests
func FuzzOpenArchive(f *testing.F) {
	f.Fuzz(func(t *testing.T, typ uint8, raw []byte) {
		mt := tests.MediaTypes[int(typ)%len(tests.MediaTypes)]
		a, err := tests.Open(mt, raw)
		if err == nil {
			_, err = tests.ParseConfig(a)
		}
		if err != nil {
			if st := apigw.Status(err); st < 400 || st >= 500 {
				t.Fatalf("%s %q: %v is not a 4xx", mt, raw, err)
			}
		}
	})
}
