package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"cads/infra/testenv"
	"cads/shared/domain"
	"cads/shared/store"
)

// laggingIndex makes a client's index Queries see the index as it was
// when frozen: it copies the index partitions named at freeze time and
// answers every Query with IndexName from that copy (key condition,
// start key, direction and Limit as DynamoDB applies them, with a
// LastEvaluatedKey whenever the Limit is reached, as DynamoDB does), so a
// write made after freeze is invisible to the index, as within a real
// GSI's propagation delay, while reads of the table stay consistent.
type laggingIndex struct {
	mu     sync.Mutex
	frozen map[string][]map[string]types.AttributeValue // index + "|" + partition → items in index order
	missed []string
	clock  func() time.Time
	skew   time.Duration
}

func newLaggingStore(t *testing.T) (*store.Store, *laggingIndex, testenv.Dynamo) {
	t.Helper()
	d := testenv.NewDynamo(t)
	lag := &laggingIndex{clock: time.Now}
	c := dynamodb.New(d.Client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("laggingIndex", lag.handle), middleware.Before)
		})
	})
	return store.New(c, d.Table, store.WithClock(lag.now)), lag, d
}

func (l *laggingIndex) now() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.clock().Add(l.skew)
}

// later moves the store's clock past the journal's window: what was
// written before is the index's alone to show.
func (l *laggingIndex) later() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skew += 6 * time.Second
}

func gsiNames(ix string) (string, string) {
	n := strings.TrimPrefix(ix, "GSI")
	return "GSI" + n + "PK", "GSI" + n + "SK"
}

// freeze copies the named index partitions (index, partition pairs).
func (l *laggingIndex) freeze(t *testing.T, d testenv.Dynamo, parts ...[2]string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frozen = map[string][]map[string]types.AttributeValue{}
	for _, p := range parts {
		pkName, skName := gsiNames(p[0])
		out, err := d.Client.Query(context.Background(), &dynamodb.QueryInput{
			TableName: aws.String(d.Table), IndexName: aws.String(p[0]),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": pkName},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: p[1]}},
		})
		if err != nil || out.LastEvaluatedKey != nil {
			t.Fatalf("freeze %v: %v (one page expected)", p, err)
		}
		items := out.Items
		sort.SliceStable(items, func(i, j int) bool { return str(items[i], skName) < str(items[j], skName) })
		l.frozen[p[0]+"|"+p[1]] = items
	}
}

func (l *laggingIndex) thaw() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frozen = nil
}

func str(it map[string]types.AttributeValue, a string) string {
	if v, ok := it[a].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (l *laggingIndex) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	q, ok := in.Parameters.(*dynamodb.QueryInput)
	if !ok || q.IndexName == nil {
		return next.HandleInitialize(ctx, in)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen == nil {
		return next.HandleInitialize(ctx, in)
	}
	pkName, skName := gsiNames(*q.IndexName)
	pk := str(q.ExpressionAttributeValues, ":pk")
	items, ok := l.frozen[*q.IndexName+"|"+pk]
	if !ok {
		l.missed = append(l.missed, *q.IndexName+" "+pk)
		return next.HandleInitialize(ctx, in)
	}
	keep := func(sk string) bool { return true }
	switch cond := *q.KeyConditionExpression; {
	case strings.Contains(cond, "begins_with"):
		p := str(q.ExpressionAttributeValues, ":sk")
		keep = func(sk string) bool { return strings.HasPrefix(sk, p) }
	case strings.Contains(cond, "BETWEEN"):
		lo, hi := str(q.ExpressionAttributeValues, ":lo"), str(q.ExpressionAttributeValues, ":hi")
		keep = func(sk string) bool { return sk >= lo && sk <= hi }
	case cond != "#pk = :pk" && cond != pkName+" = :pk":
		return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("laggingIndex: key condition %q not modelled", cond)
	}
	var sel []map[string]types.AttributeValue
	for _, it := range items {
		if keep(str(it, skName)) {
			sel = append(sel, it)
		}
	}
	if q.ScanIndexForward != nil && !*q.ScanIndexForward {
		sel = slices.Clone(sel)
		slices.Reverse(sel)
	}
	if esk := q.ExclusiveStartKey; esk != nil {
		from := str(esk, skName)
		i := 0
		for i < len(sel) {
			sk := str(sel[i], skName)
			if (q.ScanIndexForward == nil || *q.ScanIndexForward) && sk > from || (q.ScanIndexForward != nil && !*q.ScanIndexForward) && sk < from {
				break
			}
			i++
		}
		sel = sel[i:]
	}
	out := &dynamodb.QueryOutput{}
	if q.Limit != nil && len(sel) >= int(*q.Limit) {
		sel = sel[:*q.Limit]
		last := sel[len(sel)-1]
		out.LastEvaluatedKey = map[string]types.AttributeValue{pkName: last[pkName], skName: last[skName], "PK": last["PK"], "SK": last["SK"]}
	}
	out.Items, out.Count = sel, int32(len(sel))
	return middleware.InitializeOutput{Result: out}, middleware.Metadata{}, nil
}

// member is what a list shows of a member: its id and a version, so that
// an update not seen shows.
type lister func(ctx context.Context, after string, desc bool, n int) ([]string, []string, bool, error)

func listOf[T any](page func(ctx context.Context, after string, desc bool, n int) ([]T, []string, bool, error), show func(T) string) lister {
	return func(ctx context.Context, after string, desc bool, n int) ([]string, []string, bool, error) {
		items, pos, more, err := page(ctx, after, desc, n)
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = show(it)
		}
		return out, pos, more, err
	}
}

// walkAll reads the whole collection n at a time following positions.
func walkAll(t *testing.T, l lister, desc bool, n int) []string {
	t.Helper()
	var got []string
	after := ""
	for range 50 {
		items, pos, more, err := l(context.Background(), after, desc, n)
		if err != nil || len(items) != len(pos) || len(items) > n {
			t.Fatalf("page after %q: %d items, %d positions, %v", after, len(items), len(pos), err)
		}
		got = append(got, items...)
		if !more || len(items) == 0 {
			return got
		}
		after = pos[len(pos)-1]
	}
	t.Fatal("no end after 50 pages")
	return nil
}

// For every collection kept in an index: a member created, changed or
// removed right before a list is listed as it now is, although the index
// does not show the write yet, in both orders, whole or a page of 2 at a
// time following the cursors. A collection whose write path does not
// journal fails here: its lagging list differs from the one read once the
// index caught up.
func TestListsReadTheirWritesThroughIndexLag(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	type listCase struct {
		name  string
		parts [][2]string
		seed  func(t *testing.T, st *store.Store)
		write func(t *testing.T, st *store.Store)
		list  func(st *store.Store) lister
	}
	role := func(id string, i, v int) domain.Role {
		return domain.Role{AccountID: "a1", ID: id, Name: fmt.Sprintf("r%s v%d", id, v), Version: v, Created: at(i), Updated: at(i)}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// An invitation is in its account's list and, once sent, in its
	// invitee's inbox: one created queued and then sent, one revoked.
	invSeed := func(t *testing.T, st *store.Store) {
		must(t, st.Roles.CreateRole(ctx, role("r1", 0, 1)))
		for i := range 3 {
			must(t, st.Invitations.CreateInvitation(ctx, domain.Invitation{AccountID: "a1", ID: fmt.Sprintf("i%d", i), Kind: domain.InvitationRole, Email: "u1@example.com",
				Target: "r1", State: domain.InvitationSent, Created: at(i), Updated: at(i)}, nil))
		}
	}
	invWrite := func(t *testing.T, st *store.Store) {
		queued := domain.Invitation{AccountID: "a1", ID: "i9", Kind: domain.InvitationRole, Email: "u1@example.com",
			Target: "r1", State: domain.InvitationQueued, Created: at(1), Updated: at(1)}
		must(t, st.Invitations.CreateInvitation(ctx, queued, nil))
		_, err := st.Invitations.MarkInvitationSent(ctx, queued)
		must(t, err)
		inv, err := st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, "i0")
		must(t, err)
		must(t, st.Invitations.DeleteInvitation(ctx, inv))
		// The invitee's answer: its inbox lists it declined.
		inv, err = st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, "i2")
		must(t, err)
		_, err = st.Invitations.DeclineInvitation(ctx, inv)
		must(t, err)
	}
	// Writes of the task worker: a claim (running), a release after a
	// retryable failure (its error), a finish (its state and result) and
	// an application's transition begun and ended.
	claim := func(t *testing.T, st *store.Store, id string) {
		now := st.Now()
		_, err := st.Tasks.ClaimTask(ctx, id, "w-"+id, now, now.Add(time.Minute))
		must(t, err)
	}
	// Address sets whose includers count another set's write changes:
	// s3 includes s2 and s4 includes s5 before the writes.
	addrSet := func(id string, v int, inc ...string) domain.AddressSet {
		return domain.AddressSet{ID: id, Account: "a1", Name: id, Type: "manual", Version: v, Inclusions: inc, Created: at(0), Updated: at(v)}
	}
	cases := []listCase{{
		name:  "roles",
		parts: [][2]string{{store.IndexGSI2, "ROLES#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i, id := range []string{"r5", "r4", "r3", "r2", "r1"} {
				must(t, st.Roles.CreateRole(ctx, role(id, i, 1)))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Roles.CreateRole(ctx, role("r0", 2, 1))) // between r3 and r2 (same time: id order)
			must(t, st.Roles.CreateRole(ctx, role("r9", 9, 1))) // last
			must(t, st.Roles.PutRole(ctx, role("r4", 1, 2)))    // changed
			_, err := st.Roles.DeleteRole(ctx, "a1", "r2")      // gone
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Role, []string, bool, error) {
				return st.Roles.PageRoles(ctx, "a1", a, d, n)
			}, func(r domain.Role) string { return r.Name })
		},
	}, {
		name:  "entitlements",
		parts: [][2]string{{store.IndexGSI2, "ENTITLEMENTS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 4 {
				must(t, st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: fmt.Sprintf("e%d", i), Account: "a1", Resource: "applications", Quantity: 1,
					Period: "month", Started: t0, Version: 1, Created: at(i), Updated: at(i)}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: "e9", Account: "a1", Resource: "applications", Quantity: 9,
				Period: "month", Started: t0, Version: 1, Created: at(1), Updated: at(1)}))
			must(t, st.Entitlements.PutEntitlement(ctx, domain.Entitlement{ID: "e2", Account: "a1", Resource: "applications", Quantity: 7,
				Period: "month", Started: t0, Version: 2, Created: at(2), Updated: at(5)}))
			_, err := st.Entitlements.DeleteEntitlement(ctx, "a1", "e0")
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Entitlement, []string, bool, error) {
				return st.Entitlements.PageEntitlements(ctx, "a1", a, d, n)
			}, func(e domain.Entitlement) string { return fmt.Sprintf("%s:%d", e.ID, e.Quantity) })
		},
	}, {
		name:  "access keys",
		parts: [][2]string{{store.IndexGSI2, "KEYS#u1"}},
		seed: func(t *testing.T, st *store.Store) {
			must(t, st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com", Created: t0, Updated: t0}))
			for i := range 4 {
				must(t, st.Principals.CreateKey(ctx, domain.AccessKey{ID: fmt.Sprintf("k%d", i), PrincipalID: "u1", Type: "bearer",
					Durability: domain.DurabilityPersistent, SecretHash: "h", Created: at(i)}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Principals.CreateKey(ctx, domain.AccessKey{ID: "k9", PrincipalID: "u1", Type: "bearer",
				Durability: domain.DurabilityPersistent, SecretHash: "h", Created: at(9)}))
			_, err := st.Principals.DeleteKey(ctx, "u1", "k1")
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.AccessKey, []string, bool, error) {
				return st.Principals.PageKeys(ctx, "u1", a, d, n)
			}, func(k domain.AccessKey) string { return k.ID })
		},
	}, {
		name:  "users",
		parts: [][2]string{{store.IndexGSI1, "USERS"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 4 {
				id := fmt.Sprintf("u%d", i)
				must(t, st.Principals.CreatePrincipal(ctx, domain.Principal{ID: id, Kind: domain.KindUser, Name: "old", Email: id + "@example.com", Created: at(i), Updated: at(i)}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u9", Kind: domain.KindUser, Name: "new", Email: "u9@example.com", Created: at(0), Updated: at(0)}))
			name := "renamed"
			_, err := st.Principals.UpdatePrincipal(ctx, "u2", store.PrincipalChange{Name: &name})
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(st.Principals.PageUsers, func(p domain.Principal) string { return p.ID + ":" + p.Name })
		},
	}, {
		name:  "applications",
		parts: [][2]string{{store.IndexGSI1, "APPS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 4 {
				newApp(t, st, "a1", fmt.Sprintf("app%d", i))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			newApp(t, st, "a1", "app9")
			_, err := st.Applications.UpdateApplicationConfig(ctx, "a1", "app1", 1, `{"name":"changed"}`)
			must(t, err)
			_, err = st.Applications.DeleteApplication(ctx, "a1", "app2")
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Application, []string, bool, error) {
				return st.Applications.PageApplications(ctx, "a1", a, d, n)
			}, func(a domain.Application) string { return a.ID + ":" + a.Config })
		},
	}, {
		name:  "groups",
		parts: [][2]string{{store.IndexGSI2, "GROUPS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			must(t, st.Roles.CreateRole(ctx, role("r1", 0, 1)))
			for i, id := range []string{"g3", "g2", "g1"} {
				must(t, st.Roles.CreateGroup(ctx, domain.Group{AccountID: "a1", ID: id, Name: id + " v1", Roles: []string{"r1"}, Version: 1, Created: at(i), Updated: at(i)}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Roles.CreateGroup(ctx, domain.Group{AccountID: "a1", ID: "g9", Name: "g9 v1", Roles: []string{"r1"}, Version: 1, Created: at(0), Updated: at(0)}))
			must(t, st.Roles.PutGroup(ctx, domain.Group{AccountID: "a1", ID: "g2", Name: "g2 v2", Roles: []string{"r1"}, Version: 2, Created: at(1), Updated: at(3)}))
			_, err := st.Roles.DeleteGroup(ctx, "a1", "g1")
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Group, []string, bool, error) {
				return st.Roles.PageGroups(ctx, "a1", a, d, n)
			}, func(g domain.Group) string { return g.Name })
		},
	}, {
		name:  "invitations",
		parts: [][2]string{{store.IndexGSI2, "INVITATIONS#a1"}},
		seed:  invSeed, write: invWrite,
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Invitation, []string, bool, error) {
				return st.Invitations.PageInvitations(ctx, "a1", domain.InvitationRole, a, d, n)
			}, func(i domain.Invitation) string { return i.ID + ":" + i.State })
		},
	}, {
		name:  "inbox",
		parts: [][2]string{{store.IndexGSI3, "INVITEE#u1@example.com"}},
		seed:  invSeed, write: invWrite,
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Invitation, []string, bool, error) {
				return st.Invitations.PageInbox(ctx, "u1@example.com", domain.InvitationRole, a, d, n)
			}, func(i domain.Invitation) string { return i.ID + ":" + i.State })
		},
	}, {
		name:  "held roles",
		parts: [][2]string{{store.IndexGSI2, "HELD#u1"}},
		seed: func(t *testing.T, st *store.Store) {
			must(t, st.Principals.CreatePrincipal(ctx, domain.Principal{ID: "u1", Kind: domain.KindUser, Email: "u1@example.com", Created: t0, Updated: t0}))
			for i, id := range []string{"r3", "r2", "r1"} {
				must(t, st.Roles.CreateRole(ctx, role(id, i, 1)))
				must(t, st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: "a1", RoleID: id, Via: "test", Created: at(i)}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Roles.CreateRole(ctx, role("r9", 5, 1)))
			must(t, st.Roles.PutGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: "a1", RoleID: "r9", Via: "test", Created: at(5)}))
			must(t, st.Roles.PutRole(ctx, role("r2", 1, 2))) // the role itself changed: read by key
			must(t, st.Roles.DeleteGrant(ctx, domain.Grant{PrincipalID: "u1", AccountID: "a1", RoleID: "r3", Via: "test"}, domain.InvitationRef{}))
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Role, []string, bool, error) {
				return st.Roles.PageHeldRoles(ctx, "u1", a, d, n)
			}, func(r domain.Role) string { return r.Name })
		},
	}, {
		name:  "accounts",
		parts: [][2]string{{store.IndexGSI2, "ACCOUNTS"}},
		seed:  func(t *testing.T, st *store.Store) { ensureAccount(t, st, "a2") },
		write: func(t *testing.T, st *store.Store) { ensureAccount(t, st, "a3") },
		list: func(st *store.Store) lister {
			return listOf(st.Accounts.PageAccounts, func(a domain.AccountRecord) string { return a.ID })
		},
	}, {
		name:  "service users",
		parts: [][2]string{{store.IndexGSI1, "SERVICEUSERS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 3 {
				id := fmt.Sprintf("su%d", i)
				must(t, st.Principals.CreateServiceUser(ctx, domain.ServiceUser{ID: id, Kind: domain.KindServiceUser, Name: "v1", Email: domain.ServiceUserEmail("a1", id), Account: "a1", Created: at(i)},
					domain.AccessKey{ID: "k" + id, PrincipalID: id, Type: "bearer", Account: "a1", AccountAncestors: []string{}}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Principals.CreateServiceUser(ctx, domain.ServiceUser{ID: "su9", Kind: domain.KindServiceUser, Name: "v1", Email: domain.ServiceUserEmail("a1", "su9"), Account: "a1", Created: at(0)},
				domain.AccessKey{ID: "ksu9", PrincipalID: "su9", Type: "bearer", Account: "a1", AccountAncestors: []string{}}))
			name := "v2"
			_, err := st.Principals.UpdateServiceUser(ctx, "a1", "su1", &name, nil)
			must(t, err)
			_, err = st.Principals.DeleteServiceUser(ctx, "a1", "su2")
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.ServiceUser, []string, bool, error) {
				return st.Principals.PageServiceUsers(ctx, "a1", a, d, n)
			}, func(u domain.ServiceUser) string { return u.ID + ":" + u.Name })
		},
	}, {
		name:  "metric prototypes",
		parts: [][2]string{{store.IndexGSI1, "METRICPROTOS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 3 {
				must(t, st.Metrics.CreateMetricPrototype(ctx, domain.MetricPrototype{ID: fmt.Sprintf("p%d", i), Account: "a1", DefaultName: "m", Display: "m",
					Expression: "count()", LogType: "proxy-logs", DefaultFrequency: 60, Created: at(i)}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Metrics.CreateMetricPrototype(ctx, domain.MetricPrototype{ID: "p9", Account: "a1", DefaultName: "m", Display: "m",
				Expression: "count()", LogType: "proxy-logs", DefaultFrequency: 60, Created: at(1)}))
			_, err := st.Metrics.DeleteMetricPrototype(ctx, "a1", "p0")
			must(t, err)
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.MetricPrototype, []string, bool, error) {
				return st.Metrics.PageMetricPrototypes(ctx, "a1", a, d, n)
			}, func(p domain.MetricPrototype) string { return p.ID })
		},
	}, {
		name:  "tasks",
		parts: [][2]string{{store.IndexGSI1, "TASKS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 3 {
				newTask(t, st, fmt.Sprintf("t%d", i), "a1", at(i))
			}
		},
		write: func(t *testing.T, st *store.Store) { newTask(t, st, "t9", "a1", at(1)) },
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Task, []string, bool, error) {
				return st.Tasks.PageTasks(ctx, "a1", time.Time{}, time.Time{}, a, d, n)
			}, func(t domain.Task) string { return t.ID })
		},
	}, {
		name:  "task states",
		parts: [][2]string{{store.IndexGSI1, "TASKS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 4 {
				newTask(t, st, fmt.Sprintf("t%d", i), "a1", at(i))
			}
			claim(t, st, "t1")
			claim(t, st, "t3")
		},
		write: func(t *testing.T, st *store.Store) {
			// Each write on a task no other write touches.
			claim(t, st, "t0")
			must(t, st.Tasks.FinishTask(ctx, store.TaskFinish{Account: "a1", ID: "t1", Owner: "w-t1", State: domain.TaskSuccess, Message: "done", Result: `{"n":1}`}))
			must(t, st.Tasks.ReleaseTask(ctx, "a1", "t3", "w-t3", "boom"))
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Task, []string, bool, error) {
				return st.Tasks.PageTasks(ctx, "a1", time.Time{}, time.Time{}, a, d, n)
			}, func(t domain.Task) string { return t.ID + ":" + t.State + ":" + t.Result + ":" + t.LastError })
		},
	}, {
		name:  "application states",
		parts: [][2]string{{store.IndexGSI1, "APPS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 4 {
				newApp(t, st, "a1", fmt.Sprintf("app%d", i))
				newTask(t, st, fmt.Sprintf("t%d", i), "a1", at(i))
				claim(t, st, fmt.Sprintf("t%d", i))
			}
			must(t, st.Applications.BeginTransition(ctx, "a1", "app3", domain.AppStopped, domain.AppStarting, "t3"))
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.Applications.BeginTransition(ctx, "a1", "app1", domain.AppStopped, domain.AppStarting, "t1"))
			must(t, st.Applications.BeginTransition(ctx, "a1", "app2", domain.AppStopped, domain.AppStarting, "t2"))
			must(t, st.Tasks.FinishTask(ctx, store.TaskFinish{Account: "a1", ID: "t2", Owner: "w-t2", State: domain.TaskSuccess,
				Transition: &store.Transition{App: "app2", Task: "t2", To: domain.AppRunning}}))
			must(t, st.Tasks.FinishTask(ctx, store.TaskFinish{Account: "a1", ID: "t3", Owner: "w-t3", State: domain.TaskFailed,
				Transition: &store.Transition{App: "app3", Task: "t3", To: domain.AppStopped, Restore: true}}))
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.Application, []string, bool, error) {
				return st.Applications.PageApplications(ctx, "a1", a, d, n)
			}, func(a domain.Application) string { return a.ID + ":" + a.State })
		},
	}, {
		name:  "address set includers",
		parts: [][2]string{{store.IndexGSI1, "ADDRSETS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 6 {
				must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Create: true, Set: addrSet(fmt.Sprintf("s%d", i), 1)}))
			}
			must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: addrSet("s3", 2, "s2"), AddInclusions: []store.AddressSetRef{{ID: "s2", Version: 1}}}))
			must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: addrSet("s4", 2, "s5"), AddInclusions: []store.AddressSetRef{{ID: "s5", Version: 1}}}))
		},
		write: func(t *testing.T, st *store.Store) {
			// Each includers change on a set no other write touches.
			must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: addrSet("s0", 2, "s1"), AddInclusions: []store.AddressSetRef{{ID: "s1", Version: 1}}}))
			must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: addrSet("s4", 3), RemoveInclusions: []string{"s5"}}))
			must(t, st.AddressSets.DeleteAddressSet(ctx, addrSet("s3", 2, "s2"), nil, nil))
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.AddressSet, []string, bool, error) {
				return st.AddressSets.PageAddressSets(ctx, "a1", a, d, n)
			}, func(s domain.AddressSet) string { return fmt.Sprintf("%s:v%d:inc%d", s.ID, s.Version, s.Includers) })
		},
	}, {
		name:  "address sets",
		parts: [][2]string{{store.IndexGSI1, "ADDRSETS#a1"}},
		seed: func(t *testing.T, st *store.Store) {
			for i := range 3 {
				id := fmt.Sprintf("s%d", i)
				must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Create: true, Set: domain.AddressSet{ID: id, Account: "a1", Name: id + " v1", Type: "manual", Version: 1, Created: at(i), Updated: at(i)}}))
			}
		},
		write: func(t *testing.T, st *store.Store) {
			must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Create: true, Set: domain.AddressSet{ID: "s9", Account: "a1", Name: "s9 v1", Type: "manual", Version: 1, Created: at(5), Updated: at(5)}}))
			must(t, st.AddressSets.WriteAddressSet(ctx, store.AddressSetWrite{Set: domain.AddressSet{ID: "s1", Account: "a1", Name: "s1 v2", Type: "manual", Version: 2, Created: at(1), Updated: at(6)}}))
			must(t, st.AddressSets.DeleteAddressSet(ctx, domain.AddressSet{ID: "s0", Account: "a1", Version: 1}, nil, nil))
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.AddressSet, []string, bool, error) {
				return st.AddressSets.PageAddressSets(ctx, "a1", a, d, n)
			}, func(s domain.AddressSet) string { return s.Name })
		},
	}, {
		// The flow of issue 26: a set created with entries, then its
		// addresses.
		name:  "address entries",
		parts: [][2]string{{store.IndexGSI2, "ADDRENTRIES#s1"}},
		seed:  func(t *testing.T, st *store.Store) {},
		write: func(t *testing.T, st *store.Store) {
			now := st.Now()
			w := store.AddressSetWrite{Create: true, Set: domain.AddressSet{ID: "s1", Account: "a1", Name: "one", Type: "manual", Version: 1, EntryCount: 5, Created: now, Updated: now}}
			for _, n := range []string{"10.0.0.0/8", "192.168.1.0/24", "8.8.8.8/32", "2001:db8::/32", "172.16.0.0/12"} {
				w.PutEntries = append(w.PutEntries, domain.AddressEntry{Set: "s1", Prefix: n, Address: n, Created: now})
			}
			must(t, st.AddressSets.WriteAddressSet(ctx, w))
		},
		list: func(st *store.Store) lister {
			return listOf(func(ctx context.Context, a string, d bool, n int) ([]domain.AddressEntry, []string, bool, error) {
				return st.AddressSets.PageAddressEntries(ctx, "s1", a, d, n)
			}, func(e domain.AddressEntry) string { return e.Prefix })
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, lag, d := newLaggingStore(t)
			ensureAccount(t, st, "a1")
			c.seed(t, st)
			before := walkAll(t, c.list(st), false, 100)
			// The seed is older than the journal's window, so only the
			// writes below can make the lists right.
			lag.later()
			lag.freeze(t, d, c.parts...)
			c.write(t, st)
			lag.mu.Lock()
			lag.missed = nil // the writes' own lookups (a role's holders) are not lists
			lag.mu.Unlock()
			type read struct {
				desc bool
				n    int
			}
			var lagging = map[read][]string{}
			for _, r := range []read{{false, 100}, {true, 100}, {false, 2}, {true, 2}, {false, 1}} {
				lagging[r] = walkAll(t, c.list(st), r.desc, r.n)
			}
			if len(lag.missed) > 0 {
				t.Fatalf("index queries outside the frozen partitions: %v", lag.missed)
			}
			lag.thaw()
			want := walkAll(t, c.list(st), false, 100)
			if slices.Equal(want, before) {
				t.Fatalf("the writes changed nothing the list shows: %v", want)
			}
			for r, got := range lagging {
				w := slices.Clone(want)
				if r.desc {
					slices.Reverse(w)
				}
				if !slices.Equal(got, w) {
					t.Errorf("index lagging, desc=%v, pages of %d: listed %v, want %v (before the writes: %v)", r.desc, r.n, got, w, before)
				}
			}
		})
	}
}

// A write its condition refuses leaves no journal item behind: a refused
// request changes nothing in the table.
func TestRefusedWriteLeavesNoJournal(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	ensureAccount(t, st, "a1")
	ensureAccount(t, st, "a2")
	if err := st.Metrics.CreateMetricPrototype(ctx, domain.MetricPrototype{ID: "p1", Account: "a1", DefaultName: "m", Display: "m",
		Expression: "count()", LogType: "proxy-logs", DefaultFrequency: 60, Created: st.Now()}); err != nil {
		t.Fatal(err)
	}
	journal := func(acct string) int {
		out, err := d.Client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(d.Table), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "RECENT#METRICPROTOS#" + acct}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Items)
	}
	if n := journal("a1"); n != 1 {
		t.Fatalf("the create left %d journal items, want 1", n)
	}
	// a2 deleting a1's prototype: refused by its condition.
	if _, err := st.Metrics.DeleteMetricPrototype(ctx, "a2", "p1"); err == nil {
		t.Fatal("another account's prototype was deleted")
	}
	if n := journal("a2"); n != 0 {
		t.Fatalf("the refused delete left %d journal items", n)
	}
	if _, err := st.Metrics.DeleteMetricPrototype(ctx, "a1", "p1"); err != nil {
		t.Fatal(err)
	}
	if n := journal("a1"); n != 2 {
		t.Fatalf("the delete left %d journal items in all, want 2", n)
	}
}

// Deleting a service user deletes the invitations addressed to it, also
// one sent a moment ago that the inbox's index does not show yet.
func TestDeleteServiceUserFindsInvitationsThroughIndexLag(t *testing.T) {
	ctx := context.Background()
	st, lag, d := newLaggingStore(t)
	ensureAccount(t, st, "a1")
	now := st.Now()
	email := domain.ServiceUserEmail("a1", "su1")
	if err := st.Principals.CreateServiceUser(ctx, domain.ServiceUser{ID: "su1", Kind: domain.KindServiceUser, Name: "v1", Email: email, Account: "a1", Created: now},
		domain.AccessKey{ID: "ksu1", PrincipalID: "su1", Type: "bearer", Account: "a1", AccountAncestors: []string{}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Roles.CreateRole(ctx, domain.Role{AccountID: "a1", ID: "r1", Name: "r1", Version: 1, Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	lag.freeze(t, d, [2]string{store.IndexGSI1, "INVITEE#" + email}) // where the delete looks them up
	if err := st.Invitations.CreateInvitation(ctx, domain.Invitation{AccountID: "a1", ID: "i1", Kind: domain.InvitationRole, Email: email,
		Target: "r1", State: domain.InvitationSent, Created: now, Updated: now}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Principals.DeleteServiceUser(ctx, "a1", "su1"); err != nil {
		t.Fatal(err)
	}
	lag.thaw()
	if inv, err := st.Invitations.GetInvitation(ctx, "a1", domain.InvitationRole, "i1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the invitation addressed to the deleted service user remains: %+v %v", inv, err)
	}
}
