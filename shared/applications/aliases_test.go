package applications_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/outbox"
	"cads/shared/store"
	"cads/shared/tasks"
)

// itemCount is how many items the table holds.
func itemCount(t *testing.T, a *api) int {
	t.Helper()
	out, err := a.d.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(a.d.Table), Select: "COUNT", ConsistentRead: aws.Bool(true)})
	if err != nil || out.LastEvaluatedKey != nil {
		t.Fatalf("scan: %v (more than a page: %v)", err, out.LastEvaluatedKey != nil)
	}
	return int(out.Count)
}

// runAccountTasks runs every pending task of account, as the queue would.
func runAccountTasks(t *testing.T, a *api, account string) {
	t.Helper()
	ctx := context.Background()
	w := tasks.NewWorker(tasks.NewWorkerStore(a.st), tasks.NewFakeDataPlane(quiet, tasks.LoopbackOnly), outbox.New(a.st.Tasks, outbox.SQS{}, quiet), quiet)
	ts, err := a.st.Tasks.ListTasks(ctx, account, time.Time{}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range ts {
		if !tk.Finished() {
			w.Process(ctx, `{"task":"`+tk.ID+`"}`)
		}
	}
}

// conflictNaming checks r is the API's 409 conflict naming alias and
// nothing of its holder.
func conflictNaming(t *testing.T, r resp, alias string, secrets ...string) {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if r.Status != 409 || e["type"] != "conflict" || !strings.Contains(msg, `"`+alias+`"`) {
		t.Fatalf("want 409 conflict naming %q: %d %s", alias, r.Status, r.Raw)
	}
	for _, s := range secrets {
		if strings.Contains(r.Raw, s) {
			t.Fatalf("the conflict reveals %q: %s", s, r.Raw)
		}
	}
}

// An alias belongs to one application of the whole installation: another
// account cannot create or patch its way to it (409 naming the alias, not
// the holder), the holder's own patches keep it, and it is free again
// once the holder drops it.
func TestAliasBelongsToOneApplication(t *testing.T) {
	a := newAPI(t)
	ctx := context.Background()
	if err := a.st.Accounts.CreateAccount(ctx, domain.Account{ID: "tenantb", Name: "Tenant B", Ancestors: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	b := caller.Principal{ID: "userb", Kind: domain.KindUser, AccountID: "tenantb", KeyID: "k"}
	bApp := a.call(b, "POST", "/v2/applications", "application/json", `{"name":"B shop","aliases":["shop.b.example.com","www.b.example.com"]}`)
	if bApp.Status != 200 {
		t.Fatalf("B's create: %d %s", bApp.Status, bApp.Raw)
	}
	bID := bApp.Body["id"].(string)

	// Create: any spelling of B's alias.
	for _, alias := range []string{"shop.b.example.com", "SHOP.B.Example.COM"} {
		before := itemCount(t, a)
		r := a.do("POST", "/v2/applications", fmt.Sprintf(`{"name":"A shop","aliases":["a.example.com","%s"]}`, alias))
		conflictNaming(t, r, "shop.b.example.com", bID, "tenantb")
		if after := itemCount(t, a); after != before {
			t.Fatalf("a refused create wrote %d items", after-before)
		}
	}
	// A Kelvin sign (U+212A) lower-cases to k under Unicode rules; it is
	// not an ASCII host name, so it is refused rather than folded.
	if r := a.do("POST", "/v2/applications", `{"name":"A shop","aliases":["www.b.example.\u212Aom"]}`); r.Status != 400 {
		t.Fatalf("a non-ASCII look-alike: %d %s", r.Status, r.Raw)
	}

	// PATCH: adding B's alias is refused before any task is made.
	id := a.create(`{"name":"A shop","aliases":["a.example.com"]}`).Body["id"].(string)
	path := "/v2/applications/" + id
	r := a.call(a.op, "PATCH", path, "application/json-patch+json", `[{"op":"add","path":"/aliases/-","value":"www.b.example.com"}]`)
	conflictNaming(t, r, "www.b.example.com", bID, "tenantb")
	if ts, _ := a.st.Tasks.ListTasks(ctx, a.root, time.Time{}, time.Time{}, 0); len(ts) != 0 {
		t.Fatalf("a refused patch made a task: %+v", ts)
	}
	// The application's own aliases and new ones are fine.
	if r := a.do("PATCH", path, `{"aliases":["A.example.com","m.a.example.com"]}`); r.Status != 201 {
		t.Fatalf("own aliases: %d %s", r.Status, r.Raw)
	}
	a.runTasks()
	if r := a.do("GET", path, ""); !strings.Contains(r.Raw, `"aliases":["a.example.com","m.a.example.com"]`) {
		t.Fatalf("after the task: %s", r.Raw)
	}

	// B drops its alias: A may take it.
	if r := a.call(b, "PATCH", "/v2/applications/"+bID, "application/json", `{"aliases":["shop.b.example.com"]}`); r.Status != 201 {
		t.Fatalf("B's patch: %d %s", r.Status, r.Raw)
	}
	runAccountTasks(t, a, "tenantb")
	if r := a.do("PATCH", path, `{"aliases":["a.example.com","www.b.example.com"]}`); r.Status != 201 {
		t.Fatalf("a freed alias: %d %s", r.Status, r.Raw)
	}
	a.runTasks()
	if app, _, err := a.st.Applications.AliasOwner(ctx, "www.b.example.com"); err != nil || app != id {
		t.Fatalf("the freed alias is held by %q (%v)", app, err)
	}
}

// A patch whose task runs after another application took an alias fails
// the task with the same message, and changes nothing.
func TestAliasTakenBeforeTheTaskRuns(t *testing.T) {
	a := newAPI(t)
	id := a.create(`{"name":"A shop","aliases":["a.example.com"]}`).Body["id"].(string)
	r := a.do("PATCH", "/v2/applications/"+id, `{"aliases":["a.example.com","late.example.com"]}`)
	if r.Status != 201 {
		t.Fatalf("patch: %d %s", r.Status, r.Raw)
	}
	task := r.Body["id"].(string)
	a.create(`{"name":"Quick","aliases":["late.example.com"]}`)
	a.runTasks()
	tk, err := a.st.Tasks.GetTask(context.Background(), a.root, task)
	if err != nil || tk.State != domain.TaskFailed || !strings.Contains(tk.Message, `"late.example.com"`) {
		t.Fatalf("task: %+v %v", tk, err)
	}
	if r := a.do("GET", "/v2/applications/"+id, ""); strings.Contains(r.Raw, "late.example.com") {
		t.Fatalf("the failed task changed the application: %s", r.Raw)
	}
}

// An application holds at most store.MaxAliasWrites aliases, and one
// change adds and removes at most as many: 400s naming the limit.
func TestAliasLimits(t *testing.T) {
	a := newAPI(t)
	many := func(prefix string, n int) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d.example.com", prefix, i))
		}
		b, _ := json.Marshal(out)
		return string(b)
	}
	if r := a.do("POST", "/v2/applications", `{"name":"x","aliases":`+many("o", store.MaxAliasWrites+1)+`}`); r.Status != 400 || !strings.Contains(r.Raw, fmt.Sprintf("at most %d", store.MaxAliasWrites)) {
		t.Fatalf("%d aliases: %d %s", store.MaxAliasWrites+1, r.Status, r.Raw)
	}
	id := a.create(`{"name":"x","aliases":` + many("a", store.MaxAliasWrites) + `}`).Body["id"].(string)
	r := a.do("PATCH", "/v2/applications/"+id, `{"aliases":`+many("b", store.MaxAliasWrites)+`}`)
	if r.Status != 400 || !strings.Contains(r.Raw, fmt.Sprintf("at most %d together", store.MaxAliasWrites)) {
		t.Fatalf("replacing every alias at once: %d %s", r.Status, r.Raw)
	}
	if r := a.do("PATCH", "/v2/applications/"+id, `{"aliases":`+many("a", 49)+`}`); r.Status != 201 {
		t.Fatalf("dropping 48: %d %s", r.Status, r.Raw)
	}
}
