package tasks_test

import (
	"testing"

	"cads/infra/fuzzkit"
	"cads/shared/wire/applicationswire"
	"cads/shared/wire/taskswire"
)

// FuzzTasks sends fuzzed queries and bodies to POST and GET /v2/tasks, with
// an application to target ({{app}} in seeds).
//
//	go test -run '^$' -fuzz '^FuzzTasks$' -fuzztime 20s ./shared/tasks
func FuzzTasks(f *testing.F) {
	apps := fuzzkit.NewWithQueues(f, applicationswire.Handler)
	apps.Vars["app"] = apps.Create(f, fuzzkit.Route{Method: "POST", Resource: "/v2/applications", ContentType: "application/json"}, `{"name": "Fuzz task target", "aliases": ["tasks.fuzz.example.com"]}`)
	e := apps.With(taskswire.Handler)
	e.Fuzz(f, []fuzzkit.Route{
		{Method: "POST", Resource: "/v2/tasks", ContentType: "application/json"},
		{Method: "GET", Resource: "/v2/tasks"},
	})
}
