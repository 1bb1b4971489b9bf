package costtour_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/apispec"
	"cads/infra/local/localtest"
	"cads/infra/sam"
	"cads/infra/testenv"
	"cads/shared/authz"
	"cads/shared/domain"
	"cads/shared/store"
)

const (
	scaleBegin = "<!-- list-scale:begin -->"
	scaleEnd   = "<!-- list-scale:end -->"
	// scaleSmall and scaleLarge are the two sizes of every collection.
	scaleSmall = 10
	scaleLarge = 10000
)

// scaleSetup is one collection prepared for measuring: the page's path
// (no query), how to add one member through the API (or the store, where
// the API needs a second party), and the items of the member added last,
// which the bulk write copies.
type scaleSetup struct {
	path string
	// secret reads the collection ("": the operator's key).
	secret string
	add    func(i int)
	// member names the table keys of the items that make up the member
	// added last (an access key; a held role: the grant and the role) and
	// the id they share, which each copy replaces.
	member func() (keys [][2]string, id string)
	// copyID, if set, is the id of copy i (default: "z" and digits, as
	// long as the original id, so that copies are the same size and sort
	// after every original by id).
	copyID func(i int, old string) string
	// fix, if set, makes further changes to copy i of an item.
	fix func(it map[string]types.AttributeValue, i int)
	// settle, if set, waits until the platform is quiet after the adds
	// (a queue worker that changes the members).
	settle func()
}

// scaleCase is one list operation of the contract (by operationId)
// measured at two sizes.
type scaleCase struct {
	op, what string
	setup    func(c *costTour) scaleSetup
}

// ep is the case's operation as "METHOD /path", the table's label; an id
// the contract does not have is its own label, which no list matches.
func (sc scaleCase) ep() string {
	for _, e := range apispec.Endpoints {
		if e.ID == sc.op {
			return e.Method + " " + e.Path
		}
	}
	return sc.op
}

// TestCostListsAtScale measures the first page (limit=5) of every list
// endpoint of apispec (Endpoint.List) with 10 members and with 10,000, each
// collection on a platform and table of its own, and requires the two
// costs to be equal (round trips and capacity units); then the authorizer
// with 10 and 1,000 roles held and defined (measureAuthorizerAtScale). The
// 9,990 further members are copies of one added through the API, put
// straight into the table in-process (localaws.Dynamo.Load); only the page
// request is measured. The rows go to their own table in
// docs/performance.md (-update rewrites it).
//
// The measuring is CPU-bound and each collection independent, but two
// platforms cannot share a process (goaws' queues are package state): the
// collections are measured by worker processes of this test binary
// (runScaleWorkers), one per CPU, after TestCostPerEndpoint (whose
// delayed parallel calls must get a CPU as soon as they wake; scaleDelay
// gives the workers' own the same room beside the rest of the suite).
// This process gathers their rows and compares the table.
func TestCostListsAtScale(t *testing.T) {
	if testenv.Realistic() {
		// Its flows are pages of loaded collections, which the gateway
		// suites read through the index lag (TestListsReadTheirWrites...);
		// what it measures, calls and capacity, the realism changes.
		t.Skip("measures the plain DynamoDB's cost only")
	}
	cases := scaleCases()
	if dir := os.Getenv(scaleWorkerEnv); dir != "" {
		scaleWorker(t, dir, cases)
		return
	}
	began := time.Now()
	table, ok := scaleTable(t, cases, runScaleWorkers(t, runtime.GOMAXPROCS(0)))
	if !ok {
		return
	}
	t.Logf("%d collections measured at two sizes in %v\n%s", len(cases), time.Since(began).Round(time.Second), table)
	if have, _, _ := documentedTable(t, scaleBegin, scaleEnd); have != strings.TrimSpace(table) && !*costUpdate {
		// A capacity unit can turn on a few bytes of one item (a page
		// summed close to a 4 KB boundary), and a machine loaded by the
		// rest of make test has moved one row (an audit events page, 15
		// RCU for 16) that a second measuring did not: the table is
		// measured once more, and only that measuring is compared. A
		// real change differs both times.
		t.Logf("the table differs from docs/performance.md (- documented, + measured); measuring again:\n%s",
			lineDiff(strings.Split(have, "\n"), strings.Split(strings.TrimSpace(table), "\n")))
		if table, ok = scaleTable(t, cases, runScaleWorkers(t, runtime.GOMAXPROCS(0))); !ok {
			return
		}
	}
	compareCostTable(t, table, scaleBegin, scaleEnd)
}

// scaleTable is the table of the workers' rows (lines, by job key), in
// the contract's order; false when it is not whole (-run chose some
// cases, or a worker failed).
func scaleTable(t *testing.T, cases []scaleCase, lines map[string][]string) (string, bool) {
	t.Helper()
	if t.Failed() {
		return "", false
	}
	authorizer, measured := lines[authorizerJob], 0
	for _, sc := range cases {
		if _, ok := lines[sc.op]; ok {
			measured++
		}
	}
	if measured != len(cases) || authorizer == nil {
		t.Logf("%d of %d collections measured, the authorizer %v (-run chose some): the table is not compared", measured, len(cases), authorizer != nil)
		return "", false
	}
	byEP := map[string]scaleCase{}
	for _, sc := range cases {
		byEP[sc.op] = sc
	}
	var missing []string
	var b strings.Builder
	b.WriteString("| Collection, first page (`limit=5`) | Authorizer seq / calls | Function seq / calls | RCU | WCU |\n")
	b.WriteString("|---|---|---|---|---|\n")
	known := map[string]bool{}
	for _, e := range apispec.Endpoints {
		ep := e.Method + " " + e.Path
		known[e.ID] = true
		if !e.List {
			if _, ok := byEP[e.ID]; ok {
				t.Errorf("%s (%s) is measured at scale but is no collection of the contract (no cursor parameter)", e.ID, ep)
			}
			continue
		}
		pair, ok := lines[e.ID]
		if !ok {
			missing = append(missing, e.ID+" ("+ep+")")
			continue
		}
		for _, l := range pair {
			b.WriteString(l + "\n")
		}
	}
	for _, l := range authorizer {
		b.WriteString(l + "\n")
	}
	for op := range byEP {
		if !known[op] {
			t.Errorf("scaleCases measures %s, which is no operation of the contract", op)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("no 10 / 10,000 pair for %d list operations of the contract (add them to scaleCases):\n%s", len(missing), strings.Join(missing, "\n"))
	}
	return b.String(), true
}

// authorizerJob is the key of the authorizer's rows among a worker's
// (the collections' are their endpoints).
const authorizerJob = "authorizer"

// scaleJobs is what a worker may measure, in the order workers take them:
// the authorizer first (one of the longest), then every collection. Each
// returns its rows of the table, formatted.
func scaleJobs(cases []scaleCase) []scaleJob {
	jobs := []scaleJob{{name: "authorizer", key: authorizerJob, run: func(t *testing.T) []string {
		var out []string
		for _, r := range measureAuthorizerAtScale(t) {
			out = append(out, scaleRow("Authorizer, "+r.label, r.aSeq, r.aCalls, r.fSeq, r.fCalls, r.rcu, r.wcu))
		}
		return out
	}}}
	for _, sc := range cases {
		jobs = append(jobs, scaleJob{name: strings.ReplaceAll(strings.TrimPrefix(sc.ep(), "GET /"), "/", "."), key: sc.op, run: func(t *testing.T) []string {
			var out []string
			for i, r := range measureAtScale(t, sc) {
				n := fmt.Sprintf("%d", scaleSmall)
				if i == 1 {
					n = "10,000"
				}
				label := fmt.Sprintf("`%s`, %s %s", sc.ep(), n, sc.what)
				out = append(out, scaleRow(label, r.aSeq, r.aCalls, r.fSeq, r.fCalls, r.rcu, r.wcu))
			}
			return out
		}})
	}
	return jobs
}

// scaleRow is one row of the table.
func scaleRow(label string, aSeq, aCalls, fSeq, fCalls int, rcu, wcu float64) string {
	return fmt.Sprintf("| %s | %d / %d | %d / %d | %.1f | %.1f |", label, aSeq, aCalls, fSeq, fCalls, rcu, wcu)
}

// measureAtScale measures sc's first page at both sizes.
func measureAtScale(t *testing.T, sc scaleCase) [2]costRow {
	c := startCostTour(t)
	c.delay = scaleDelay
	s := sc.setup(c)
	op := s.secret
	if op == "" {
		op = c.p.Bootstrap.Secret
	}
	count := func() int {
		return len(c.step("", 200, "GET", withQuery(s.path, "limit=1000"), op, nil).list)
	}
	for i := count(); i < scaleSmall; i++ {
		s.add(i)
	}
	if s.settle != nil {
		s.settle()
	}
	// Measure a list no write precedes within the journal's window: the
	// members just added would otherwise be read again by key
	// (docs/data-model.md, Read your writes), which a list at rest does
	// not do. TestCostPerEndpoint measures lists right after writes.
	c.atRest()
	if n := count(); n != scaleSmall {
		t.Fatalf("%s: %d members, want %d", sc.what, n, scaleSmall)
	}
	route, ok := c.routes[sc.op]
	if !ok {
		t.Fatalf("%s: no such operation routed (the contract and template.yaml)", sc.op)
	}
	measure := func(label string) costRow {
		defer c.measuring()()
		c.counter.Reset()
		r := c.send("GET", withQuery(s.path, "limit=5"), op, "", nil)
		if r.status != http.StatusOK || len(r.list) != 5 {
			t.Fatalf("%s: %d, %d members: %s", label, r.status, len(r.list), r.raw)
		}
		c.record(label, route)
		return c.rows[label]
	}
	small := measure("small")

	// The copies: every key attribute and every attribute equal to the
	// member's id get the copy's id; the creation time (and the
	// positions made of it) moves an hour and i milliseconds on.
	ctx := context.Background()
	table := c.p.Deps.Store.Name()
	keys, id := s.member()
	var bases []map[string]types.AttributeValue
	for _, k := range keys {
		out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: k[0]}, "SK": &types.AttributeValueMemberS{Value: k[1]}}})
		if err != nil || out.Item == nil {
			t.Fatalf("%s: read %s/%s: %v", sc.what, k[0], k[1], err)
		}
		bases = append(bases, out.Item)
	}
	copyID := s.copyID
	if copyID == nil {
		copyID = func(i int, old string) string { return fmt.Sprintf("z%0*d", max(len(old)-1, 7), i) }
	}
	copiers := make([]func(string, time.Duration) map[string]types.AttributeValue, len(bases))
	for j, base := range bases {
		copiers[j] = memberCopier(base, id)
	}
	items := make([]map[string]types.AttributeValue, 0, len(bases)*(scaleLarge-scaleSmall))
	for i := range scaleLarge - scaleSmall {
		nid := copyID(i, id)
		for _, copyOf := range copiers {
			it := copyOf(nid, time.Hour+time.Duration(i)*time.Millisecond)
			if s.fix != nil {
				s.fix(it, i)
			}
			items = append(items, it)
		}
	}
	wrote := time.Now()
	if err := c.dyn.Load(ctx, table, items); err != nil {
		t.Fatalf("%s: bulk write: %v", sc.what, err)
	}
	t.Logf("%s: %d items written in %v", sc.what, len(items), time.Since(wrote).Round(time.Millisecond))
	// The copies are members the API shows: a full page of twice the
	// originals has at least as many copies as originals, wherever the
	// list sorts them. They differ from each other only in ids and times
	// of the same width, so these stand for the rest; a page of 1,000 was
	// about a fifth of the test's CPU (its JSON and contract check under
	// race).
	if n := len(c.step("", 200, "GET", withQuery(s.path, fmt.Sprintf("limit=%d", 2*scaleSmall)), op, nil).list); n != 2*scaleSmall {
		t.Fatalf("%s: a page of %d has %d members after the bulk write", sc.what, 2*scaleSmall, n)
	}
	large := measure("large")
	sameFunction := small.fSeq == large.fSeq && small.fCalls == large.fCalls && small.fRCU == large.fRCU && small.fWCU == large.fWCU
	sameAuthorizer := small.aSeq == large.aSeq && small.aCalls == large.aCalls && small.rcu-small.fRCU == large.rcu-large.fRCU
	if !sameFunction || !sameAuthorizer {
		t.Errorf("%s: a page costs more with %d members than with %d:\n%+v\n%+v", sc.ep(), scaleLarge, scaleSmall, small, large)
	}
	return [2]costRow{small, large}
}

// withQuery adds query to path, which may have one already (who can's
// method and path).
func withQuery(path, query string) string {
	if strings.Contains(path, "?") {
		return path + "&" + query
	}
	return path + "?" + query
}

var keyAttrNames = []string{"PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK"}

// posLayout is the fixed-width creation time of the store's positions.
const posLayout = "2006-01-02T15:04:05.000Z07:00"

// memberCopier copies base, an item of the member with id id: copy(nid,
// shift) is the item for the member with id nid, created shift after the
// original. What changes is found once per base, not per copy: every key
// attribute and every attribute equal to the id get the copy's id, an
// email one of its own, and the creation time (and the positions made of
// it) moves shift on.
func memberCopier(base map[string]types.AttributeValue, id string) func(nid string, shift time.Duration) map[string]types.AttributeValue {
	var t0 time.Time
	var oldPos string
	if cr, ok := base["created"].(*types.AttributeValueMemberS); ok {
		if t, err := time.Parse(time.RFC3339Nano, cr.Value); err == nil {
			t0, oldPos = t, t.UTC().Format(posLayout)
		}
	}
	type change struct {
		name, value string
		key         bool // a key attribute, else the id or an email
	}
	var changes []change
	for name, v := range base {
		s, ok := v.(*types.AttributeValueMemberS)
		if ok && (slices.Contains(keyAttrNames, name) || s.Value == id || name == "email") {
			changes = append(changes, change{name: name, value: s.Value, key: slices.Contains(keyAttrNames, name)})
		}
	}
	return func(nid string, shift time.Duration) map[string]types.AttributeValue {
		it := maps.Clone(base)
		var newPos string
		t1 := t0.Add(shift).UTC()
		if oldPos != "" {
			newPos = t1.Format(posLayout)
		}
		for _, ch := range changes {
			switch {
			case ch.key:
				val := strings.ReplaceAll(ch.value, id, nid)
				if oldPos != "" {
					val = strings.ReplaceAll(val, oldPos, newPos)
				}
				it[ch.name] = &types.AttributeValueMemberS{Value: val}
			case ch.value == id:
				it[ch.name] = &types.AttributeValueMemberS{Value: nid}
			default: // email
				e := strings.ReplaceAll(ch.value, id, nid)
				if e == ch.value {
					e = nid + "@example.com"
				}
				it[ch.name] = &types.AttributeValueMemberS{Value: e}
			}
		}
		if oldPos != "" {
			// Nine fraction digits always: every copy is the same size,
			// whatever the original's time, so capacity units read over
			// many copies do not move between runs.
			it["created"] = &types.AttributeValueMemberS{Value: t1.Format("2006-01-02T15:04:05.000000000Z07:00")}
		}
		return it
	}
}

// lastSegment is the id at the end of an href.
func lastSegment(href string) string { return path.Base(href) }

func scaleCases() []scaleCase {
	rolePerms := func(root string) []map[string]any {
		return []map[string]any{{"method": "GET", "effect": "permit", "spec": []string{root + "/service-users"}}}
	}
	sub := func(c *costTour, name string) (href, id string) {
		id = c.step("", 200, "POST", "/v2/accounts", c.p.Bootstrap.Secret, map[string]any{"name": name}).str("id")
		return "/v2/accounts/" + id, id
	}
	role := func(c *costTour, acct string, i int) (href, id string) {
		href = c.step("", 200, "POST", acct+"/roles", c.p.Bootstrap.Secret, map[string]any{"name": fmt.Sprintf("Scale role %d", i), "permissions": rolePerms(acct)}).str("href")
		return href, lastSegment(href)
	}
	group := func(c *costTour, acct, roleHref string, i int) (href, id string) {
		href = c.step("", 200, "POST", acct+"/groups", c.p.Bootstrap.Secret, map[string]any{"name": fmt.Sprintf("Scale group %d", i), "roles": []string{roleHref}}).str("href")
		return href, lastSegment(href)
	}
	// Roles and groups of a sub-account are written through the store:
	// the operator may read a sub-account's roles and groups but not
	// write them (its first users do), and the root account's RBAC
	// partition is read by the authorizer on every request, so its size
	// would be measured too.
	storeRole := func(c *costTour, acct string, i int) string {
		now := c.p.Deps.Store.Now()
		r := domain.Role{AccountID: acct, ID: fmt.Sprintf("scalerole%07d", i), Name: fmt.Sprintf("Scale role %d", i),
			Permissions: []authz.Permission{{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/" + acct + "/service-users"}}},
			Version:     1, Created: now, Updated: now}
		if err := c.p.Deps.Store.Roles.CreateRole(context.Background(), r); err != nil {
			c.t.Fatal(err)
		}
		return r.ID
	}
	storeGroup := func(c *costTour, acct, role string, i int) string {
		now := c.p.Deps.Store.Now()
		g := domain.Group{AccountID: acct, ID: fmt.Sprintf("scalegroup%06d", i), Name: fmt.Sprintf("Scale group %d", i), Roles: []string{role},
			Version: 1, Created: now, Updated: now}
		if err := c.p.Deps.Store.Roles.CreateGroup(context.Background(), g); err != nil {
			c.t.Fatal(err)
		}
		return g.ID
	}
	user := func(c *costTour, email string) (href, id string) {
		id = c.step("", 200, "POST", "/v2/users", c.p.Bootstrap.Secret, map[string]any{"email": email, "name": "Scale"}).str("id")
		return "/v2/users/" + id, id
	}
	// ownKey is a key of user id, bound to the root account: a user's
	// inbox, roles and groups are read by the user itself.
	ownKey := func(c *costTour, href string) string {
		return c.step("", 200, "POST", href+"/access-keys", c.p.Bootstrap.Secret, map[string]any{"type": "bearer", "account": "/v2/accounts/" + c.p.Bootstrap.RootAccount}).str("secret_key")
	}
	notified := func(c *costTour) func() {
		return func() { c.idle(c.queueOf(c.functionOf("functions/notifier"))) }
	}
	// last remembers the id of the member added last.
	type last struct{ id string }
	// pageControls is the setup of a list of one application's page controls,
	// read as list ("pagecontrols", or "webcontrols", the same items).
	pageControls := func(list string) func(c *costTour) scaleSetup {
		return func(c *costTour) scaleSetup {
			app := c.step("", 200, "POST", "/v2/applications", c.p.Bootstrap.Secret, map[string]any{"name": "Scale", "aliases": []string{"scale.example.com"}}).str("id")
			var l last
			return scaleSetup{path: "/v2/applications/" + app + "/" + list,
				add: func(i int) {
					href := c.step("", 200, "POST", "/v2/applications/"+app+"/pagecontrols", c.p.Bootstrap.Secret,
						`{"name":"Block bots","mode":"request","conditions":{"is_crawler":{}},"actions":[{"type":"deny","status_code":"403","body":"no"}]}`).str("href")
					var n int
					if _, err := fmt.Sscan(lastSegment(href), &n); err != nil {
						c.t.Fatalf("page control href %q: %v", href, err)
					}
					l.id = fmt.Sprintf("%010d", n)
				},
				member: func() ([][2]string, string) { return [][2]string{{"APP#" + app, "PAGECONTROL#" + l.id}}, l.id },
				// Ids are numbers, zero-padded in the key.
				copyID: func(i int, _ string) string { return fmt.Sprintf("%010d", 1000000+i) },
				fix: func(it map[string]types.AttributeValue, i int) {
					it["id"] = &types.AttributeValueMemberN{Value: fmt.Sprint(1000000 + i)}
				},
			}
		}
	}
	return []scaleCase{
		{op: "getAccounts", what: "accounts", setup: func(c *costTour) scaleSetup {
			var l last
			return scaleSetup{path: "/v2/accounts",
				add: func(i int) { _, l.id = sub(c, fmt.Sprintf("Scale %d", i)) },
				member: func() ([][2]string, string) {
					return [][2]string{{"ACCOUNT#" + l.id, "ACCOUNT"}}, l.id
				}}
		}},
		{op: "getAccountsByIdEntitlements", what: "entitlements", setup: func(c *costTour) scaleSetup {
			href, acct := sub(c, "Scale")
			var l last
			return scaleSetup{path: href + "/entitlements",
				add: func(i int) {
					l.id = lastSegment(c.step("", 200, "POST", href+"/entitlements", c.p.Bootstrap.Secret, map[string]any{"resource": "address_sets", "quantity": i + 1}).str("href"))
				},
				member: func() ([][2]string, string) { return [][2]string{{"ACCOUNT#" + acct, "ENTITLEMENT#" + l.id}}, l.id }}
		}},
		{op: "getAccountsByIdAuditEvents", what: "audit events", setup: func(c *costTour) scaleSetup {
			href, acct := sub(c, "Scale")
			return scaleSetup{path: href + "/audit-events",
				add: func(i int) {
					c.step("", 200, "PATCH", href, c.p.Bootstrap.Secret, map[string]any{"keyword": fmt.Sprintf("scale%d", i)})
				},
				// The newest event: its key is its time and id.
				member: func() ([][2]string, string) {
					ev := c.step("", 200, "GET", href+"/audit-events?limit=1", c.p.Bootstrap.Secret, nil).list[0]
					at, _ := time.Parse(time.RFC3339Nano, ev["time"].(string))
					id := ev["id"].(string)
					return [][2]string{{"AUDIT#" + acct, at.UTC().Format(posLayout) + "#" + id}}, id
				}}
		}},
		{op: "getAccountsByIdRoles", what: "roles", setup: func(c *costTour) scaleSetup {
			href, acct := sub(c, "Scale")
			var l last
			return scaleSetup{path: href + "/roles",
				add:    func(i int) { l.id = storeRole(c, acct, i) },
				member: func() ([][2]string, string) { return [][2]string{{"RBAC#" + acct, "ROLE#" + l.id}}, l.id }}
		}},
		{op: "getAccountsByIdInvitations", what: "invitations", setup: func(c *costTour) scaleSetup {
			acct := c.p.Bootstrap.RootAccount
			href := "/v2/accounts/" + acct
			roleHref, _ := role(c, href, 0)
			var l last
			return scaleSetup{path: href + "/invitations",
				add: func(i int) {
					l.id = c.step("", 200, "POST", href+"/invitations", c.p.Bootstrap.Secret, map[string]any{"user_email": fmt.Sprintf("invitee%d@example.com", i), "role": roleHref}).str("id")
				},
				settle: notified(c),
				member: func() ([][2]string, string) {
					return [][2]string{{"INVITATIONS#" + acct, "INVITATION#" + l.id}}, l.id
				}}
		}},
		{op: "getAccountsByIdGroups", what: "groups", setup: func(c *costTour) scaleSetup {
			href, acct := sub(c, "Scale")
			r := storeRole(c, acct, 0)
			var l last
			return scaleSetup{path: href + "/groups",
				add:    func(i int) { l.id = storeGroup(c, acct, r, i) },
				member: func() ([][2]string, string) { return [][2]string{{"RBAC#" + acct, "GROUP#" + l.id}}, l.id }}
		}},
		{op: "getAccountsByIdGroupInvitations", what: "group invitations", setup: func(c *costTour) scaleSetup {
			acct := c.p.Bootstrap.RootAccount
			href := "/v2/accounts/" + acct
			roleHref, _ := role(c, href, 0)
			groupHref, _ := group(c, href, roleHref, 0)
			var l last
			return scaleSetup{path: href + "/group-invitations",
				add: func(i int) {
					l.id = c.step("", 200, "POST", href+"/group-invitations", c.p.Bootstrap.Secret, map[string]any{"user_email": fmt.Sprintf("invitee%d@example.com", i), "group": groupHref}).str("id")
				},
				settle: notified(c),
				member: func() ([][2]string, string) {
					return [][2]string{{"INVITATIONS#" + acct, "GROUPINVITATION#" + l.id}}, l.id
				}}
		}},
		{op: "getAccountsByIdAccess", what: "holders of the role granting it", setup: func(c *costTour) scaleSetup {
			// Who can read the service users of a sub-account: the holders
			// of a role of it (and the operator, through the root's
			// entitlement administrator role for sub-accounts). Users and
			// grants go through the store: inviting each would measure the
			// notifier too.
			href, acct := sub(c, "Scale")
			r := storeRole(c, acct, 0)
			var l last
			return scaleSetup{path: href + "/access?method=GET&path=" + href + "/service-users",
				add: func(i int) {
					ctx, st, now := context.Background(), c.p.Deps.Store, c.p.Deps.Store.Now()
					l.id = fmt.Sprintf("scaleuser%07d", i)
					if err := st.Principals.CreatePrincipal(ctx, domain.Principal{ID: l.id, Kind: domain.KindUser, Email: l.id + "@example.com", Created: now, Updated: now}); err != nil {
						c.t.Fatal(err)
					}
					if err := st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: l.id, AccountID: acct, RoleID: r, Via: "scale", Created: now}); err != nil {
						c.t.Fatal(err)
					}
				},
				member: func() ([][2]string, string) {
					return [][2]string{{"PRINCIPAL#" + l.id, "PRINCIPAL"}, {"PRINCIPAL#" + l.id, "GRANT#" + acct + "#" + r}}, l.id
				}}
		}},
		{op: "getAccountsByIdServiceUsers", what: "service users", setup: func(c *costTour) scaleSetup {
			href := "/v2/accounts/" + c.p.Bootstrap.RootAccount
			var l last
			return scaleSetup{path: href + "/service-users",
				add: func(i int) {
					l.id = c.step("", 200, "POST", href+"/service-users", c.p.Bootstrap.Secret, map[string]any{"name": fmt.Sprintf("robot %d", i)}).str("id")
				},
				member: func() ([][2]string, string) { return [][2]string{{"PRINCIPAL#" + l.id, "PRINCIPAL"}}, l.id }}
		}},
		{op: "getAddressSets", what: "address sets", setup: func(c *costTour) scaleSetup {
			var l last
			return scaleSetup{path: "/v2/address-sets",
				add: func(i int) {
					l.id = c.step("", 200, "POST", "/v2/address-sets", c.p.Bootstrap.Secret, map[string]any{"name": fmt.Sprintf("scale %d", i), "type": "manual"}).str("id")
				},
				member: func() ([][2]string, string) { return [][2]string{{"ADDRSET#" + l.id, "ADDRSET"}}, l.id }}
		}},
		{op: "getAddressSetsByIdAddresses", what: "addresses",
			setup: func(c *costTour) scaleSetup {
				set := c.step("", 200, "POST", "/v2/address-sets", c.p.Bootstrap.Secret, map[string]any{"name": "scale", "type": "manual"}).str("id")
				var l last
				return scaleSetup{path: "/v2/address-sets/" + set + "/addresses",
					add: func(i int) {
						l.id = fmt.Sprintf("198.51.100.%d", i)
						c.stepRaw("", 200, "PATCH", "/v2/address-sets/"+set, c.p.Bootstrap.Secret, "application/json-patch+json",
							[]byte(`[{"op":"add","path":"/entries/-","value":{"address":"`+l.id+`"}}]`))
					},
					member: func() ([][2]string, string) {
						return [][2]string{{"ADDRSET#" + set, "ENTRY#" + l.id + "/32"}}, l.id
					},
					// Each copy is another network, 10.0.0.0/8 upwards.
					copyID: func(i int, _ string) string { return fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255) },
					fix: func(it map[string]types.AttributeValue, _ int) {
						prefix := strings.TrimPrefix(it["SK"].(*types.AttributeValueMemberS).Value, "ENTRY#")
						pos, err := store.AddressPosition(prefix)
						if err != nil {
							c.t.Fatal(err)
						}
						it["prefix"] = &types.AttributeValueMemberS{Value: prefix}
						it["GSI2SK"] = &types.AttributeValueMemberS{Value: pos}
					},
				}
			}},
		{op: "getTests", what: "application tests", setup: func(c *costTour) scaleSetup {
			c.step("", 200, "POST", "/v2/applications", c.p.Bootstrap.Secret, map[string]any{"name": "Shop", "aliases": []string{"shop.example.com"}})
			var l last
			return scaleSetup{path: "/v2/tests",
				add: func(i int) {
					l.id = fmt.Sprintf("scaletest%02d", i)
					c.stepRaw("", 200, "PUT", "/v2/tests/"+l.id, c.p.Bootstrap.Secret, "application/x-tar", localtest.TestTar(c.t, "http://shop.example.com", "scale\n"))
				},
				member: func() ([][2]string, string) {
					return [][2]string{{"APPTEST#" + c.p.Bootstrap.RootAccount + "#" + l.id, "TEST"}}, l.id
				}}
		}},
		{op: "getApplications", what: "applications", setup: func(c *costTour) scaleSetup {
			var l last
			return scaleSetup{path: "/v2/applications",
				add: func(i int) {
					l.id = c.step("", 200, "POST", "/v2/applications", c.p.Bootstrap.Secret, map[string]any{"name": fmt.Sprintf("Scale %d", i), "aliases": []string{fmt.Sprintf("scale%d.example.com", i)}}).str("id")
				},
				member: func() ([][2]string, string) { return [][2]string{{"APP#" + l.id, "APP"}}, l.id }}
		}},
		{op: "getApplicationsByIdActions", what: "actions", setup: func(c *costTour) scaleSetup {
			app := c.step("", 200, "POST", "/v2/applications", c.p.Bootstrap.Secret, map[string]any{"name": "Scale", "aliases": []string{"scale.example.com"}}).str("id")
			var l last
			return scaleSetup{path: "/v2/applications/" + app + "/actions",
				add: func(i int) {
					l.id = fmt.Sprintf("scaleact%02d", i)
					c.step("", 200, "POST", "/v2/applications/"+app+"/actions", c.p.Bootstrap.Secret, map[string]any{"id": l.id, "url": "https://ops.example.com/ping"})
				},
				member: func() ([][2]string, string) { return [][2]string{{"APP#" + app, "ACTION#" + l.id}}, l.id }}
		}},
		{op: "getApplicationsByIdPagecontrols", what: "page controls", setup: pageControls("pagecontrols")},
		{op: "getApplicationsByIdWebcontrols", what: "web controls (page controls seen as the reference's web controls)", setup: pageControls("webcontrols")},
		{op: "getMetricPrototypes", what: "metric prototypes", setup: func(c *costTour) scaleSetup {
			var l last
			return scaleSetup{path: "/v2/metric-prototypes",
				add: func(i int) {
					l.id = lastSegment(c.step("", 200, "POST", "/v2/metric-prototypes", c.p.Bootstrap.Secret, map[string]any{"default_name": fmt.Sprintf("slow_pages_%d", i),
						"expression": "count()", "log_type": "proxy-logs", "filter": "elapsed > 2000", "group_by": "request_path"}).str("href"))
				},
				member: func() ([][2]string, string) { return [][2]string{{"METRICPROTO#" + l.id, "METRICPROTO"}}, l.id }}
		}},
		{op: "getTasks", what: "tasks", setup: func(c *costTour) scaleSetup {
			// Written through the store: every task type targets an
			// application, and these need no worker (finished, their
			// outbox marker due long after the test).
			var l last
			return scaleSetup{path: "/v2/tasks",
				add: func(i int) {
					now := c.p.Deps.Store.Now()
					l.id = fmt.Sprintf("scaletask%07d", i)
					tk := domain.Task{ID: l.id, Account: c.p.Bootstrap.RootAccount, Type: "start", Target: "/v2/applications/none", State: domain.TaskSuccess,
						CreatedBy: "cost", Created: now, Updated: now}
					if err := c.p.Deps.Store.Tasks.CreateTask(context.Background(), tk, &store.OutboxMarker{Queue: "TasksQueue", Body: "{}", Due: now.Add(24 * time.Hour)}); err != nil {
						c.t.Fatal(err)
					}
				},
				member: func() ([][2]string, string) { return [][2]string{{"TASK#" + l.id, "TASK"}}, l.id }}
		}},
		{op: "getUsers", what: "users", setup: func(c *costTour) scaleSetup {
			var l last
			return scaleSetup{path: "/v2/users",
				add:    func(i int) { _, l.id = user(c, fmt.Sprintf("scale%d@example.com", i)) },
				member: func() ([][2]string, string) { return [][2]string{{"PRINCIPAL#" + l.id, "PRINCIPAL"}}, l.id }}
		}},
		{op: "getUsersByIdAccessKeys", what: "access keys", setup: func(c *costTour) scaleSetup {
			href, uid := user(c, "keys@example.com")
			var l last
			return scaleSetup{path: href + "/access-keys",
				add: func(i int) {
					l.id = c.step("", 200, "POST", href+"/access-keys", c.p.Bootstrap.Secret, map[string]any{"type": "bearer"}).str("id")
				},
				member: func() ([][2]string, string) { return [][2]string{{"PRINCIPAL#" + uid, "KEY#" + l.id}}, l.id }}
		}},
		{op: "getUsersByIdInvitations", what: "invitations in the inbox", setup: func(c *costTour) scaleSetup {
			href, _ := user(c, "invitee@example.com")
			acct := c.p.Bootstrap.RootAccount
			acctHref := "/v2/accounts/" + acct
			var l last
			return scaleSetup{path: href + "/invitations", secret: ownKey(c, href),
				// One role per invitation: a user is invited to a role once.
				add: func(i int) {
					roleHref, _ := role(c, acctHref, i)
					l.id = c.step("", 200, "POST", acctHref+"/invitations", c.p.Bootstrap.Secret, map[string]any{"user_email": "invitee@example.com", "role": roleHref}).str("id")
				},
				settle: notified(c),
				member: func() ([][2]string, string) {
					return [][2]string{{"INVITATIONS#" + acct, "INVITATION#" + l.id}}, l.id
				}}
		}},
		{op: "getUsersByIdGroupInvitations", what: "group invitations in the inbox", setup: func(c *costTour) scaleSetup {
			href, _ := user(c, "invitee@example.com")
			acct := c.p.Bootstrap.RootAccount
			acctHref := "/v2/accounts/" + acct
			roleHref, _ := role(c, acctHref, 0)
			var l last
			return scaleSetup{path: href + "/group-invitations", secret: ownKey(c, href),
				add: func(i int) {
					groupHref, _ := group(c, acctHref, roleHref, i)
					l.id = c.step("", 200, "POST", acctHref+"/group-invitations", c.p.Bootstrap.Secret, map[string]any{"user_email": "invitee@example.com", "group": groupHref}).str("id")
				},
				settle: notified(c),
				member: func() ([][2]string, string) {
					return [][2]string{{"INVITATIONS#" + acct, "GROUPINVITATION#" + l.id}}, l.id
				}}
		}},
		{op: "getUsersByIdRoles", what: "held roles", setup: func(c *costTour) scaleSetup {
			// The grants are written through the store: accepting takes
			// the invitee's own key, and what is measured is the list.
			href, uid := user(c, "holder@example.com")
			_, acct := sub(c, "Scale")
			var l last
			return scaleSetup{path: href + "/roles", secret: ownKey(c, href),
				add: func(i int) {
					l.id = storeRole(c, acct, i)
					if err := c.p.Deps.Store.Roles.PutGrant(context.Background(), domain.Grant{PrincipalID: uid, AccountID: acct, RoleID: l.id, Via: "cost", Created: c.p.Deps.Store.Now()}); err != nil {
						c.t.Fatal(err)
					}
				},
				member: func() ([][2]string, string) {
					return [][2]string{{"PRINCIPAL#" + uid, "GRANT#" + acct + "#" + l.id}, {"RBAC#" + acct, "ROLE#" + l.id}}, l.id
				}}
		}},
		{op: "getUsersByIdGroups", what: "held groups", setup: func(c *costTour) scaleSetup {
			href, uid := user(c, "holder@example.com")
			_, acct := sub(c, "Scale")
			r := storeRole(c, acct, 0)
			var l last
			return scaleSetup{path: href + "/groups", secret: ownKey(c, href),
				add: func(i int) {
					l.id = storeGroup(c, acct, r, i)
					if err := c.p.Deps.Store.Roles.PutGrant(context.Background(), domain.Grant{PrincipalID: uid, AccountID: acct, Group: l.id, Via: "cost", Created: c.p.Deps.Store.Now()}); err != nil {
						c.t.Fatal(err)
					}
				},
				member: func() ([][2]string, string) {
					return [][2]string{{"PRINCIPAL#" + uid, "GRANTGROUP#" + acct + "#" + l.id}, {"RBAC#" + acct, "GROUP#" + l.id}}, l.id
				}}
		}},
	}
}

// authorizerRow is one measured request of measureAuthorizerAtScale.
type authorizerRow struct {
	label string
	costRow
}

// measureAuthorizerAtScale measures the authorizer's cold path for a user
// whose key is in the root account, on one platform: with 10 roles held
// (of the account's few), then with 990 more roles defined but not held,
// then with those held too (each role and grant a copy written with
// BatchWriteItem). Each time an allowed request, `GET /v2/accounts/{id}`,
// which every held role grants, a refused one, `GET
// /v2/accounts/{id}/roles`, which none does, and the first page of a list
// filtered by permission, `GET /v2/applications?limit=5`, whose members
// every held role lets the user GET. An allowed request must cost the
// authorizer the same in all three (its first grants and the roles they
// name, by key), and so must a refusal whatever the roles defined but not
// held; a refusal reads every held role, so it costs more with 1,000 (the
// stated exception). The list must also cost the function the same in all
// three: its Decider reads as the authorizer does.
func measureAuthorizerAtScale(t *testing.T) []authorizerRow {
	c := startCostTour(t)
	c.delay = scaleDelay
	op, root := c.p.Bootstrap.Secret, c.p.Bootstrap.RootAccount
	ctx := context.Background()
	uid := c.step("", 200, "POST", "/v2/users", op, map[string]any{"email": "holder@example.com", "name": "Holder"}).str("id")
	secret := c.step("", 200, "POST", "/v2/users/"+uid+"/access-keys", op, map[string]any{"type": "bearer", "account": "/v2/accounts/" + root}).str("secret_key")
	var last string
	for i := range 10 {
		now := c.p.Deps.Store.Now().Truncate(time.Second)
		r := domain.Role{AccountID: root, ID: fmt.Sprintf("heldrole%08d", i), Name: fmt.Sprintf("Held %d", i),
			Permissions: []authz.Permission{{Method: "GET", Effect: "permit", Spec: []string{"/v2/accounts/" + root, "/v2/applications", "/v2/applications/*"}}},
			Version:     1, Created: now, Updated: now}
		if err := c.p.Deps.Store.Roles.CreateRole(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := c.p.Deps.Store.Roles.PutGrant(ctx, domain.Grant{PrincipalID: uid, AccountID: root, RoleID: r.ID, Via: "cost", Created: now}); err != nil {
			t.Fatal(err)
		}
		last = r.ID
	}
	// The root account's applications, for a page of 5 and more.
	for i := range 6 {
		c.step("", 200, "POST", "/v2/applications", op, map[string]any{"name": fmt.Sprintf("Listed %d", i), "aliases": []string{fmt.Sprintf("listed%d.example.com", i)}})
	}
	// The lists measured follow no write within the journal's window
	// (as in measureAtScale).
	c.atRest()
	allowed, refused, list := c.routes["getAccountsById"], c.routes["getAccountsByIdRoles"], c.routes["getApplications"]
	measure := func(label, path string, status, members int, route sam.Route) authorizerRow {
		defer c.measuring()()
		// Twice: the first request also touches the key's last_used.
		for range 2 {
			c.counter.Reset()
			if r := c.send("GET", path, secret, "", nil); r.status != status || members > 0 && len(r.list) != members {
				t.Fatalf("%s: %d %s, want %d with %d members", label, r.status, r.raw, status, members)
			}
		}
		c.record(label, route)
		return authorizerRow{label: label, costRow: c.rows[label]}
	}
	both := func(what string) [3]authorizerRow {
		return [3]authorizerRow{
			measure("`GET /v2/accounts/{id}`, allowed, by a user holding "+what, "/v2/accounts/"+root, http.StatusOK, 0, allowed),
			measure("`GET /v2/accounts/{id}/roles`, refused, by a user holding "+what, "/v2/accounts/"+root+"/roles", http.StatusForbidden, 0, refused),
			measure("`GET /v2/applications`, first page (`limit=5`), by a user holding "+what, "/v2/applications?limit=5", http.StatusOK, 5, list),
		}
	}
	few := both("10 roles of its key's account")
	// The copies: 990 roles, then their 990 grants.
	table := c.p.Deps.Store.Name()
	copies := func(k [2]string) {
		out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: k[0]}, "SK": &types.AttributeValueMemberS{Value: k[1]}}})
		if err != nil || out.Item == nil {
			t.Fatalf("read %s/%s: %v", k[0], k[1], err)
		}
		copyOf := memberCopier(out.Item, last)
		items := make([]map[string]types.AttributeValue, 0, 990)
		for i := range 990 {
			items = append(items, copyOf(fmt.Sprintf("z%015d", i), time.Hour+time.Duration(i)*time.Millisecond))
		}
		if err := c.dyn.Load(ctx, table, items); err != nil {
			t.Fatal(err)
		}
	}
	copies([2]string{"RBAC#" + root, "ROLE#" + last})
	defined := both("10 of the 1,000 roles of its key's account")
	copies([2]string{"PRINCIPAL#" + uid, "GRANT#" + root + "#" + last})
	many := both("1,000 roles of its key's account")
	same := func(a, b costRow) bool {
		return a.aSeq == b.aSeq && a.aCalls == b.aCalls && a.rcu-a.fRCU == b.rcu-b.fRCU
	}
	for _, r := range []authorizerRow{defined[0], many[0]} {
		if !same(few[0].costRow, r.costRow) {
			t.Errorf("an allowed request costs the authorizer more %s than %s:\n%+v\n%+v", r.label, few[0].label, r.costRow, few[0].costRow)
		}
	}
	if !same(few[1].costRow, defined[1].costRow) {
		t.Errorf("a refusal costs the authorizer more with roles defined but not held:\n%+v\n%+v", few[1].costRow, defined[1].costRow)
	}
	// A refusal reads every held role: the rest of the grants, then
	// their roles (BatchGetItem calls of 100 keys, 8 at a time), after
	// the first two round trips.
	if r := many[1]; r.aSeq < 4 || r.aSeq <= few[1].aSeq || r.rcu <= few[1].rcu {
		t.Errorf("a refusal with 1,000 held roles: %+v, want at least 4 round trips and more than with 10 (%+v)", r.costRow, few[1].costRow)
	}
	// The list's permission filter (the function's Decider) reads the
	// first grants and the roles they name, by key, as the authorizer does.
	for _, r := range []authorizerRow{defined[2], many[2]} {
		f, f0 := r.costRow, few[2].costRow
		if !same(f0, f) || f.fSeq != f0.fSeq || f.fCalls != f0.fCalls || f.fRCU != f0.fRCU {
			t.Errorf("a list page costs more %s than %s:\n%+v\n%+v", r.label, few[2].label, f, f0)
		}
	}
	return []authorizerRow{few[0], defined[0], many[0], few[1], defined[1], many[1], few[2], defined[2], many[2]}
}
