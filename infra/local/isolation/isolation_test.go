// Package isolation_test holds the tenant isolation invariant and the
// replays of the findings against it, in a test binary of their own: go
// test runs it beside the rest of infra/local's tests (goaws keeps its
// queues in package state, so two platforms cannot share a process).
package isolation_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"cads/infra/apispec"
	"cads/infra/local"
	"cads/infra/local/localtest"
	"cads/infra/localaws"
)

// The tenant isolation invariant: whatever roles the owner of an ordinary
// account writes for itself, no principal of that account reaches outside
// the account's subtree or its own identity. The cases are generated from
// apispec.Endpoints (the contract's operations), so a route added to the
// contract is attacked by default.

// isoTrace logs every case with its status and a body excerpt:
// go test -run TestIsolationInvariant -v ./infra/local/isolation/ -args -isotrace
var isoTrace = flag.Bool("isotrace", false, "log every isolation case with its outcome")

// isoMethods are tried on every path of the inventory, routed or not.
var isoMethods = []string{"GET", "POST", "PATCH", "PUT", "DELETE"}

// Resource kinds of path parameters, named by the collection segment in
// front of the parameter (users/{id}/roles/{role_id} is a held role, not a
// role of an account).
const (
	kAccount     = "account"
	kEntitlement = "entitlement"
	kRole        = "role"
	kInvitation  = "invitation"
	kGroupInv    = "group-invitation"
	kGroup       = "group"
	kServiceUser = "service-user"
	kSet         = "address-set"
	kTest        = "test"
	kApp         = "application"
	kAction      = "action"
	kPageControl = "pagecontrol"
	kWebControl  = "webcontrol"
	kProto       = "metric-prototype"
	kTask        = "task"
	kUser        = "user"
	kKey         = "key"
	kHeldRole    = "held-role"
	kHeldGroup   = "held-group"
	// An archive type of an application's archived logs: a name the API
	// defines, the same for every party.
	kLogType = "log-type"
	// Not path kinds: values bodies refer to.
	kAlias = "alias"
	// A look-alike of the party's account name (issue 27, finding 1) and
	// the href of a user of the party who holds no role in the attacker's
	// accounts (finding 2), for PATCH /v2/accounts/{id}.
	kLookAlike = "look-alike-name"
	kOwnerHref = "owner-href"
)

func paramKind(path string, seg []string, i int) string {
	users := strings.HasPrefix(path, "/v2/users/")
	if strings.HasPrefix(path, "/v2/archived-logs/applications/") && i == len(seg)-1 && i >= 2 && seg[i-2] == "applications" {
		return kLogType
	}
	switch seg[i-1] {
	case "accounts":
		return kAccount
	case "entitlements":
		return kEntitlement
	case "roles":
		if users {
			return kHeldRole
		}
		return kRole
	case "groups":
		if users {
			return kHeldGroup
		}
		return kGroup
	case "invitations":
		return kInvitation
	case "group-invitations":
		return kGroupInv
	case "service-users":
		return kServiceUser
	case "address-sets":
		return kSet
	case "tests":
		return kTest
	case "applications":
		return kApp
	case "actions":
		return kAction
	case "pagecontrols":
		return kPageControl
	case "webcontrols":
		return kWebControl
	case "metric-prototypes":
		return kProto
	case "tasks":
		return kTask
	case "users":
		return kUser
	case "access-keys":
		return kKey
	}
	return "unknown:" + seg[i-1]
}

// fillPath puts the ids of ids into the {name}s of path.
func fillPath(path string, ids map[string]string) string {
	for k, v := range ids {
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	return path
}

// nameScoped kinds are names chosen by the client or numbered per parent
// (action ids, page control numbers, test names): they name a resource
// only together with the application or account they are resolved in.
var nameScoped = map[string]bool{kAction: true, kPageControl: true, kWebControl: true, kTest: true, kLogType: true}

// pathParam is one {name} of an inventory path.
type pathParam struct{ name, kind string }

func pathParams(path string) []pathParam {
	seg := strings.Split(path, "/")
	var out []pathParam
	for i, s := range seg {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			out = append(out, pathParam{name: s[1 : len(s)-1], kind: paramKind(path, seg, i)})
		}
	}
	return out
}

// entitlementAdminRoute: only an applicable entitlement administrator
// role grants these, whatever a custom role's patterns say.
func entitlementAdminRoute(method, template string) bool {
	if method == "POST" && template == "/v2/accounts" {
		return true
	}
	return method != "GET" && strings.HasPrefix(template, "/v2/accounts/{id}/entitlements")
}

// owner is a set of ids of one party, by kind.
type owner struct {
	label string
	v     map[string]string
}

// reply is a response of the API with its JSON object body.
type reply struct {
	Status int
	Body   map[string]any
	Raw    string
}

// isoUser is a user of the installation with its keys.
type isoUser struct {
	id, email string
	bare      string // secret of a key authenticated into no account
	bareID    string
	secret    string // secret of a key into its home account, if any
	keyID     string
}

// isoWorld is the installation the attackers live in.
type isoWorld struct {
	t     *testing.T
	p     *local.Platform
	db    *dynamodb.Client
	table string

	op, root, a, a1, b string
	users              map[string]*isoUser
	// ids of resources, by a short name ("appB", "roleHere", ...)
	id   map[string]string
	href map[string]string
}

// startIsoWorld starts the platform on a DynamoDB server of its own (so
// that the test can read the whole table) and builds the installation:
// sibling accounts A and B below the root, A1 below A, an owner for each,
// and resources of every family in B, the root and A.
func startIsoWorld(t *testing.T) *isoWorld {
	t.Helper()
	ctx := context.Background()
	endpoint, stop, err := localaws.StartDynamo(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	db, err := localaws.DynamoClient(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	// Registered before Start, so it runs after the platform is closed.
	t.Cleanup(func() { _ = stop(context.Background()) })
	p, _ := localtest.Start(t, func(o *local.Options) { o.DynamoEndpoint = endpoint })
	w := &isoWorld{t: t, p: p, db: db, table: p.Deps.Store.Name(),
		op: p.Bootstrap.Secret, root: p.Bootstrap.RootAccount, users: map[string]*isoUser{}, id: map[string]string{}, href: map[string]string{}}
	w.build()
	return w
}

func (w *isoWorld) must(what string, want int, method, path, secret string, body any) reply {
	w.t.Helper()
	r := w.do(method, path, secret, body)
	if r.Status != want {
		w.t.Fatalf("set-up: %s: %s %s: %d, want %d: %s", what, method, path, r.Status, want, r.Raw)
	}
	return r
}

func (r reply) str(k string) string { s, _ := r.Body[k].(string); return s }

func acct(id string) string { return "/v2/accounts/" + id }

// newUser creates a user (operator) with a key into no account.
func (w *isoWorld) newUser(name, email string) *isoUser {
	w.t.Helper()
	id := w.must("create user "+name, 200, "POST", "/v2/users", w.op, map[string]any{"email": email, "name": name}).str("id")
	k := w.must("bare key for "+name, 200, "POST", "/v2/users/"+id+"/access-keys", w.op, map[string]any{"type": "bearer"})
	u := &isoUser{id: id, email: email, bare: k.str("secret_key"), bareID: k.str("id")}
	w.users[name] = u
	return u
}

// homeKey gives u its own key into account (the user must be allowed to
// switch there).
func (w *isoWorld) homeKey(u *isoUser, account string) {
	w.t.Helper()
	k := w.must("home key", 200, "POST", "/v2/users/self/access-keys", u.bare, map[string]any{"type": "bearer", "account": acct(account)})
	u.secret, u.keyID = k.str("secret_key"), k.str("id")
}

// invite has inviter invite u to role (an href) and u accept; it returns
// the invitation's id.
func (w *isoWorld) invite(inviter string, account, role string, u *isoUser) string {
	w.t.Helper()
	inv := w.must("invite "+u.email, 200, "POST", acct(account)+"/invitations", inviter, map[string]any{"user_email": u.email, "role": role})
	w.quiet() // the invitee's inbox is written when the notifier sent it
	w.must("accept", 200, "PATCH", "/v2/users/self/invitations/"+inv.str("id"), u.bare, map[string]any{"state": "accepted"})
	return inv.str("id")
}

// roleNamed finds a role of account by name, as the operator sees it.
func (w *isoWorld) roleNamed(account, name string) (id, href string) {
	w.t.Helper()
	r := w.must("list roles", 200, "GET", acct(account)+"/roles", w.op, nil)
	var list []map[string]any
	_ = json.Unmarshal([]byte(r.Raw), &list)
	for _, x := range list {
		if x["name"] == name {
			return x["id"].(string), x["href"].(string)
		}
	}
	w.t.Fatalf("no role %q in %s: %s", name, account, r.Raw)
	return "", ""
}

// everything is a role body that permits every path for every method.
func everything(name string, inheritable bool) map[string]any {
	var perms []map[string]any
	for _, m := range isoMethods {
		perms = append(perms, map[string]any{"method": m, "effect": "permit", "spec": []string{"/v2/**"}})
	}
	return map[string]any{"name": name, "inheritable": inheritable, "permissions": perms}
}

func (w *isoWorld) keep(name string, r reply) {
	w.id[name], w.href[name] = r.str("id"), r.str("href")
}

// resources creates, with key into account, one resource of each family
// that a tenant key can create; the names carry prefix.
func (w *isoWorld) resources(prefix, key, account string, alias string) {
	w.t.Helper()
	x := prefix
	w.keep("app"+x, w.must("app", 200, "POST", "/v2/applications", key, map[string]any{"name": x + " shop", "aliases": []string{alias}}))
	w.keep("action"+x, w.must("action", 200, "POST", w.href["app"+x]+"/actions", key, map[string]any{"id": "ping" + strings.ToLower(x), "url": "https://ops.example.com/ping"}))
	w.keep("pc"+x, w.must("pagecontrol", 200, "POST", w.href["app"+x]+"/pagecontrols", key,
		`{"name":"Block bots","mode":"request","conditions":{"is_crawler":{}},"actions":[{"type":"deny","status_code":"403","body":"no"}]}`))
	w.keep("mp"+x, w.must("metric prototype", 200, "POST", "/v2/metric-prototypes", key, map[string]any{"default_name": strings.ToLower(x) + "_slow",
		"expression": "count()", "log_type": "proxy-logs", "filter": "elapsed > 2000"}))
	w.keep("set"+x, w.must("address set", 200, "POST", "/v2/address-sets", key, map[string]any{"name": x + " office", "type": "manual",
		"entries": []map[string]any{{"address": "192.0.2.0/24", "description": "HQ"}}}))
	su := w.must("service user", 200, "POST", acct(account)+"/service-users", key, map[string]any{"name": x + " robot"})
	w.keep("su"+x, su)
	if keys, _ := su.Body["access_keys"].([]any); len(keys) == 1 {
		w.id["suKey"+x] = keys[0].(map[string]any)["id"].(string)
	} else {
		w.t.Fatalf("service user without its key: %s", su.Raw)
	}
	w.keep("role"+x, w.must("role", 200, "POST", acct(account)+"/roles", key, map[string]any{"name": x + " custom",
		"permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications"}}}}))
	w.keep("group"+x, w.must("group", 200, "POST", acct(account)+"/groups", key, map[string]any{"name": x + " keepers", "roles": []string{w.href["role"+x]}}))
	task := w.do("POST", "/v2/tasks", key, map[string]any{"type": "start", "target": w.href["app"+x]})
	if task.Status != 200 && task.Status != 201 {
		w.t.Fatalf("set-up: task: %d %s", task.Status, task.Raw)
	}
	w.keep("task"+x, task)
	// A log archive of the application's custom records of this hour.
	now := time.Now().UTC()
	w.must("custom log", 200, "POST", w.href["app"+x]+"/logs", key, map[string]any{"created": now.Format(time.RFC3339Nano), "stream": "app",
		"message": x + " secret line", "address": "192.0.2.9", "filename": "app.log", "hostname": "web-" + strings.ToLower(x)})
	arc := w.do("POST", "/v2/tasks?wait=5", key, map[string]any{"type": "prepare-for-download", "parameters": map[string]any{
		"reference": "/v2/archived-logs/applications/" + w.id["app"+x] + "/custom",
		"from":      now.Truncate(time.Hour).Format(time.RFC3339), "to": now.Truncate(time.Hour).Add(time.Hour).Format(time.RFC3339)}})
	if arc.Status != 200 || arc.str("state") != "success" {
		w.t.Fatalf("set-up: archive: %d %s", arc.Status, arc.Raw)
	}
}

func (w *isoWorld) build() {
	t, op := w.t, w.op
	// Accounts: A and B below the root, A1 below A.
	w.a = w.must("account A", 200, "POST", "/v2/accounts", op, map[string]any{"name": "Tenant A"}).str("id")
	w.b = w.must("account B", 200, "POST", "/v2/accounts", op, map[string]any{"name": "Tenant B"}).str("id")
	opA := w.must("operator into A", 200, "POST", "/v2/users/self/authorization", op, map[string]any{"account": acct(w.a)}).str("secret_key")
	w.a1 = w.must("account A1", 200, "POST", "/v2/accounts", opA, map[string]any{"name": "Tenant A1"}).str("id")
	for _, x := range []struct{ name, account string }{{"A", w.a}, {"A1", w.a1}, {"B", w.b}} {
		w.keep("ent"+x.name, w.must("entitlement", 200, "POST", acct(x.account)+"/entitlements", op, map[string]any{"resource": "applications", "quantity": 5}))
		w.must("entitlement", 200, "POST", acct(x.account)+"/entitlements", op, map[string]any{"resource": "address_sets", "quantity": 5})
	}

	// People: the owners of A, A1 and B, two more attackers, and a user
	// of B with nothing accepted yet.
	mallory := w.newUser("mallory", "mallory@a.example.com") // owner of A: attacker (a)
	ownerA1 := w.newUser("ownerA1", "owner@a1.example.com")
	attB := w.newUser("attB", "bob@a1.example.com")   // attacker (b)
	attC := w.newUser("attC", "carol@a1.example.com") // attacker (c)
	victim := w.newUser("victim", "victim@b.example.com")
	w.newUser("bpeer", "peer@b.example.com")
	for _, x := range []struct {
		account string
		u       *isoUser
	}{{w.a, mallory}, {w.a1, ownerA1}, {w.b, victim}} {
		id, href := w.roleNamed(x.account, "Account owner")
		w.id["owner"+x.account] = id
		w.id["ownerInv"+x.account] = w.invite(op, x.account, href, x.u)
		w.homeKey(x.u, x.account)
	}
	w.id["rootOwner"], _ = w.roleNamed(w.root, "Account owner")

	// The attackers' roles: everything in A, everything below A, and
	// everything in A1.
	w.keep("roleHere", w.must("role here", 200, "POST", acct(w.a)+"/roles", mallory.secret, everything("Everything here", false)))
	w.keep("roleBelow", w.must("role below", 200, "POST", acct(w.a)+"/roles", mallory.secret, everything("Everything below", true)))
	w.keep("roleA1", w.must("role in A1", 200, "POST", acct(w.a1)+"/roles", ownerA1.secret, everything("Everything in A1", false)))
	w.id["invHere"] = w.invite(mallory.secret, w.a, w.href["roleHere"], mallory)
	w.id["invBelow"] = w.invite(mallory.secret, w.a, w.href["roleBelow"], attC)
	w.id["invA1"] = w.invite(ownerA1.secret, w.a1, w.href["roleA1"], attB)
	w.homeKey(attB, w.a1)
	w.homeKey(attC, w.a1)

	// Resources of every family: B's (by its owner), the root's (by the
	// operator), A's and A1's (by their owners).
	w.resources("B", victim.secret, w.b, "victim-shop.example.com")
	w.resources("Root", op, w.root, "operator-shop.example.com")
	w.resources("A", mallory.secret, w.a, "a-shop.example.com")
	w.keep("appA1", w.must("app A1", 200, "POST", "/v2/applications", ownerA1.secret, map[string]any{"name": "A1 shop", "aliases": []string{"a1-shop.example.com"}}))
	w.must("test B", 200, "PUT", "/v2/tests/victimtest", victim.secret, rawBody{"application/x-tar", localtest.TestTar(t, "http://victim-shop.example.com", "victim readme\n")})
	// B's people: an invitation to its custom role (not answered), a group
	// invitation the victim accepted.
	inv := w.must("invitation B", 200, "POST", acct(w.b)+"/invitations", victim.secret, map[string]any{"user_email": "peer@b.example.com", "role": w.href["roleB"]})
	w.keep("invB", inv)
	gi := w.must("group invitation B", 200, "POST", acct(w.b)+"/group-invitations", victim.secret, map[string]any{"user_email": victim.email, "group": w.href["groupB"]})
	w.keep("giB", gi)
	w.quiet()
	w.must("accept group invitation", 200, "PATCH", "/v2/users/self/group-invitations/"+gi.str("id"), victim.bare, map[string]any{"state": "accepted"})
	w.keep("giA", w.must("group invitation A", 200, "POST", acct(w.a)+"/group-invitations", mallory.secret, map[string]any{"user_email": "newcomer@example.com", "group": w.href["groupA"]}))
	w.keep("invRoot", w.must("invitation root", 200, "POST", acct(w.root)+"/invitations", op, map[string]any{"user_email": "peer@b.example.com", "role": w.href["roleRoot"]}))
	w.quiet()
}

// rawBody is a request body sent as is with its content type.
type rawBody struct {
	ctype string
	raw   []byte
}

// quiet waits until no queue holds a message: the event sources delete a
// message only after its handler returned, so nothing is being written
// on behalf of an earlier request.
func (w *isoWorld) quiet() {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for id, q := range w.p.Queues {
			out, err := w.p.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
			if err != nil {
				w.t.Fatalf("queue %s: %v", id, err)
			}
			for _, a := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed} {
				v, _ := strconv.Atoi(out.Attributes[string(a)])
				n += v
			}
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("queues still hold %d messages after 30 s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---------------------------------------------------------------- table snapshot

// snapshot is the whole table: item key -> canonical JSON of the item.
type snapshot map[string]snapItem

type snapItem struct {
	plain  map[string]any
	canon  string
	tokens map[string]bool // every [a-z0-9]+ run of every string in the item
	pk     string
}

var tokenRE = regexp.MustCompile(`[a-z0-9]+`)

func (w *isoWorld) snapshot() snapshot {
	w.t.Helper()
	s := snapshot{}
	pg := dynamodb.NewScanPaginator(w.db, &dynamodb.ScanInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true)})
	for pg.HasMorePages() {
		out, err := pg.NextPage(context.Background())
		if err != nil {
			w.t.Fatalf("scan: %v", err)
		}
		for _, it := range out.Items {
			plain := plainAV(&types.AttributeValueMemberM{Value: it})
			b, _ := json.Marshal(plain)
			pk, _ := plain.(map[string]any)["PK"].(string)
			sk, _ := plain.(map[string]any)["SK"].(string)
			toks := map[string]bool{}
			for _, x := range tokenRE.FindAllString(strings.ToLower(string(b)), -1) {
				toks[x] = true
			}
			s[pk+" | "+sk] = snapItem{plain: plain.(map[string]any), canon: string(b), tokens: toks, pk: pk}
		}
	}
	return s
}

// plainAV turns an attribute value into plain Go values (sets sorted) so
// that equal items marshal equally.
func plainAV(v types.AttributeValue) any {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return "N:" + x.Value
	case *types.AttributeValueMemberBOOL:
		return x.Value
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B:%x", x.Value)
	case *types.AttributeValueMemberSS:
		s := slices.Clone(x.Value)
		sort.Strings(s)
		return s
	case *types.AttributeValueMemberNS:
		s := slices.Clone(x.Value)
		sort.Strings(s)
		return s
	case *types.AttributeValueMemberL:
		out := make([]any, len(x.Value))
		for i, e := range x.Value {
			out[i] = plainAV(e)
		}
		return out
	case *types.AttributeValueMemberM:
		out := map[string]any{}
		for k, e := range x.Value {
			out[k] = plainAV(e)
		}
		return out
	}
	return fmt.Sprintf("%T", v)
}

// keyUseOnly reports that an item changed only in when its key was last
// used (and the expiry that follows it): the trace of the attacker's own
// requests, not a change it made. The address-expiry sweep's lease and
// next time are the same kind of trace: every aggregator invocation sweeps
// once the last sweep is 30 s old, so an attack that outlasts that moves
// them whoever sent the messages.
func keyUseOnly(before, after snapItem) bool {
	strip := func(m map[string]any, fields ...string) string {
		c := map[string]any{}
		for k, v := range m {
			if !slices.Contains(fields, k) {
				c[k] = v
			}
		}
		return reflectJSON(c)
	}
	switch before.plain["entity"] {
	case "access_key":
		return strip(before.plain, "last_used", "ttl") == strip(after.plain, "last_used", "ttl")
	case "address_sweep":
		return strip(before.plain, "lease_until", "next_after") == strip(after.plain, "lease_until", "next_after")
	}
	return false
}

// foreignChanges compares two snapshots: an item added, removed or changed
// is the attackers' own when its tokens (before or after) name one of own
// (their accounts and identities, closed over the items so attributed:
// an action item names its application, the application its account) and
// none of foreign. It returns the other changes, described.
func foreignChanges(before, after snapshot, own, foreign map[string]bool) []string {
	type change struct {
		key, what string
		toks      map[string]bool
	}
	var changes []change
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			changes = append(changes, change{k, "removed: " + b.canon, b.tokens})
		case a.canon != b.canon && !keyUseOnly(b, a):
			toks := map[string]bool{}
			for x := range a.tokens {
				toks[x] = true
			}
			for x := range b.tokens {
				toks[x] = true
			}
			changes = append(changes, change{k, "changed:\n      before " + b.canon + "\n      after  " + a.canon, toks})
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			changes = append(changes, change{k, "added: " + a.canon, a.tokens})
		}
	}
	// Every item of the table, before and after, attributes ids: an
	// unchanged application item of A makes its page controls A's.
	for _, s := range []snapshot{before, after} {
		for k, it := range s {
			changes = append(changes, change{key: k, toks: it.tokens})
		}
	}
	own = copySet(own)
	attributed := map[string]bool{}
	for grew := true; grew; {
		grew = false
		for _, c := range changes {
			if attributed[c.key] || !intersects(c.toks, own) || intersects(c.toks, foreign) {
				continue
			}
			attributed[c.key] = true
			// The ids in the item's partition key are its owner's: what
			// is stored below them is the attackers' too.
			for _, x := range tokenRE.FindAllString(strings.ToLower(strings.SplitN(c.key, " | ", 2)[0]), -1) {
				if len(x) == 16 && !own[x] && !foreign[x] {
					own[x], grew = true, true
				}
			}
		}
	}
	var out []string
	for _, c := range changes {
		if c.what != "" && !attributed[c.key] {
			out = append(out, c.key+" "+c.what)
		}
	}
	sort.Strings(out)
	return out
}

func copySet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func intersects(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------- cases

// attacker is one principal of A's subtree with a key into its home.
type attacker struct {
	name   string
	user   *isoUser
	region []string // accounts it may act in: its home and below
	own    owner
	others []owner // parties outside its reach
}

type isoCase struct {
	who      *attacker
	method   string
	template string
	path     string
	body     any // nil, a JSON value, a string of JSON, or rawBody
	foreign  string
	ea       bool
	// expect: the refusal the handler must answer, where the case tests
	// a rule of the handler's (0: any refusal).
	expect int
}

// allowed2xx: the request addresses only the attacker's region or its
// own identity, and is not one that only the platform operator's roles
// decide.
func (c isoCase) allowed2xx() bool {
	return c.foreign == "" && !c.ea && c.path != "/v2/users"
}

func (c isoCase) String() string {
	f := "own"
	if c.foreign != "" {
		f = "foreign: " + c.foreign
	}
	return fmt.Sprintf("[%s] %s %s (%s)", c.who.name, c.method, c.path, f)
}

// class is the case's kind of violation for the summary: route, method
// and what was foreign.
func (c isoCase) class() string {
	f := c.foreign
	if i := strings.IndexByte(f, ' '); i > 0 {
		f = f[:i]
	}
	if f == "" {
		f = "own"
	}
	return c.method + " " + c.template + " (" + f + ")"
}

// bodyFor returns the request body of method template with the ids of v,
// or nil. n makes names unique so that creates do not collide.
func bodyFor(method, template string, v map[string]string, n int) any {
	uniq := func(s string) string { return fmt.Sprintf("%s %d", s, n) }
	switch method + " " + template {
	case "POST /v2/accounts":
		return map[string]any{"name": uniq("Intruder account")}
	case "PATCH /v2/accounts/{id}":
		return map[string]any{"name": uniq("Renamed account")}
	case "POST /v2/accounts/{id}/entitlements":
		return map[string]any{"resource": "applications", "quantity": 100000}
	case "PATCH /v2/accounts/{id}/entitlements/{entitlement_id}", "PUT /v2/accounts/{id}/entitlements/{entitlement_id}":
		return map[string]any{"quantity": 100000}
	case "POST /v2/accounts/{id}/roles":
		return map[string]any{"name": uniq("Intruder role"), "permissions": []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{"/v2/applications"}}}}
	case "PATCH /v2/accounts/{id}/roles/{role_id}":
		return map[string]any{"name": uniq("Renamed role")}
	case "POST /v2/accounts/{id}/invitations":
		return map[string]any{"user_email": fmt.Sprintf("newcomer%d@example.com", n), "role": v[kRole]}
	case "POST /v2/accounts/{id}/group-invitations":
		return map[string]any{"user_email": fmt.Sprintf("newcomer%d@example.com", n), "group": v[kGroup]}
	case "PATCH /v2/accounts/{id}/invitations/{invitation_id}", "PATCH /v2/accounts/{id}/group-invitations/{invitation_id}":
		return map[string]any{"state": "queued"}
	case "POST /v2/accounts/{id}/groups":
		return map[string]any{"name": uniq("Intruder group"), "roles": []string{v[kRole]}}
	case "PATCH /v2/accounts/{id}/groups/{group_id}":
		return map[string]any{"name": uniq("Renamed group")}
	case "POST /v2/accounts/{id}/service-users":
		return map[string]any{"name": uniq("intruder robot")}
	case "PATCH /v2/accounts/{id}/service-users/{service_user_id}":
		return map[string]any{"name": uniq("renamed robot")}
	case "POST /v2/address-sets":
		return map[string]any{"name": uniq("intruder set"), "type": "manual", "entries": []map[string]any{{"address": "198.51.100.0/24"}}}
	case "PATCH /v2/address-sets/{id}":
		return rawBody{"application/json-patch+json", []byte(`[{"op":"add","path":"/entries/-","value":{"address":"198.51.100.4"}}]`)}
	case "POST /v2/tests":
		return map[string]any{"id": "nosuchtest", "duration": 1, "virtualUsers": 1}
	case "PUT /v2/tests/{id}", "PATCH /v2/tests/{id}":
		return rawBody{"application/x-tar", nil} // filled by the runner (needs t)
	case "POST /v2/tasks":
		return map[string]any{"type": "start", "target": v[kApp]}
	case "POST /v2/applications":
		return map[string]any{"name": uniq("Intruder shop"), "aliases": []string{fmt.Sprintf("%d.%s", n, v[kAlias])}}
	case "PATCH /v2/applications/{id}":
		return map[string]any{"name": uniq("Renamed shop")}
	case "POST /v2/applications/{id}/actions":
		return map[string]any{"id": fmt.Sprintf("intruder%d", n), "url": "https://intruder.example.com/x"}
	case "PATCH /v2/applications/{id}/actions/{action_id}":
		return map[string]any{"description": "pwned"}
	case "POST /v2/applications/{id}/pagecontrols":
		return `{"name":"Intruder","mode":"request","conditions":{"is_crawler":{}},"actions":[{"type":"deny","status_code":"403","body":"no"}]}`
	case "PATCH /v2/applications/{id}/pagecontrols/{pagecontrol_id}":
		return map[string]any{"enabled": false}
	case "POST /v2/metric-prototypes":
		return map[string]any{"default_name": fmt.Sprintf("intruder%d", n), "expression": "count()", "log_type": "proxy-logs"}
	case "POST /v2/applications/{id}/logs":
		return map[string]any{"created": time.Now().UTC().Format(time.RFC3339), "stream": "x", "message": "pwned", "address": "192.0.2.1", "filename": "x.log", "hostname": "h"}
	case "POST /v2/users":
		return map[string]any{"email": fmt.Sprintf("intruder%d@example.com", n), "name": "Intruder"}
	case "PATCH /v2/users/{id}":
		return map[string]any{"name": "Pwned"}
	case "POST /v2/users/{id}/access-keys", "POST /v2/users/self/authorization":
		return map[string]any{"type": "bearer", "account": v[kAccount]}
	case "PATCH /v2/users/{id}/invitations/{invitation_id}", "PATCH /v2/users/{id}/group-invitations/{invitation_id}":
		return map[string]any{"state": "accepted"}
	}
	if method == "POST" || method == "PATCH" || method == "PUT" {
		return map[string]any{}
	}
	return nil
}

// queryFor: reads that need a query to get past validation.
func queryFor(template string) string {
	switch template {
	case "/v2/applications/{id}/metrics", "/v2/address-sets/{id}/metrics", "/v2/address-sets/metrics", "/v2/applications/metrics":
		now := time.Now().UTC().Truncate(time.Hour)
		return "?" + url.Values{"names": {"requests"}, "summarize": {"true"}, "from": {now.Format(time.RFC3339)}, "to": {now.Add(time.Hour).Format(time.RFC3339)}}.Encode()
	case "/v2/applications/{id}/logs":
		return "?" + url.Values{"from": {time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)}}.Encode()
	case "/v2/accounts/{id}/access":
		// Who can, about the account's own applications: its principals
		// are listed, another party's never (a path naming another
		// party's account is a 400, TestWhoCanRules).
		return "?" + url.Values{"method": {"DELETE"}, "path": {"/v2/applications/x1"}}.Encode()
	case "/v2/archived-logs/applications/{id}/{log_type}":
		// The hour every party's archive covers (isoWorld.resources).
		now := time.Now().UTC().Truncate(time.Hour)
		return "?" + url.Values{"from": {now.Format(time.RFC3339)}, "to": {now.Add(time.Hour).Format(time.RFC3339)}}.Encode()
	}
	return ""
}

// bodyValues are the hrefs and names a body refers to, of one party.
//
// Aliases are not among them: an alias belongs to one application of the
// installation, so a create naming another party's alias is a 409 that
// reveals nothing of the holder (TestFinding3_AliasBelongsToOneAccount);
// the creates here name aliases of their own.
func (w *isoWorld) bodyValues(o owner) map[string]string {
	v := map[string]string{kAlias: "intruder.example.com"}
	for k, x := range map[string]string{kAccount: acct(o.v[kAccount]), kRole: o.v["roleHref"], kGroup: o.v["groupHref"], kApp: o.v["appHref"]} {
		if !strings.HasSuffix(x, "/") && x != "" {
			v[k] = x
		}
	}
	for _, k := range []string{kLookAlike, kOwnerHref} {
		if x := o.v[k]; x != "" {
			v[k] = x
		}
	}
	return v
}

// variantRoute is the route whose bodies bodyVariants varies.
const variantRoute = "PATCH /v2/accounts/{id}"

// bodyVariant is a body referring to another party, with the refusal it
// must get when the attacker may send the request at all (0: any).
type bodyVariant struct {
	body   any
	expect int
}

// bodyVariants are the bodies of method template that refer to another
// party through v: bodyFor's, and for an account's PATCH a rename to a
// look-alike of the party's account name (the 409 of a taken name) and an
// owner that is the party's user (the 400 of every refused owner), each a
// case of its own.
func bodyVariants(method, template string, v map[string]string, seq *int) []bodyVariant {
	*seq++
	out := []bodyVariant{{bodyFor(method, template, v, *seq), 0}}
	if method+" "+template == variantRoute {
		if n := v[kLookAlike]; n != "" {
			out = append(out, bodyVariant{map[string]any{"name": n}, 409})
		}
		if u := v[kOwnerHref]; u != "" {
			out = append(out, bodyVariant{map[string]any{"owner": u}, 400})
		}
	}
	return out
}

// generate builds every case of one attacker from the inventory.
func (w *isoWorld) generate(a *attacker, seq *int) []isoCase {
	type tmpl struct {
		path   string
		routed map[string]bool
	}
	var paths []*tmpl
	byPath := map[string]*tmpl{}
	for _, e := range apispec.Endpoints {
		tp := byPath[e.Path]
		if tp == nil {
			tp = &tmpl{path: e.Path, routed: map[string]bool{}}
			byPath[e.Path] = tp
			paths = append(paths, tp)
		}
		tp.routed[e.Method] = true
	}
	ownBody := w.bodyValues(a.own)
	var out []isoCase
	for _, tp := range paths {
		params := pathParams(tp.path)
		for _, m := range isoMethods {
			type assign struct {
				vals    map[string]string
				foreign string
			}
			var as []assign
			seen := map[string]bool{}
			add := func(vals map[string]string, foreign string) {
				k := fillPath(tp.path, vals)
				if !seen[k] {
					seen[k] = true
					as = append(as, assign{vals, foreign})
				}
			}
			ownVal := func(p pathParam) (string, bool) { v, ok := a.own.v[p.kind]; return v, ok }
			if len(params) == 0 {
				add(map[string]string{}, "")
			}
			if m == "GET" || m+" "+tp.path == variantRoute {
				// The attacker's own reads: what they show must not name
				// anybody outside its reach either. And its own writes
				// whose bodies can name another party (bodyVariants), so
				// that they are sent with those bodies.
				vals, ok := map[string]string{}, true
				for _, p := range params {
					v, has := ownVal(p)
					vals[p.name], ok = v, ok && has
				}
				if ok {
					add(vals, "")
				}
			}
			for _, o := range a.others {
				// The other party's ids in every parameter it has ids for
				// (the attacker's own in the rest).
				vals, ok, some, named := map[string]string{}, true, false, false
				for _, p := range params {
					if v, has := o.v[p.kind]; has {
						vals[p.name], named = v, true
						some = some || !nameScoped[p.kind]
					} else if v, has := ownVal(p); has {
						vals[p.name] = v
					} else {
						ok = false
					}
				}
				if ok && named {
					if some {
						add(vals, o.label)
					} else {
						add(vals, "") // only names, resolved in the attacker's account
					}
				}
				// One parameter of the other party, the rest the attacker's.
				for i, p := range params {
					v, has := o.v[p.kind]
					if !has {
						continue
					}
					vals, ok := map[string]string{p.name: v}, true
					for j, q := range params {
						if j != i {
							if ov, has := ownVal(q); has {
								vals[q.name] = ov
							} else {
								ok = false
							}
						}
					}
					if !ok {
						continue
					}
					if nameScoped[p.kind] {
						// Under the attacker's own parent (or account) the
						// other party's name names the attacker's resource.
						add(vals, "")
						continue
					}
					add(vals, o.label+" "+p.name)
				}
			}
			ea := entitlementAdminRoute(m, tp.path)
			if ea {
				// Entitlement writes are refused in the attacker's own
				// accounts too.
				for _, r := range a.region {
					vals := map[string]string{}
					for _, p := range params {
						switch p.kind {
						case kAccount:
							vals[p.name] = r
						case kEntitlement:
							vals[p.name] = w.entitlementOf(r)
						}
					}
					add(vals, "")
				}
			}
			routed := tp.routed[m]
			if !routed && len(as) > 1 {
				as = as[:1] // an unrouted method only has to be refused once
			}
			for _, x := range as {
				path := fillPath(tp.path, x.vals) + queryFor(tp.path)
				*seq++
				c := isoCase{who: a, method: m, template: tp.path, path: path, foreign: x.foreign, ea: ea,
					body: bodyFor(m, tp.path, ownBody, *seq)}
				out = append(out, c)
				// The same request with the ids in its body another
				// party's, where the body refers to any.
				if x.foreign != "" || !routed {
					continue
				}
				for _, o := range a.others {
					for _, b := range bodyVariants(m, tp.path, w.bodyValues(o), seq) {
						if reflectJSON(b.body) == reflectJSON(bodyFor(m, tp.path, ownBody, *seq)) {
							continue
						}
						fc := c
						fc.body, fc.foreign, fc.expect = b.body, o.label+" in body", b.expect
						out = append(out, fc)
					}
				}
			}
		}
	}
	return out
}

func reflectJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func (w *isoWorld) entitlementOf(account string) string {
	switch account {
	case w.a:
		return w.id["entA"]
	case w.a1:
		return w.id["entA1"]
	}
	return "none"
}

// attackers are the three principals of A's subtree with roles that
// permit every path for every method.
func (w *isoWorld) attackers() []*attacker {
	u := w.users
	b := owner{"B", map[string]string{
		kAccount: w.b, kEntitlement: w.id["entB"], kRole: w.id["roleB"], kInvitation: w.id["invB"], kGroupInv: w.id["giB"], kGroup: w.id["groupB"],
		kServiceUser: w.id["suB"], kSet: w.id["setB"], kApp: w.id["appB"], kAction: "pingb", kPageControl: w.id["pcB"], kWebControl: w.id["pcB"], kTask: w.id["taskB"], kLogType: "custom",
		kProto: w.id["mpB"],
		kUser:  u["victim"].id, kKey: u["victim"].keyID, kHeldRole: w.id["owner"+w.b], kHeldGroup: w.id["groupB"],
		"roleHref": w.href["roleB"], "groupHref": w.href["groupB"], "appHref": w.href["appB"],
		// "Tenant B" with a Cyrillic е and a zero-width space.
		kLookAlike: "T\u0435nant\u200b B", kOwnerHref: "/v2/users/" + u["victim"].id}}
	// The victim's own invitation to B's owner role, for the user routes.
	bInv := owner{"B-owner-invitation", map[string]string{kUser: u["victim"].id, kInvitation: w.id["ownerInv"+w.b], kGroupInv: w.id["giB"]}}
	// The root's name in full-width letters. Not the operator as an owner:
	// it holds the root's inheritable entitlement administrator role, a
	// role that applies in every account, so it is a valid owner of any.
	root := owner{"root", map[string]string{
		kAccount: w.root, kRole: w.id["roleRoot"], kInvitation: w.id["invRoot"], kGroup: w.id["groupRoot"], kServiceUser: w.id["suRoot"],
		kSet: w.id["setRoot"], kApp: w.id["appRoot"], kAction: "pingroot", kPageControl: w.id["pcRoot"], kWebControl: w.id["pcRoot"], kTask: w.id["taskRoot"], kLogType: "custom",
		kProto: w.id["mpRoot"],
		kUser:  w.p.Bootstrap.Operator, kKey: w.p.Bootstrap.KeyID, kHeldRole: w.id["rootOwner"],
		"roleHref": w.href["roleRoot"], "groupHref": w.href["groupRoot"], "appHref": w.href["appRoot"],
		kLookAlike: "\uff30\uff4c\uff41\uff54\uff46\uff4f\uff52\uff4d operator"}}
	suB := owner{"B-service-user", map[string]string{kUser: w.id["suB"], kKey: w.id["suKeyB"], kOwnerHref: "/v2/users/" + w.id["suB"]}}
	suRoot := owner{"root-service-user", map[string]string{kUser: w.id["suRoot"], kKey: w.id["suKeyRoot"]}}
	// B's test is named in the attacker's account too: a name, not an id.
	testB := owner{"B-test-name", map[string]string{kTest: "victimtest"}}
	peer := func(name string) owner {
		return owner{"user-" + name, map[string]string{kUser: u[name].id, kKey: u[name].bareID}}
	}
	// A, for the attackers authenticated into A1 (their parent).
	parentA := owner{"A-from-A1", map[string]string{kAccount: w.a, kEntitlement: w.id["entA"], kRole: w.id["roleA"], kGroup: w.id["groupA"],
		kServiceUser: w.id["suA"], kSet: w.id["setA"], kApp: w.id["appA"], kAction: "pinga", kPageControl: w.id["pcA"], kWebControl: w.id["pcA"], kTask: w.id["taskA"],
		kProto: w.id["mpA"], kInvitation: w.id["invHere"], kGroupInv: w.id["giA"], "roleHref": w.href["roleA"], "groupHref": w.href["groupA"], "appHref": w.href["appA"]}}

	self := func(x *isoUser, heldRole string) map[string]string {
		// The bare key is the attacker's own key that its requests do not
		// use: a request that wrongly deletes it costs the run nothing.
		return map[string]string{kUser: x.id, kKey: x.bareID, kHeldRole: heldRole}
	}
	ownA := self(u["mallory"], w.id["roleHere"])
	for k, v := range map[string]string{kAccount: w.a, kEntitlement: w.id["entA"], kRole: w.id["roleA"], kInvitation: w.id["invHere"], kGroupInv: w.id["giA"],
		kGroup: w.id["groupA"], kServiceUser: w.id["suA"], kSet: w.id["setA"], kApp: w.id["appA"], kAction: "pinga", kPageControl: w.id["pcA"],
		kWebControl: w.id["pcA"], kProto: w.id["mpA"], kTask: w.id["taskA"], kLogType: "custom", "roleHref": w.href["roleA"], "groupHref": w.href["groupA"], "appHref": w.href["appA"]} {
		ownA[k] = v
	}
	ownA1 := func(x *isoUser, heldRole, inv string) map[string]string {
		m := self(x, heldRole)
		for k, v := range map[string]string{kAccount: w.a1, kEntitlement: w.id["entA1"], kRole: w.id["roleA1"], kApp: w.id["appA1"], kLogType: "custom",
			"roleHref": w.href["roleA1"], "appHref": w.href["appA1"], kInvitation: inv} {
			m[k] = v
		}
		return m
	}
	common := []owner{b, bInv, root, suB, suRoot, testB}
	return []*attacker{
		{name: "a: owner of A, everything in A", user: u["mallory"], region: []string{w.a, w.a1}, own: owner{"own", ownA},
			others: append(slices.Clone(common), peer("attB"), peer("victim"))},
		{name: "b: everything in A1", user: u["attB"], region: []string{w.a1}, own: owner{"own", ownA1(u["attB"], w.id["roleA1"], w.id["invA1"])},
			others: append(slices.Clone(common), parentA, peer("mallory"))},
		{name: "c: inheritable everything from A, into A1", user: u["attC"], region: []string{w.a1}, own: owner{"own", ownA1(u["attC"], w.id["roleBelow"], w.id["invBelow"])},
			others: append(slices.Clone(common), parentA, peer("attB"))},
	}
}

// markers are strings that no response to an attacker may contain: ids,
// names and emails of parties outside A's subtree.
func (w *isoWorld) markers() []string {
	m := []string{w.b, w.users["victim"].id, w.users["victim"].keyID, w.users["bpeer"].id, w.p.Bootstrap.Operator, w.p.Bootstrap.KeyID,
		"victim@b.example.com", "peer@b.example.com", "operator@example.com", "Tenant B", "victim-shop.example.com", "operator-shop.example.com",
		"victim-b.invalid", "victim readme", w.id["rootOwner"], w.id["owner"+w.b]}
	for k, v := range w.id {
		// Generated ids only: page control ids are numbers per
		// application and would match anything.
		if (strings.HasSuffix(k, "B") || strings.HasSuffix(k, "Root")) && len(v) == 16 {
			m = append(m, v)
		}
	}
	return m
}

// rootAsParent is how the root account's id may appear: as the parent of
// A in A's own representation (GET /v2/accounts/{A} and the collection).
func (w *isoWorld) rootAsParent() *regexp.Regexp {
	return regexp.MustCompile(`"parent"\s*:\s*"/v2/accounts/` + w.root + `"`)
}

// inviterOfOwn is how the operator's user id may appear: as `granted_by`
// of the invitations that let A's people in, which are A's own records
// (the operator invites the first owner of every account). It names an
// opaque id that grants nothing: the user routes are decided in the root
// account alone.
func (w *isoWorld) inviterOfOwn() *regexp.Regexp {
	return regexp.MustCompile(`"granted_by"\s*:\s*"/v2/users/` + w.p.Bootstrap.Operator + `"`)
}

// operatorActs is how the operator's user and keys may appear in A's
// own audit events (and there only): as who made the changes it made in
// A (its first invitations, its switch into A and the session key that
// minted). Ids of a principal and keys, which grant nothing without a
// key's secret.
func (w *isoWorld) operatorActs() *regexp.Regexp {
	return regexp.MustCompile(`"/v2/users/` + w.p.Bootstrap.Operator + `(/access-keys/[a-z0-9]+)?"`)
}

// encode returns a request body and its content type: nil is none, a
// string is JSON text as is, rawBody is sent as it is (an empty tar is
// made here), anything else is marshalled.
func (w *isoWorld) encode(body any) (io.Reader, string) {
	switch b := body.(type) {
	case nil:
		return nil, ""
	case string:
		return strings.NewReader(b), "application/json"
	case rawBody:
		raw := b.raw
		if b.ctype == "application/x-tar" && raw == nil {
			raw = localtest.TestTar(w.t, "http://a-shop.example.com", "intruder\n")
		}
		return strings.NewReader(string(raw)), b.ctype
	}
	return strings.NewReader(reflectJSON(body)), "application/json"
}

// try makes one request; it is safe to call from any goroutine.
func (w *isoWorld) try(method, path, secret string, body any) (int, string, http.Header, error) {
	rd, ctype := w.encode(body)
	req, err := http.NewRequest(method, w.p.URL+path, rd)
	if err != nil {
		return 0, "", nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, string(raw), res.Header, err
}

// send is try that fails the test when no response came.
func (w *isoWorld) send(method, path, secret string, body any) (int, string, http.Header) {
	w.t.Helper()
	status, raw, hdr, err := w.try(method, path, secret, body)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	return status, raw, hdr
}

// do is send with the JSON object of the response decoded.
func (w *isoWorld) do(method, path, secret string, body any) reply {
	w.t.Helper()
	status, raw, _ := w.send(method, path, secret, body)
	r := reply{Status: status, Raw: raw}
	_ = json.Unmarshal([]byte(raw), &r.Body)
	return r
}

// violation is one case that broke the invariant.
type violation struct {
	c      isoCase
	status int
	why    string
	body   string
}

func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestIsolationInvariant attacks every route of the inventory with every
// method, with the ids of other parties in its path parameters and body,
// as three principals of account A's subtree whose roles permit
// everything, and checks that nothing outside the subtree was read or
// written.
//
// Findings 1 and 2, and findings 1 and 2 of issue 27, are replayed first,
// in the same installation: building
// it is most of their cost. Each acts as the owner of an account of its
// own below the root (not A's subtree, not a party the attackers are
// given ids of), and each ends by checking that the table is exactly as
// before its attempts, but for its own key's use; the invariant's
// snapshot is taken after them, and anything its attackers then change in
// those accounts counts as a foreign change.
func TestIsolationInvariant(t *testing.T) {
	began := time.Now()
	w := startIsoWorld(t)
	t.Run("Finding1_TenantRoleOnUserRoutes", func(t *testing.T) { finding1TenantRoleOnUserRoutes(t, w) })
	t.Run("Finding2_TenantRoleOnEntitlementAdministratorRoutes", func(t *testing.T) { finding2TenantRoleOnEntitlementAdministratorRoutes(t, w) })
	t.Run("Finding27_LookAlikeAccountNames", func(t *testing.T) { finding27LookAlikeAccountNames(t, w) })
	t.Run("Finding27_OwnerOracle", func(t *testing.T) { finding27OwnerOracle(t, w) })
	atts := w.attackers()
	markers := w.markers()
	rootParent, inviter, operator := w.rootAsParent(), w.inviterOfOwn(), w.operatorActs()
	setup := time.Since(began)

	before := w.snapshot()
	// One request at a time: the outcome of a case may depend on what an
	// earlier one did, so the order is the same on every run (and on two
	// shared cores running attackers side by side was not faster).
	type outcome struct {
		c       isoCase
		status  int
		body    string
		hdr     http.Header
		err     error
		stopped *isoCase // the case before a 401
	}
	var (
		seq        int
		violations []violation
		allowed    int
		refused    int
		total      int
		expected   int // cases refused by a handler's rule (look-alike names, owners)
	)
	outcomes := make([][]outcome, len(atts))
	for i, a := range atts {
		cases := w.generate(a, &seq)
		total += len(cases)
		for j, c := range cases {
			status, body, hdr, err := w.try(c.method, c.path, a.user.secret, c.body)
			o := outcome{c: c, status: status, body: body, hdr: hdr, err: err}
			if status == 401 && j > 0 {
				o.stopped = &cases[j-1]
			}
			outcomes[i] = append(outcomes[i], o)
			if err != nil || status == 401 {
				break // the attacker's later cases would prove nothing
			}
		}
	}
	var flat []outcome
	for _, os := range outcomes {
		flat = append(flat, os...)
	}
	for _, o := range flat {
		c, status, body, hdr := o.c, o.status, o.body, o.hdr
		if o.err != nil {
			t.Errorf("%s: no response: %v", c, o.err)
			continue
		}
		if status == 401 {
			// An attacker whose key stopped working would be refused
			// everything after: the run would prove nothing.
			t.Errorf("%s: 401: the attacker's key no longer authenticates (the case before: %v): %s", c, o.stopped, excerpt(body, 200))
			continue
		}
		if *isoTrace {
			t.Logf("%s -> %d %s", c, status, excerpt(body, 150))
		}
		switch {
		case status >= 500:
			violations = append(violations, violation{c, status, "5xx", body})
			continue
		case status < 200 || status >= 300:
			refused++
			if !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
				violations = append(violations, violation{c, status, "refusal not in the API's error body", body})
			}
			switch {
			case c.expect == 0:
			case status == c.expect:
				expected++
			case status != 403 && status != 404:
				violations = append(violations, violation{c, status, fmt.Sprintf("refused with %d, not the rule's %d", status, c.expect), body})
			}
			continue
		}
		allowed++
		if !c.allowed2xx() {
			why := "2xx on a foreign target"
			switch {
			case c.ea:
				why = "2xx on an entitlement administrator route"
			case c.foreign == "":
				why = "2xx on a global user route"
			}
			violations = append(violations, violation{c, status, why, body})
			continue
		}
		scrubbed := inviter.ReplaceAllString(rootParent.ReplaceAllString(body, ""), "")
		if strings.HasSuffix(c.path, "/audit-events") {
			scrubbed = operator.ReplaceAllString(scrubbed, "")
		}
		for _, m := range markers {
			if m != "" && strings.Contains(scrubbed, m) {
				violations = append(violations, violation{c, status, "response names " + strconv.Quote(m), body})
				break
			}
		}
		if strings.Contains(scrubbed, w.root) {
			violations = append(violations, violation{c, status, "response names the root account other than as A's parent", body})
		}
	}
	if expected == 0 {
		t.Error("no case renamed an account to a look-alike of another party's name or gave it another party's user as owner")
	}
	attack := time.Since(began) - setup
	w.quiet()
	after := w.snapshot()

	own := map[string]bool{w.a: true, w.a1: true}
	for _, a := range atts {
		own[a.user.id] = true
		own[a.user.keyID] = true
		own[a.user.bareID] = true
	}
	foreign := map[string]bool{}
	for _, m := range markers {
		if tokenRE.MatchString(m) && tokenRE.FindString(m) == m {
			foreign[m] = true
		}
	}
	changes := foreignChanges(before, after, own, foreign)

	t.Logf("isolation: %d cases (%d attackers, %d inventory paths x %d methods) in %v after a set-up (with the findings' replays) of %v: %d allowed (2xx), %d refused (%d by the name and owner rules); %d violations; %d foreign table changes",
		total, len(atts), countPaths(), len(isoMethods), attack.Round(time.Millisecond), setup.Round(time.Millisecond), allowed, refused, expected, len(violations), len(changes))
	reportViolations(t, violations, changes)
}

func countPaths() int {
	seen := map[string]bool{}
	for _, e := range apispec.Endpoints {
		seen[e.Path] = true
	}
	return len(seen)
}

// reportViolations prints each violation (capped) and a summary by class.
func reportViolations(t *testing.T, vs []violation, changes []string) {
	t.Helper()
	if len(vs) == 0 && len(changes) == 0 {
		return
	}
	const maxClasses = 80
	byClass := map[string][]violation{}
	var classes []string
	for _, v := range vs {
		k := v.why + " | " + v.c.class()
		if byClass[k] == nil {
			classes = append(classes, k)
		}
		byClass[k] = append(byClass[k], v)
	}
	sort.Strings(classes)
	var b strings.Builder
	fmt.Fprintf(&b, "%d violating cases in %d classes (violation | method route (what was foreign) xcount), with the first case of each:\n", len(vs), len(classes))
	for i, k := range classes {
		if i == maxClasses {
			fmt.Fprintf(&b, "  ... %d more classes\n", len(classes)-maxClasses)
			break
		}
		v := byClass[k][0]
		fmt.Fprintf(&b, "  %s x%d\n      %s -> %d %s\n", k, len(byClass[k]), v.c, v.status, excerpt(v.body, 120))
	}
	if len(changes) > 0 {
		fmt.Fprintf(&b, "%d table items outside A's subtree and the attackers' identities changed:\n", len(changes))
		for i, c := range changes {
			if i == 30 {
				fmt.Fprintf(&b, "  ... %d more\n", len(changes)-30)
				break
			}
			fmt.Fprintf(&b, "  %s\n", excerpt(c, 400))
		}
	}
	t.Error(b.String())
}

// ---------------------------------------------------------------- findings

// on is the world as seen from test t (a subtest): its set-up failures
// end t, not the test that built the world.
func (w *isoWorld) on(t *testing.T) *isoWorld {
	c := *w
	c.t = t
	return &c
}

// tenantRole makes an ordinary account of its own below the root (named
// name, owned by a new user) and has its owner give itself a custom role
// of it with the permits of permits(account) (method -> patterns), the way a hostile tenant
// did: the owner is given an everything role as A's owner was, leaves it,
// and keeps only the custom role and the account's Account owner role.
// It returns the owner and the account.
func (w *isoWorld) tenantRole(name, email string, permits func(account string) map[string][]string) (*isoUser, string) {
	w.t.Helper()
	account := w.must("account "+name, 200, "POST", "/v2/accounts", w.op, map[string]any{"name": "Tenant " + name}).str("id")
	m := w.newUser(name+" owner", email)
	_, ownerRole := w.roleNamed(account, "Account owner")
	w.invite(w.op, account, ownerRole, m)
	w.homeKey(m, account)
	all := w.must("everything role", 200, "POST", acct(account)+"/roles", m.secret, everything("Everything here", false))
	w.invite(m.secret, account, all.str("href"), m)
	w.must("leave the everything role", 200, "DELETE", "/v2/users/self/roles/"+all.str("id"), m.secret, nil)
	var perms []map[string]any
	for _, method := range isoMethods {
		if specs := permits(account)[method]; len(specs) > 0 {
			perms = append(perms, map[string]any{"method": method, "effect": "permit", "spec": specs})
		}
	}
	role := w.must("custom role", 200, "POST", acct(account)+"/roles", m.secret, map[string]any{"name": name, "permissions": perms})
	w.invite(m.secret, account, role.str("href"), m)
	return m, account
}

// refused requires a 403, or a 404 where the route hides what exists.
func refused(t *testing.T, r reply, what string) bool {
	t.Helper()
	if r.Status == 403 || r.Status == 404 {
		return true
	}
	t.Errorf("%s: %d, want 403 (or 404): %s", what, r.Status, excerpt(r.Raw, 300))
	return false
}

// unchanged requires that the table is exactly as before, but for the
// last_used of principal's keys.
func (w *isoWorld) unchanged(t *testing.T, before snapshot, principal string) {
	t.Helper()
	w.quiet()
	after := w.snapshot()
	var changes []string
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			changes = append(changes, k+" removed: "+b.canon)
		case a.canon != b.canon && !(b.pk == "PRINCIPAL#"+principal && keyUseOnly(b, a)):
			changes = append(changes, k+" changed:\n      before "+b.canon+"\n      after  "+a.canon)
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			changes = append(changes, k+" added: "+a.canon)
		}
	}
	sort.Strings(changes)
	if len(changes) > 0 {
		var b strings.Builder
		for i, c := range changes {
			if i == 20 {
				fmt.Fprintf(&b, "  ... %d more\n", len(changes)-20)
				break
			}
			fmt.Fprintf(&b, "  %s\n", excerpt(c, 300))
		}
		t.Errorf("%d items changed besides the attacker's own:\n%s", len(changes), b.String())
	}
}

// finding1TenantRoleOnUserRoutes replays finding 1 of the tenant
// isolation issue: a custom role of an ordinary account permitting user
// routes must not reach any user but the caller.
func finding1TenantRoleOnUserRoutes(t *testing.T, w *isoWorld) {
	w = w.on(t)
	m, _ := w.tenantRole("User admin", "owner@f1.example.com", func(string) map[string][]string {
		return map[string][]string{
			"POST":   {"/v2/users/*/access-keys"},
			"GET":    {"/v2/users/**"},
			"PATCH":  {"/v2/users/*"},
			"DELETE": {"/v2/users/*/access-keys/*"},
		}
	})
	w.quiet()
	before := w.snapshot()
	operator, victim := w.p.Bootstrap.Operator, w.users["victim"]

	t.Run("MintKeyForOperatorAndActAsOperator", func(t *testing.T) {
		r := w.do("POST", "/v2/users/"+operator+"/access-keys", m.secret, map[string]any{"type": "bearer"})
		if refused(t, r, "mint a key for the platform operator") {
			return
		}
		// The impact, as the tenant used it: the root account and a new
		// account, as the operator.
		s := w.do("POST", "/v2/users/self/authorization", r.str("secret_key"), map[string]any{"account": acct(w.root)})
		a := w.do("POST", "/v2/accounts", s.str("secret_key"), map[string]any{"name": "Made by a tenant"})
		t.Errorf("with the minted key: switch into the root account %d, create an account as the operator %d", s.Status, a.Status)
	})
	t.Run("MintKeyForOtherTenantOwnerAndReadItsApplications", func(t *testing.T) {
		r := w.do("POST", "/v2/users/"+victim.id+"/access-keys", m.secret, map[string]any{"type": "bearer"})
		if refused(t, r, "mint a key for B's owner") {
			return
		}
		s := w.do("POST", "/v2/users/self/authorization", r.str("secret_key"), map[string]any{"account": acct(w.b)})
		apps := w.do("GET", "/v2/applications", s.str("secret_key"), nil)
		t.Errorf("with the minted key: switch into B %d, read B's applications %d: %s", s.Status, apps.Status, excerpt(apps.Raw, 200))
	})
	t.Run("RenameOperator", func(t *testing.T) {
		refused(t, w.do("PATCH", "/v2/users/"+operator, m.secret, map[string]any{"name": "Renamed by a tenant"}), "rename the platform operator")
	})
	t.Run("DeleteOtherTenantServiceUserKey", func(t *testing.T) {
		refused(t, w.do("DELETE", "/v2/users/"+w.id["suB"]+"/access-keys/"+w.id["suKeyB"], m.secret, nil), "delete B's service-user key")
	})
	t.Run("ListEveryUsersEmail", func(t *testing.T) {
		refused(t, w.do("GET", "/v2/users", m.secret, nil), "list the installation's users")
		// "/v2/users/**" does not match the collection itself: the
		// emails are read one user at a time, by ids the tenant sees.
		for who, id := range map[string]string{"the operator": operator, "B's owner": victim.id, "B's member": w.users["bpeer"].id,
			"B's service user": w.id["suB"], "the owner of A1": w.users["ownerA1"].id} {
			refused(t, w.do("GET", "/v2/users/"+id, m.secret, nil), "read the user record of "+who)
		}
	})
	t.Run("NoChange", func(t *testing.T) { w.unchanged(t, before, m.id) })
}

// TestFinding2_TenantRoleOnEntitlementAdministratorRoutes replays finding
// 2: a custom role permitting account creation and entitlement writes
// grants neither; only the entitlement administrator role does.
func finding2TenantRoleOnEntitlementAdministratorRoutes(t *testing.T, w *isoWorld) {
	w = w.on(t)
	m, own := w.tenantRole("Account admin", "owner@f2.example.com", func(account string) map[string][]string {
		return map[string][]string{"POST": {"/v2/accounts", "/v2/accounts/" + account + "/entitlements"}}
	})
	w.quiet()
	before := w.snapshot()

	t.Run("CreateSubAccount", func(t *testing.T) {
		refused(t, w.do("POST", "/v2/accounts", m.secret, map[string]any{"name": "Shadow account"}), "create a sub-account of the tenant's account")
	})
	t.Run("GrantOwnAccountEntitlement", func(t *testing.T) {
		refused(t, w.do("POST", acct(own)+"/entitlements", m.secret, map[string]any{"resource": "applications", "quantity": 100000}),
			"give the tenant's account an entitlement of 100,000 applications")
	})
	// Stricter than the invariant: not even the tenant's own items may
	// change.
	t.Run("NoChange", func(t *testing.T) { w.unchanged(t, before, m.id) })
}

// Every path parameter of the inventory is a kind the invariant knows how
// to fill with another party's id: a route that introduces a new kind of
// resource fails here, rather than being tried with no foreign ids at
// all. Teach paramKind the kind and give the world one of it per party.
func TestIsolationKnowsEveryPathParameter(t *testing.T) {
	// The check itself: a made-up resource is an unknown kind.
	if ps := pathParams("/v2/widgets/{id}"); len(ps) != 1 || !strings.HasPrefix(ps[0].kind, "unknown:") {
		t.Fatalf("a new kind of resource is not recognised as unknown: %+v", ps)
	}
	for _, e := range apispec.Endpoints {
		for _, p := range pathParams(e.Path) {
			if strings.HasPrefix(p.kind, "unknown:") {
				t.Errorf("%s %s: parameter {%s} is of a kind the isolation invariant cannot fill (%s)", e.Method, e.Path, p.name, p.kind)
			}
		}
	}
}
