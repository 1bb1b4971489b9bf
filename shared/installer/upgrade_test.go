package installer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/access"
	"cads/shared/authz"
	"cads/shared/bootstrap"
	"cads/shared/builtin"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/installer"
	"cads/shared/store"
)

// revision1 are the control roles as the first revision defined them
// (before metric prototypes, log schemas and archived logs), as a stack
// installed then holds them: no builtin key, no revision.
func revision1(acct string) map[string][]authz.Permission {
	p := func(m string, spec ...string) authz.Permission {
		for i, s := range spec {
			spec[i] = strings.ReplaceAll(s, "{a}", acct)
		}
		return authz.Permission{Method: m, Effect: "permit", Spec: spec}
	}
	get := func() authz.Permission {
		return p("GET", "/v2/accounts", "/v2/accounts/{a}", "/v2/accounts/{a}/**", "/v2/applications**", "/v2/address-sets**", "/v2/tests**", "/v2/tasks**")
	}
	return map[string][]authz.Permission{
		"Account owner": {p("GET", "/v2/accounts/{a}"), get(),
			p("PATCH", "/v2/accounts/{a}", "/v2/accounts/{a}/roles/*", "/v2/accounts/{a}/invitations/*", "/v2/accounts/{a}/groups/*", "/v2/accounts/{a}/group-invitations/*", "/v2/accounts/{a}/service-users/*", "/v2/applications**", "/v2/address-sets**", "/v2/tests/*"),
			p("POST", "/v2/accounts/{a}/roles", "/v2/accounts/{a}/invitations", "/v2/accounts/{a}/groups", "/v2/accounts/{a}/group-invitations", "/v2/accounts/{a}/service-users", "/v2/applications**", "/v2/address-sets", "/v2/tests", "/v2/tasks"),
			p("PUT", "/v2/applications/*", "/v2/tests/*"),
			p("DELETE", "/v2/accounts/{a}/roles/*", "/v2/accounts/{a}/invitations/*", "/v2/accounts/{a}/groups/*", "/v2/accounts/{a}/group-invitations/*", "/v2/accounts/{a}/service-users/*", "/v2/applications**", "/v2/address-sets/*", "/v2/tests/*")},
		"Editor": {p("GET", "/v2/accounts/{a}"), get(),
			p("POST", "/v2/applications**", "/v2/address-sets", "/v2/tests", "/v2/tasks"),
			p("PATCH", "/v2/applications**", "/v2/address-sets/*", "/v2/tests/*"),
			p("PUT", "/v2/applications/*", "/v2/tests/*"),
			p("DELETE", "/v2/applications**", "/v2/address-sets/*", "/v2/tests/*")},
		"Reader": {p("GET", "/v2/accounts/{a}"), get()},
	}
}

const editorRev1 = "Reads everything; creates, updates and deletes applications, actions, address sets, tests and tasks"

// legacyRoles are an account's control roles as revision 1 wrote them.
func legacyRoles(acct string, now time.Time) []domain.Role {
	var out []domain.Role
	for _, name := range []string{"Account owner", "Editor", "Reader"} {
		desc := map[string]string{"Account owner": "Manages every resource of the account, including its roles and invitations",
			"Editor": editorRev1, "Reader": "Reads every resource of the account"}[name]
		out = append(out, domain.Role{AccountID: acct, ID: ids.New(), Name: name, Description: desc, Control: true,
			Permissions: revision1(acct)[name], Version: 1, Created: now, Updated: now})
	}
	return out
}

func grantSet(ps []authz.Permission) []string {
	var out []string
	for _, p := range ps {
		for _, s := range p.Spec {
			out = append(out, p.Method+" "+p.Effect+" "+s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// upgradeFixture is an installation as the first revision left it: the
// root account's control roles and n tenant accounts with revision-1
// control roles, a tenant's custom role named like a control one, an
// edited control role, and no record of any upgrade.
type upgradeFixture struct {
	root     string
	accounts []string
	custom   domain.Role
	edited   domain.Role
}

func installRevision1(t *testing.T, e *env, n int) upgradeFixture {
	t.Helper()
	ctx := context.Background()
	created := e.send(t, cfn.RequestCreate, "", props())
	if created.Status != cfn.StatusSuccess {
		t.Fatalf("Create: %s %s", created.Status, created.Reason)
	}
	f := upgradeFixture{root: created.Data["RootAccount"].(string)}
	// The root account's control roles back to revision 1.
	roles, err := e.st.Roles.RolesOf(ctx, []string{f.root})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if !r.Control {
			continue
		}
		r.Permissions, r.Builtin, r.BuiltinRevision, r.Version = revision1(f.root)[r.Name], "", 0, r.Version+1
		if err := e.st.Roles.PutRole(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.db.Table), Key: map[string]types.AttributeValue{
		store.AttrPK: &types.AttributeValueMemberS{Value: "INSTALLATION"}, store.AttrSK: &types.AttributeValueMemberS{Value: "ROLESUPGRADE"}}})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Truncate(time.Millisecond)
	for i := range n {
		now := base.Add(time.Duration(i) * time.Millisecond)
		a := domain.AccountRecord{Account: domain.Account{ID: ids.New(), Name: fmt.Sprintf("Tenant %d", i), Keyword: fmt.Sprintf("tenant %d", i),
			Parent: f.root, Ancestors: []string{f.root}, Created: now, Updated: now}}
		rs := legacyRoles(a.ID, now)
		if i == 0 {
			// An administrator took tasks out of Reader, added a deny and
			// wrote their own description.
			r := &rs[2]
			r.Permissions[1].Spec = slices.DeleteFunc(slices.Clone(r.Permissions[1].Spec), func(s string) bool { return s == "/v2/tasks**" })
			r.Permissions = append(r.Permissions, authz.Permission{Method: "GET", Effect: "deny", Spec: []string{"/v2/applications/secret"}})
			r.Description = "Auditors"
			f.edited = *r
		}
		if err := e.st.Accounts.CreateSubAccount(ctx, a, rs); err != nil {
			t.Fatal(err)
		}
		f.accounts = append(f.accounts, a.ID)
		if i == 1 {
			// A tenant's own role, named like a control role before such
			// names were refused: never the platform's to change.
			f.custom = domain.Role{AccountID: a.ID, ID: ids.New(), Name: "Reader", Permissions: revision1(a.ID)["Reader"], Version: 1, Created: now, Updated: now}
			if err := e.st.Roles.CreateRole(ctx, f.custom); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f
}

// A stack updated in place: the Update the new revision causes brings
// every account's control roles (and the operator's roles) to the current
// definitions, keeps what administrators changed, leaves tenants' own
// roles alone, and a second Update changes nothing.
func TestUpdateUpgradesBuiltinRoles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f := installRevision1(t, e, 5)
	authorizer := access.New(access.NewStore(e.st), slog.New(slog.DiscardHandler))
	secret := e.secret(t)
	// The operator holds the root account's Account owner role.
	if res, err := authorizer.Authorize(ctx, secret, "GET", "/v2/log-schemas"); err != nil || res.Decision.Allowed {
		t.Fatalf("before the upgrade, a revision-1 Account owner reads log schemas: %+v %v", res.Decision, err)
	}

	got := e.send(t, cfn.RequestUpdate, "installation/"+f.root, props())
	if got.Status != cfn.StatusSuccess || got.Data["BuiltinRolesRevision"] != float64(builtin.Revision()) {
		t.Fatalf("Update: %s %q %v", got.Status, got.Reason, got.Data)
	}
	if res, err := authorizer.Authorize(ctx, secret, "GET", "/v2/log-schemas"); err != nil || !res.Decision.Allowed {
		t.Fatalf("after the upgrade, the Account owner cannot read log schemas: %+v %v", res.Decision, err)
	}

	roles, err := e.st.Roles.RolesOf(ctx, append([]string{f.root}, f.accounts...))
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]int{}
	controls := 0
	for _, r := range roles {
		versions[r.ID] = r.Version
		switch {
		case r.ID == f.custom.ID:
			if r.Version != 1 || r.Builtin != "" || !slices.Equal(grantSet(r.Permissions), grantSet(f.custom.Permissions)) {
				t.Errorf("the tenant's own role %q was changed: %+v", r.Name, r)
			}
			continue
		case !r.Control && !r.EntitlementAdministrator:
			t.Errorf("unexpected role %+v", r)
			continue
		}
		if r.BuiltinRevision != builtin.Revision() || r.Builtin == "" {
			t.Errorf("role %q of %s at revision %d (%q)", r.Name, r.AccountID, r.BuiltinRevision, r.Builtin)
		}
		if !r.Control {
			continue
		}
		controls++
		var def builtin.Definition
		defs, _ := builtin.ControlRoles(r.AccountID)
		for _, d := range defs {
			if d.Name == r.Name {
				def = d
			}
		}
		if r.ID == f.edited.ID {
			g := strings.Join(grantSet(r.Permissions), "\n")
			for _, want := range []string{"GET permit /v2/log-schemas", "GET permit /v2/metric-prototypes**", "GET permit /v2/archived-logs**", "GET deny /v2/applications/secret"} {
				if !strings.Contains(g, want) {
					t.Errorf("edited Reader lacks %q:\n%s", want, g)
				}
			}
			if strings.Contains(g, "/v2/tasks**") || r.Description != "Auditors" {
				t.Errorf("the administrators' edits were undone: %q\n%s", r.Description, g)
			}
			continue
		}
		if !slices.Equal(grantSet(r.Permissions), grantSet(def.Permissions)) || r.Description != def.Description {
			t.Errorf("role %q of %s not as defined:\n got %v %q\nwant %v %q", r.Name, r.AccountID, grantSet(r.Permissions), r.Description, grantSet(def.Permissions), def.Description)
		}
	}
	if controls != 3*(1+len(f.accounts)) {
		t.Errorf("%d control roles, want %d", controls, 3*(1+len(f.accounts)))
	}
	if !strings.Contains(e.logs.String(), "roles upgrade: progress") || !strings.Contains(e.logs.String(), "roles upgrade: role upgraded") {
		t.Errorf("no progress in the logs:\n%s", e.logs.String())
	}

	// Idempotent: the next Update reads the record and writes nothing.
	items := e.items(t)
	if got := e.send(t, cfn.RequestUpdate, "installation/"+f.root, props()); got.Status != cfn.StatusSuccess {
		t.Fatalf("second Update: %s %q", got.Status, got.Reason)
	}
	again, err := e.st.Roles.RolesOf(ctx, append([]string{f.root}, f.accounts...))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if r.Version != versions[r.ID] {
			t.Errorf("second Update rewrote role %q of %s", r.Name, r.AccountID)
		}
	}
	if n := e.items(t); n != items {
		t.Errorf("second Update: %d items, want %d", n, items)
	}
}

// Bounded and resumable: a run that stops after a page records where, the
// next run goes on from there without redoing the accounts done, and an
// account created meanwhile by older code is reached too.
func TestRolesUpgradeResumes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f := installRevision1(t, e, 5)
	log := slog.New(slog.DiscardHandler)

	// Accounts in creation order: the root, then the tenants. Pages of 2.
	first, err := bootstrap.UpgradeRoles(ctx, e.st, log, bootstrap.UpgradeOptions{PageSize: 2, MaxPages: 1})
	if err != nil || first.Done || first.Accounts != 2 || first.Progress.After == "" {
		t.Fatalf("first run: %+v %v", first, err)
	}
	rev := func(acct string) []int {
		rs, err := e.st.Roles.RolesOf(ctx, []string{acct})
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, r := range rs {
			if r.Control {
				out = append(out, r.BuiltinRevision)
			}
		}
		return out
	}
	cur := builtin.Revision()
	for i, acct := range append([]string{f.root}, f.accounts...) {
		want := 0
		if i < 2 {
			want = cur
		}
		if got := rev(acct); !slices.Equal(got, []int{want, want, want}) {
			t.Errorf("after one page, account %d's control roles are at %v, want %d", i, got, want)
		}
	}
	done, err := e.st.Roles.RolesOf(ctx, []string{f.root, f.accounts[0]})
	if err != nil {
		t.Fatal(err)
	}

	// An account older code made after the first run.
	late := domain.AccountRecord{Account: domain.Account{ID: ids.New(), Name: "Late", Keyword: "late", Parent: f.root, Ancestors: []string{f.root},
		Created: time.Now().UTC().Add(time.Second), Updated: time.Now().UTC()}}
	if err := e.st.Accounts.CreateSubAccount(ctx, late, legacyRoles(late.ID, late.Created)); err != nil {
		t.Fatal(err)
	}

	second, err := bootstrap.UpgradeRoles(ctx, e.st, log, bootstrap.UpgradeOptions{PageSize: 2})
	if err != nil || !second.Done || second.Accounts != 5 || second.Progress.Accounts != 7 {
		t.Fatalf("second run: %+v %v", second, err)
	}
	for _, acct := range append(f.accounts, late.ID) {
		if got := rev(acct); !slices.Equal(got, []int{cur, cur, cur}) {
			t.Errorf("account %s's control roles at %v", acct, got)
		}
	}
	after, err := e.st.Roles.RolesOf(ctx, []string{f.root, f.accounts[0]})
	if err != nil {
		t.Fatal(err)
	}
	was := map[string]int{}
	for _, r := range done {
		was[r.ID] = r.Version
	}
	for _, r := range after {
		if r.Version != was[r.ID] {
			t.Errorf("the second run rewrote role %q of %s, done by the first", r.Name, r.AccountID)
		}
	}
	// A third run: one read, nothing else.
	third, err := bootstrap.UpgradeRoles(ctx, e.st, log, bootstrap.UpgradeOptions{PageSize: 2})
	if err != nil || !third.Done || third.Accounts != 0 {
		t.Fatalf("third run: %+v %v", third, err)
	}
}

// A run out of time fails the deployment rather than ending silently,
// and the progress it made stays for the next one.
func TestUpdateOutOfTimeFailsAndKeepsProgress(t *testing.T) {
	e := newEnv(t)
	f := installRevision1(t, e, 2)
	// A deadline inside the installer's margins: no page can start.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := cfn.Event{RequestType: cfn.RequestUpdate, RequestID: "req", ResponseURL: e.cfURL + "/r", ResourceType: "Custom::Installation",
		PhysicalResourceID: "installation/" + f.root, LogicalResourceID: "Installation", StackID: "arn:aws:cloudformation:us-east-1:123456789012:stack/cads/x",
		ResourceProperties: props(), OldResourceProperties: props()}
	if _, err := e.run(ctx, ev); err != nil {
		t.Fatal(err)
	}
	got := e.cf.last(t)
	if got.Status != cfn.StatusFailed || !strings.Contains(got.Reason, "deploy again") {
		t.Fatalf("Update out of time: %s %q", got.Status, got.Reason)
	}
	if got := e.send(t, cfn.RequestUpdate, "installation/"+f.root, props()); got.Status != cfn.StatusSuccess {
		t.Fatalf("the next Update: %s %q", got.Status, got.Reason)
	}
}

// A stack from before GSI2: its accounts carry no GSI2 keys, which the
// roles upgrade pages through. The Update migrates them first, so every
// account's roles are upgraded.
func TestUpdateMigratesBeforeUpgradingRoles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f := installRevision1(t, e, 2)
	out, err := e.db.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.db.Table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if ent, _ := it["entity"].(*types.AttributeValueMemberS); ent == nil || ent.Value != "account" {
			continue
		}
		delete(it, store.AttrGSI2PK)
		delete(it, store.AttrGSI2SK)
		if _, err := e.db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.db.Table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.db.Table), Key: map[string]types.AttributeValue{
		store.AttrPK: &types.AttributeValueMemberS{Value: "INSTALLATION"}, store.AttrSK: &types.AttributeValueMemberS{Value: "SCHEMAMIGRATION"}}}); err != nil {
		t.Fatal(err)
	}
	if accts, _, _, err := e.st.Accounts.PageAccounts(ctx, "", false, 10); err != nil || len(accts) != 0 {
		t.Fatalf("the aged table lists %d accounts (%v)", len(accts), err)
	}

	got := e.send(t, cfn.RequestUpdate, "installation/"+f.root, props())
	if got.Status != cfn.StatusSuccess || got.Data["SchemaVersion"] != float64(store.SchemaVersion) {
		t.Fatalf("Update: %s %q %v", got.Status, got.Reason, got.Data)
	}
	if accts, _, _, err := e.st.Accounts.PageAccounts(ctx, "", false, 10); err != nil || len(accts) != 3 {
		t.Fatalf("after the Update the accounts list holds %d accounts (%v), want 3", len(accts), err)
	}
	roles, err := e.st.Roles.RolesOf(ctx, append([]string{f.root}, f.accounts...))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if r.Control && r.BuiltinRevision != builtin.Revision() {
			t.Errorf("control role %q of %s at revision %d, want %d", r.Name, r.AccountID, r.BuiltinRevision, builtin.Revision())
		}
	}
	if !strings.Contains(e.logs.String(), "schema migration: finished") {
		t.Errorf("no progress log of the migration:\n%s", e.logs.String())
	}
}

// A rollback's Update carries the older template's properties while this
// code still runs the function: no migration (nothing to fail the
// rollback with), and its progress is left as it is.
func TestRollbackUpdateDoesNotMigrate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	created := e.send(t, cfn.RequestCreate, "", props())
	if created.Status != cfn.StatusSuccess || created.Data["SchemaVersion"] != float64(store.SchemaVersion) {
		t.Fatalf("Create: %s %q %v", created.Status, created.Reason, created.Data)
	}
	if _, err := e.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.db.Table), Key: map[string]types.AttributeValue{
		store.AttrPK: &types.AttributeValueMemberS{Value: "INSTALLATION"}, store.AttrSK: &types.AttributeValueMemberS{Value: "SCHEMAMIGRATION"}}}); err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{"", strconv.Itoa(store.SchemaVersion - 1)} {
		p := props()
		if old == "" {
			delete(p, installer.PropSchemaVersion)
		} else {
			p[installer.PropSchemaVersion] = old
		}
		got := e.send(t, cfn.RequestUpdate, created.PhysicalResourceID, p)
		if got.Status != cfn.StatusSuccess || got.Data["SchemaVersion"] != nil {
			t.Fatalf("rollback Update (SchemaVersion %q): %s %q %v", old, got.Status, got.Reason, got.Data)
		}
		if _, err := e.st.Installation.GetSchemaMigration(ctx); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("a rollback Update (SchemaVersion %q) ran the migration: %v", old, err)
		}
	}
	if !strings.Contains(e.logs.String(), "no migration (a rollback)") {
		t.Errorf("no log of the skipped migration:\n%s", e.logs.String())
	}
}
