package accounts_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/testenv"
	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/bootstrap"
	"cads/shared/builtin"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	namerule "cads/shared/names"
	"cads/shared/store"
	"cads/shared/wire"
	"cads/shared/wire/accountswire"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is one bootstrapped installation with the accounts function over it.
type env struct {
	t    *testing.T
	d    testenv.Dynamo
	st   *store.Store
	h    apigw.ProxyHandler
	boot bootstrap.Result
	op   caller.Principal // the operator, authenticated into the root account
}

func newEnv(t *testing.T) *env {
	t.Helper()
	d := testenv.NewDynamo(t)
	deps := wire.New(quiet, d.Client, d.Table)
	// The round trips counted here are the family's own; the cost tour
	// counts them with the audit trail's (docs/performance.md).
	deps.Audit = nil
	res, err := bootstrap.Run(context.Background(), deps.Store, "operator@example.com")
	if err != nil {
		t.Fatal(err)
	}
	d.Counter.Reset()
	return &env{t: t, d: d, st: deps.Store, h: accountswire.Handler(deps), boot: res,
		op: caller.Principal{ID: res.Operator, Kind: domain.KindUser, Email: "operator@example.com", AccountID: res.RootAccount, KeyID: res.KeyID}}
}

type resp struct {
	Status int
	Raw    string
	Obj    map[string]any
	List   []any
}

// children reads the accounts whose parent is parent (the store keeps no
// whole read of them: the API pages them; a test's table is small).
func (e *env) children(parent string) ([]domain.AccountRecord, error) {
	all, _, _, err := e.st.Accounts.PageAccounts(context.Background(), "", false, 1000)
	var out []domain.AccountRecord
	for _, a := range all {
		if a.Parent == parent {
			out = append(out, a)
		}
	}
	return out, err
}

// call sends one API Gateway proxy event, as the gateway would after the
// authorizer allowed it for p. body is sent as is (a JSON text or not).
func (e *env) call(p caller.Principal, method, path, body string) resp {
	e.t.Helper()
	return e.callCT(p, method, path, body, "application/json")
}

func (e *env) callCT(p caller.Principal, method, path, body, ct string) resp {
	e.t.Helper()
	u, err := url.Parse(path)
	if err != nil {
		e.t.Fatal(err)
	}
	ev := events.APIGatewayProxyRequest{HTTPMethod: method, Path: u.Path, Body: body,
		Headers:        map[string]string{},
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "test", Authorizer: p.Context()}}
	if ct != "" {
		ev.Headers["Content-Type"] = ct
	}
	if q := u.Query(); len(q) > 0 {
		ev.QueryStringParameters, ev.MultiValueQueryStringParameters = map[string]string{}, map[string][]string{}
		for k, v := range q {
			ev.QueryStringParameters[k], ev.MultiValueQueryStringParameters[k] = v[len(v)-1], v
		}
	}
	// Through JSON, as API Gateway delivers it.
	raw, _ := json.Marshal(ev)
	var in events.APIGatewayProxyRequest
	_ = json.Unmarshal(raw, &in)
	out, err := e.h(context.Background(), in)
	if err != nil {
		e.t.Fatalf("%s %s: function error %v", method, path, err)
	}
	r := resp{Status: out.StatusCode, Raw: out.Body}
	if strings.HasPrefix(strings.TrimSpace(out.Body), "[") {
		_ = json.Unmarshal([]byte(out.Body), &r.List)
	} else {
		_ = json.Unmarshal([]byte(out.Body), &r.Obj)
	}
	if out.StatusCode >= 400 {
		er, _ := r.Obj["error"].(map[string]any)
		if st, _ := r.Obj["status"].(float64); int(st) != out.StatusCode || er == nil || er["type"] == "" || er["message"] == "" {
			e.t.Fatalf("%s %s: not the API error body for %d: %s", method, path, out.StatusCode, out.Body)
		}
	}
	return r
}

func (r resp) str(k string) string { s, _ := r.Obj[k].(string); return s }

func (r resp) message() string {
	er, _ := r.Obj["error"].(map[string]any)
	s, _ := er["message"].(string)
	return s
}

func jsonBody(v any) string { b, _ := json.Marshal(v); return string(b) }

// account writes an account directly (no handler), with its control roles,
// under parent; created sets its creation time.
func (e *env) account(parent domain.AccountRecord, name string, created time.Time) domain.AccountRecord {
	e.t.Helper()
	id := ids.New()
	a := domain.AccountRecord{Account: domain.Account{ID: id, Name: name, NameKey: namerule.Key(name), Keyword: domain.Keyword(name), Parent: parent.ID,
		Ancestors: append(append([]string{}, parent.Ancestors...), parent.ID), Created: created, Updated: created}}
	defs, err := builtin.ControlRoles(id)
	if err != nil {
		e.t.Fatal(err)
	}
	var roles []domain.Role
	for _, d := range defs {
		roles = append(roles, domain.Role{AccountID: id, ID: ids.New(), Name: d.Name, Inheritable: d.Inheritable, Control: true, Permissions: d.Permissions, Version: 1})
	}
	if err := e.st.Accounts.CreateSubAccount(context.Background(), a, roles); err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) root() domain.AccountRecord {
	e.t.Helper()
	r, err := e.st.Accounts.GetAccountRecord(context.Background(), e.boot.RootAccount)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// in is the operator authenticated into another account.
func (e *env) in(account string) caller.Principal {
	p := e.op
	p.AccountID = account
	return p
}

func authzDeny(method, spec string) authz.Permission {
	return authz.Permission{Method: method, Effect: authz.EffectDeny, Spec: []string{spec}}
}
