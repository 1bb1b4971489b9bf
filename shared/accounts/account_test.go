package accounts_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cads/shared/authz"
	"cads/shared/domain"
)

// errOwner is the one message of every refused owner.
const errOwner = "owner must be the href (/v2/users/<id>) of a user who holds a role that applies in this account: an accepted invitation to a role of the account, or to an inheritable role of an account above it"

// holdInheritable gives user an inheritable role of the root account: a
// role that applies in every sub-account.
func (e *env) holdInheritable(user string) {
	e.t.Helper()
	ctx := context.Background()
	now := e.st.Now()
	role := domain.Role{AccountID: e.boot.RootAccount, ID: "inh" + user, Name: "Support " + user, Inheritable: true, Version: 1, Created: now, Updated: now}
	if err := e.st.Roles.CreateRole(ctx, role); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: user, AccountID: role.AccountID, RoleID: role.ID, Via: "test", Created: now}); err != nil {
		e.t.Fatal(err)
	}
}

func TestCreateAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	e.holdInheritable("u1")
	if err := e.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u2", Kind: domain.KindUser, Email: "u2@example.com"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", domain.AccountNameMaxRunes+1)
	for _, c := range []struct {
		name, body, ct string
		want           int
		msg            string
	}{
		{"no body", "", "application/json", 400, "a JSON request body is required"},
		{"not JSON", "{", "application/json", 400, "invalid JSON body"},
		{"wrong content type", `{"name":"x"}`, "text/plain", 415, "text/plain"},
		{"no name", `{}`, "", 400, "name is required"},
		{"parent", `{"name":"Child","parent":"/v2/accounts/x"}`, "", 400, "parent cannot be set: a new account is a sub-account of the account you are authenticated into"},
		{"parent null", `{"name":"Child","parent":null}`, "", 400, "parent cannot be set"},
		{"unknown field", `{"name":"Child","color":"red"}`, "", 400, `unknown field "color"`},
		{"name not a string", `{"name":5}`, "", 400, `field "name" must be a string`},
		{"blank name", `{"name":"   "}`, "", 400, "name must not be empty"},
		{"long name", jsonBody(map[string]string{"name": long}), "", 400, "at most 100 characters"},
		{"control character", `{"name":"a\u0007b"}`, "", 400, "control characters"},
		{"bad keyword", `{"name":"Child","keyword":"Not OK"}`, "", 400, "keyword must be"},
		{"owner not an href", `{"name":"Child","owner":"u1"}`, "", 400, errOwner},
		{"owner unknown", `{"name":"Child","owner":"/v2/users/nobody"}`, "", 400, errOwner},
		{"owner without a role above", `{"name":"Child","owner":"/v2/users/u2"}`, "", 400, errOwner},
		{"look-alike of root", `{"name":"Platform\u200b OPERATOR"}`, "", 409, "reads the same"},
		{"retention type", `{"name":"Child","log_retention":[{"type":"access"}]}`, "", 400, `log_retention[0].type is required and must be "events"`},
		{"retention days", `{"name":"Child","log_retention":[{"type":"events","online_days":0}]}`, "", 400, "log_retention[0].online_days must be an integer from 1"},
		{"retention twice", `{"name":"Child","log_retention":[{"type":"events"},{"type":"events"}]}`, "", 400, "given twice"},
		{"duplicate of root", `{"name":"PLATFORM OPERATOR"}`, "", 409, `an account named "PLATFORM OPERATOR" already exists`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ct := c.ct
			if ct == "" {
				ct = "application/json"
			}
			r := e.callCT(e.op, "POST", "/v2/accounts", c.body, ct)
			if r.Status != c.want || !strings.Contains(r.message(), c.msg) {
				t.Fatalf("%d %s, want %d with %q", r.Status, r.Raw, c.want, c.msg)
			}
		})
	}

	r := e.call(e.op, "POST", "/v2/accounts", `{"name":"  Éxito S.A. ","owner":"/v2/users/u1","log_retention":[{"type":"events","online_days":30}]}`)
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	id := r.str("id")
	want := fmt.Sprintf(`{"id":%q,"href":"/v2/accounts/%s","name":"Éxito S.A.","keyword":"exito-s-a","owner":"/v2/users/u1","log_retention":[{"type":"events","online_days":30}],"parent":"/v2/accounts/%s",`, id, id, e.boot.RootAccount)
	if !strings.HasPrefix(r.Raw, want) {
		t.Fatalf("body\n%s\nwant prefix\n%s", r.Raw, want)
	}
	// docs/api.md#sub-accounts: three control roles, nobody invited to them.
	roles, err := e.st.Roles.RolesOf(ctx, []string{id})
	if err != nil || len(roles) != 3 {
		t.Fatalf("roles of the new account: %+v %v", roles, err)
	}
	names := map[string]bool{}
	for _, ro := range roles {
		names[ro.Name] = ro.Control && !ro.Inheritable && ro.Version == 1
	}
	if !names["Account owner"] || !names["Editor"] || !names["Reader"] {
		t.Fatalf("control roles: %+v", roles)
	}
	grants, _ := e.st.Roles.Grants(ctx, e.boot.Operator)
	for _, g := range grants {
		if g.AccountID == id {
			t.Fatalf("someone was given a role of the new account: %+v", g)
		}
	}
	// Same name in other case and composed differently: 409.
	if r := e.call(e.op, "POST", "/v2/accounts", `{"name":"E\u0301XITO S.A."}`); r.Status != 409 {
		t.Fatalf("duplicate name: %d %s", r.Status, r.Raw)
	}
	// A sub-account of the new account, created while authenticated in it.
	r = e.call(e.in(id), "POST", "/v2/accounts", `{"name":"日本","keyword":"nihon"}`)
	if r.Status != 200 || r.str("parent") != "/v2/accounts/"+id || r.str("keyword") != "nihon" {
		t.Fatalf("grandchild: %d %s", r.Status, r.Raw)
	}
	// Nothing of the name survives transliteration: the id is the keyword.
	r = e.call(e.in(id), "POST", "/v2/accounts", `{"name":"中国"}`)
	if r.Status != 200 || r.str("keyword") != r.str("id") {
		t.Fatalf("keyword fallback: %d %s", r.Status, r.Raw)
	}
	// A key in no account cannot create one.
	none := e.op
	none.AccountID = ""
	if r := e.call(none, "POST", "/v2/accounts", `{"name":"Nowhere"}`); r.Status != 403 {
		t.Fatalf("no account: %d %s", r.Status, r.Raw)
	}
}

// Many concurrent creates of one name: exactly one wins, the others get
// 409, and only one account exists afterwards.
func TestCreateAccountNameRace(t *testing.T) {
	e := newEnv(t)
	const n = 24
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	for i := range n {
		wg.Go(func() {
			// One name, in look-alike forms (Cyrillic а, a zero-width
			// space, full-width letters).
			r := e.call(e.op, "POST", "/v2/accounts", fmt.Sprintf(`{"name":%q}`, []string{"Racer", "racer", "RACER", "Rаcer", "Ra\u200bcer", "ＲＡＣＥＲ"}[i%6]))
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[200] != 1 || statuses[409] != n-1 {
		t.Fatalf("statuses %v, want one 200 and %d 409", statuses, n-1)
	}
	kids, err := e.children(e.boot.RootAccount)
	if err != nil || len(kids) != 1 {
		t.Fatalf("accounts under root: %d %v", len(kids), err)
	}
}

func TestGetPatchAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.root()
	a := e.account(root, "Alpha", time.Now().UTC())
	e.account(root, "Beta", time.Now().UTC())
	for _, u := range []string{"u1", "u2"} {
		if err := e.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: u, Kind: domain.KindUser, Email: u + "@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	e.holdInheritable("u1")
	path := "/v2/accounts/" + a.ID

	r := e.call(e.op, "GET", path, "")
	if r.Status != 200 || r.str("name") != "Alpha" || r.str("parent") != "/v2/accounts/"+root.ID {
		t.Fatalf("GET: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "GET", "/v2/accounts/"+root.ID, ""); r.Status != 200 || r.Obj["parent"] != nil || r.str("owner") != "/v2/users/"+e.boot.Operator {
		t.Fatalf("GET root: %d %s", r.Status, r.Raw)
	}
	for _, c := range []struct {
		name, path, body string
		want             int
		msg              string
	}{
		{"unknown account", "/v2/accounts/nosuchaccount", "", 404, "no account"},
		{"invalid id", "/v2/accounts/NOT-AN-ID", "", 404, "no account"},
	} {
		if r := e.call(e.op, "GET", c.path, c.body); r.Status != c.want || !strings.Contains(r.message(), c.msg) {
			t.Errorf("GET %s: %d %s", c.name, r.Status, r.Raw)
		}
	}
	for _, c := range []struct {
		name, body string
		want       int
		msg        string
	}{
		{"empty", `{}`, 400, "nothing to change"},
		{"parent", `{"parent":"/v2/accounts/x"}`, 400, "parent cannot be changed"},
		{"id", `{"id":"x"}`, 400, `unknown field "id"`},
		{"taken name", `{"name":"beta"}`, 409, `an account named "beta" already exists`},
		{"bad owner", `{"owner":"/v2/users/ghost"}`, 400, errOwner},
		{"owner without a role", `{"owner":"/v2/users/u2"}`, 400, errOwner},
		{"look-alike name", `{"name":"bеta"}`, 409, "reads the same"},
		{"bad retention", `{"log_retention":[{"type":"events","archive_days":99999999}]}`, 400, "archive_days"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := e.call(e.op, "PATCH", path, c.body); r.Status != c.want || !strings.Contains(r.message(), c.msg) {
				t.Fatalf("%d %s, want %d with %q", r.Status, r.Raw, c.want, c.msg)
			}
		})
	}
	r = e.call(e.op, "PATCH", path, `{"name":"Alpha Two","owner":"/v2/users/u1","log_retention":[{"type":"events","archive_days":365}]}`)
	if r.Status != 200 || r.str("name") != "Alpha Two" || r.str("keyword") != "alpha" || r.str("owner") != "/v2/users/u1" {
		t.Fatalf("PATCH: %d %s", r.Status, r.Raw)
	}
	r = e.call(e.op, "PATCH", path, `{"owner":null,"log_retention":null,"keyword":"alpha-two"}`)
	if _, has := r.Obj["owner"]; r.Status != 200 || has || len(r.Obj["log_retention"].([]any)) != 0 || r.str("keyword") != "alpha-two" {
		// No owner is an absent member, not null: the reference
		// document's owner is a string.
		t.Fatalf("PATCH clearing: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "GET", path, ""); r.Status != 200 || r.str("name") != "Alpha Two" || r.Obj["owner"] != nil {
		t.Fatalf("GET after PATCH: %d %s", r.Status, r.Raw)
	}
	// The old name is free, the new one taken.
	if r := e.call(e.op, "POST", "/v2/accounts", `{"name":"alpha"}`); r.Status != 200 {
		t.Fatalf("old name after rename: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "POST", "/v2/accounts", `{"name":"ALPHA TWO"}`); r.Status != 409 {
		t.Fatalf("new name after rename: %d %s", r.Status, r.Raw)
	}
	if r := e.call(e.op, "PATCH", "/v2/accounts/nosuchaccount", `{"name":"x"}`); r.Status != 404 {
		t.Fatalf("PATCH unknown: %d %s", r.Status, r.Raw)
	}
}

func TestDeleteAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.root()
	parent := e.account(root, "Parent", time.Now().UTC())
	child := e.account(parent, "Child", time.Now().UTC())

	for _, c := range []struct {
		name, id string
		want     int
		msg      string
	}{
		{"root", root.ID, 409, "is the root of the account tree"},
		{"unknown", "nosuchaccount", 404, "no account"},
		{"has a sub-account", parent.ID, 409, "account " + parent.ID + " still has sub-accounts; delete them first"},
	} {
		if r := e.call(e.op, "DELETE", "/v2/accounts/"+c.id, ""); r.Status != c.want || !strings.Contains(r.message(), c.msg) {
			t.Errorf("DELETE %s: %d %s", c.name, r.Status, r.Raw)
		}
	}
	// A refused delete leaves the account usable.
	if r := e.call(e.in(parent.ID), "POST", "/v2/accounts", `{"name":"Second child"}`); r.Status != 200 {
		t.Fatalf("create under a parent whose delete was refused: %d %s", r.Status, r.Raw)
	}
	second, _ := e.children(parent.ID)

	// A session key of the operator in the child, and an entitlement.
	if err := e.st.Principals.CreateKey(ctx, domain.AccessKey{ID: "session", PrincipalID: e.boot.Operator, Type: "bearer", Durability: domain.DurabilitySession,
		Account: child.ID, AccountAncestors: child.Ancestors}); err != nil {
		t.Fatal(err)
	}
	if r := e.call(e.op, "POST", "/v2/accounts/"+child.ID+"/entitlements", `{"resource":"applications","quantity":1}`); r.Status != 200 {
		t.Fatalf("entitlement: %d %s", r.Status, r.Raw)
	}
	r := e.call(e.op, "DELETE", "/v2/accounts/"+child.ID, "")
	if r.Status != 200 || r.str("id") != child.ID || r.str("name") != "Child" {
		t.Fatalf("DELETE child: %d %s", r.Status, r.Raw)
	}
	if _, err := e.st.Principals.GetKey(ctx, e.boot.Operator, "session"); err == nil {
		t.Fatal("the key bound to the deleted account survives")
	}
	if r := e.call(e.op, "GET", "/v2/accounts/"+child.ID, ""); r.Status != 404 {
		t.Fatalf("GET deleted: %d %s", r.Status, r.Raw)
	}
	for _, c := range second {
		if c.ID == child.ID {
			continue
		}
		if r := e.call(e.op, "DELETE", "/v2/accounts/"+c.ID, ""); r.Status != 200 {
			t.Fatalf("DELETE second child: %d %s", r.Status, r.Raw)
		}
	}
	if r := e.call(e.op, "DELETE", "/v2/accounts/"+parent.ID, ""); r.Status != 200 {
		t.Fatalf("DELETE emptied parent: %d %s", r.Status, r.Raw)
	}
	// Names of deleted accounts can be used again.
	if r := e.call(e.op, "POST", "/v2/accounts", `{"name":"Child"}`); r.Status != 200 {
		t.Fatalf("reuse a deleted account's name: %d %s", r.Status, r.Raw)
	}
}

func TestListAccounts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.root()
	now := time.Now().UTC()
	a := e.account(root, "A", now)
	a1 := e.account(a, "A1", now.Add(time.Millisecond))
	a11 := e.account(a1, "A11", now.Add(2*time.Millisecond))
	b := e.account(root, "B", now.Add(3*time.Millisecond))

	// The operator (entitlement administrator in root, inheritable pair)
	// sees the whole tree.
	r := e.call(e.op, "GET", "/v2/accounts?order=name", "")
	if r.Status != 200 {
		t.Fatalf("list: %d %s", r.Status, r.Raw)
	}
	if got := names(r); got != "A,A1,A11,B,Platform operator" {
		t.Fatalf("operator sees %s", got)
	}
	if r := e.call(e.op, "GET", "/v2/accounts?order=-name&limit=2&start=2", ""); names(r) != "B,A11" {
		t.Fatalf("window: %s", r.Raw)
	}
	if r := e.call(e.op, "GET", "/v2/accounts?order=color", ""); r.Status != 400 {
		t.Fatalf("bad order: %d", r.Status)
	}

	// A user who owns A1 (a non-inheritable role) sees A1 only, whatever
	// account the key is in; an inheritable role in A shows A's subtree
	// below A, not A itself.
	if err := e.st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com"}); err != nil {
		t.Fatal(err)
	}
	roles, _ := e.st.Roles.RolesOf(ctx, []string{a1.ID})
	for _, ro := range roles {
		if ro.Name == "Account owner" {
			if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: a1.ID, RoleID: ro.ID, Via: "test"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	u := e.op
	u.ID, u.Email, u.AccountID = "u1", "u1@example.com", a1.ID
	if r := e.call(u, "GET", "/v2/accounts", ""); names(r) != "A1" {
		t.Fatalf("owner of A1 sees %s", names(r))
	}
	support := domain.Role{AccountID: a.ID, ID: "support", Name: "Support", Inheritable: true, Version: 1,
		Permissions: []authz.Permission{{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/*"}}}}
	if err := e.st.Roles.CreateRole(ctx, support); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: a.ID, RoleID: "support", Via: "test"}); err != nil {
		t.Fatal(err)
	}
	if r := e.call(u, "GET", "/v2/accounts?order=name", ""); names(r) != "A1,A11" {
		t.Fatalf("owner of A1 with Support in A sees %s", names(r))
	}
	_ = b
	_ = a11
}

func names(r resp) string {
	var out []string
	for _, x := range r.List {
		out = append(out, x.(map[string]any)["name"].(string))
	}
	return strings.Join(out, ",")
}
