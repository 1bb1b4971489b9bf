package roles

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/listmerge"
	"cads/shared/store"
	"cads/shared/users"
)

// Who can: GET /v2/accounts/{id}/access?method=M&path=P lists the
// principals that the authorizer would allow M P with a key authenticated
// into the account (docs/rbac.md, Who can). Candidates come from the
// holders of the roles that could grant the request and the members of
// the groups holding them (every role that allows a request allows it
// alone: a deny is local to its role); each candidate is then decided
// from its own grants, read as the authorizer reads them
// (access.Service.DeciderIn), so the list cannot disagree with a decision.

const (
	// MaxAccessAccounts bounds the accounts whose roles are read for one
	// question: the request's account and its ancestors.
	MaxAccessAccounts = 100
	// MaxAccessSources bounds the roles and groups that could grant the
	// request: each is a collection of holders read on every page.
	MaxAccessSources = 100
	// accessFanOut bounds the principals decided at once.
	accessFanOut = 32
)

// Access is a member of GET /v2/accounts/{id}/access: a principal allowed
// the request, and why.
type Access struct {
	Principal string `json:"principal"` // href: /v2/users/{id} or the service user's
	Kind      string `json:"kind"`
	Name      string `json:"name,omitempty"`
	Email     string `json:"email,omitempty"` // users only
	// Role is the role that grants the request, as the authorizer picks
	// it; absent for a self-service request.
	Role     string `json:"role,omitempty"`
	RoleName string `json:"role_name,omitempty"`
	// Groups are the principal's groups that give it Role; absent when it
	// holds Role only directly.
	Groups     []string     `json:"groups,omitempty"`
	Permission *users.Grant `json:"permission,omitempty"`
	Reason     string       `json:"reason"`
}

var accessMethods = map[string]bool{"GET": true, "POST": true, "PATCH": true, "PUT": true, "DELETE": true}

// source is one collection of candidates: a role's holders or a group's
// members (or, self, the one principal a /v2/users/{id}/... path names).
type source struct {
	ref   domain.RBACRef
	group bool
	self  string
}

// candidate is a principal found in the sources, with the grants that made
// it one, and once decided, its decision.
type candidate struct {
	id      string
	via     []source
	p       domain.Principal
	allowed bool
	dec     authz.Decision
}

// question is what one request asks, with what was read to answer it.
type question struct {
	method, path string
	key          domain.Account // the account asked about: the key's
	target       domain.Account // the account the path names, else key
	fromPath     bool
	sources      []source
	groupRoles   map[domain.RBACRef][]string // relevant group -> its roles
	known        *access.Known               // every role and group of the accounts whose roles apply
}

func (h *handler) whoCan(r *http.Request, p caller.Principal) (int, any, error) {
	acct, err := accountID(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	method, path := strings.ToUpper(q.Get("method")), q.Get("path")
	switch {
	case method == "" || path == "":
		return 0, nil, domain.Errorf(domain.Invalid, "method and path are required: the request to ask about, e.g. method=DELETE&path=/v2/applications/{id}")
	case !accessMethods[method]:
		return 0, nil, domain.Errorf(domain.Invalid, "method must be one of GET, POST, PATCH, PUT, DELETE")
	}
	if err := authz.CheckPath(path); err != nil {
		return 0, nil, domain.Errorf(domain.Invalid, "path: %s", err.Error())
	}
	if authz.SelfService(method, path, "") {
		return 0, nil, domain.Errorf(domain.Invalid, "path: %s %s is self-service: every principal may make it on its own identity, without a role", method, path)
	}
	page, err := apigw.ParsePage(q, "id")
	if err != nil {
		return 0, nil, err
	}
	qu, err := h.ask(r.Context(), p, acct, method, path)
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[candidate, Access]{
		Name: "access", Indexed: "id", ValidPosition: store.ValidPrincipalPosition,
		Read: func(ctx context.Context, after string, desc bool, n int) ([]candidate, []string, bool, error) {
			return h.candidates(ctx, qu, after, desc, n)
		},
		Allow: func(context.Context) (func(candidate) (bool, error), error) {
			return func(c candidate) (bool, error) { return c.allowed, nil }, nil
		},
		Out: func(c candidate) (Access, error) { return qu.out(c), nil },
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

// ask reads the account, the account the path names, and every role and
// group of the accounts whose roles can apply, and keeps the sources:
// the roles that grant the request alone (decided by the engine) and the
// groups that hold one.
func (h *handler) ask(ctx context.Context, p caller.Principal, acct, method, path string) (*question, error) {
	qu := &question{method: method, path: path, groupRoles: map[domain.RBACRef][]string{}}
	tid, fromPath := authz.Target(method, path, acct)
	qu.fromPath = fromPath && tid != acct
	var tErr error
	err := parallel(
		func() (err error) { qu.key, err = h.st.Accounts.GetAccount(ctx, acct); return err },
		func() error {
			if qu.fromPath {
				qu.target, tErr = h.st.Accounts.GetAccount(ctx, tid)
			}
			return nil
		},
	)
	if err != nil {
		return nil, domain.IfNotFound(err, "no account %s", acct)
	}
	if !qu.fromPath {
		qu.target = qu.key
	} else if tErr != nil && !errors.Is(tErr, domain.ErrNotFound) {
		return nil, tErr
	} else if tErr != nil || !slices.Contains(qu.target.Ancestors, acct) {
		// Said the same way whether it exists: another tenant's account
		// is not confirmed, and its principals are never listed.
		return nil, domain.Errorf(domain.Invalid, "path: account %s is neither this account nor one of its sub-accounts", tid)
	}
	root := authz.RootOf(qu.key.ID, qu.key.Ancestors)
	accounts := append([]string{qu.target.ID}, qu.target.Ancestors...)
	if authz.ClassOf(method, path, "") == authz.ClassGlobal {
		// User routes are decided by the root account's roles alone;
		// asked elsewhere, the answer would list the root's principals.
		if root != acct {
			return nil, domain.Errorf(domain.Invalid, "path: %s %s is a user route, decided by the root account's roles alone: ask in the root account", method, path)
		}
		accounts = []string{root}
	}
	if len(accounts) > MaxAccessAccounts {
		return nil, domain.Errorf(domain.Invalid, "path: the roles of %d accounts can apply (the account and its ancestors); who can is answered for at most %d", len(accounts), MaxAccessAccounts)
	}
	roles, groups, err := h.st.Roles.RBACPartitions(ctx, accounts)
	if err != nil {
		return nil, err
	}
	qu.known = access.NewKnown(accounts, roles, groups)
	// Roles of the accounts above the caller's own (the platform
	// operator's, for a tenant) still decide each candidate, but their
	// holders are not the caller's to see: they are no source.
	hidden := map[string]bool{}
	chain := append(slices.Clone(qu.target.Ancestors), qu.target.ID) // root first
	for _, above := range chain[:max(slices.Index(chain, p.AccountID), 0)] {
		hidden[above] = true
	}
	grants := map[domain.RBACRef]bool{}
	for _, role := range roles {
		c, err := authz.Compile(role.AuthzRole())
		if err != nil {
			continue // as the authorizer: a role that does not compile applies nothing
		}
		in := authz.Input{Method: method, Path: path, KeyAccount: acct, Target: qu.target.ID,
			TargetAncestors: qu.target.Ancestors, Held: []*authz.CompiledRole{c}, Root: root}
		if authz.Evaluate(in).Allowed {
			ref := domain.RBACRef{Account: role.AccountID, ID: role.ID}
			grants[ref] = true
			if !hidden[role.AccountID] {
				qu.sources = append(qu.sources, source{ref: ref})
			}
		}
	}
	for _, g := range groups {
		var via []string
		for _, r := range g.Roles {
			if grants[domain.RBACRef{Account: g.AccountID, ID: r}] {
				via = append(via, r)
			}
		}
		if len(via) > 0 && !hidden[g.AccountID] {
			ref := domain.RBACRef{Account: g.AccountID, ID: g.ID}
			qu.groupRoles[ref] = via
			qu.sources = append(qu.sources, source{ref: ref, group: true})
		}
	}
	if len(qu.sources) > MaxAccessSources {
		return nil, domain.Errorf(domain.Invalid, "path: %d roles and groups can grant %s %s; who can is answered for at most %d", len(qu.sources), method, path, MaxAccessSources)
	}
	// The user a /v2/users/{id}/... path names may be allowed on itself
	// (self-service, or roles of this account's that apply to it alone).
	if rest, ok := strings.CutPrefix(path, "/v2/users/"); ok {
		if who, _, _ := strings.Cut(rest, "/"); store.ValidPrincipalPosition(who) {
			qu.sources = append(qu.sources, source{self: who})
		}
	}
	return qu, nil
}

// holders is one source's part of a read.
type holders struct {
	pos  []string
	more bool
}

// candidates is the list's apigw.Source: a k-way merge, in principal id
// order, of the sources' holders read from after, each decided.
func (h *handler) candidates(ctx context.Context, qu *question, after string, desc bool, n int) ([]candidate, []string, bool, error) {
	if len(qu.sources) == 0 {
		return nil, nil, false, nil
	}
	// Every source is read on every page: bound what one read examines.
	per := max(1, min(n, apigw.ReadBudget/len(qu.sources)))
	pages := make([]holders, len(qu.sources))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(accessFanOut)
	for i, s := range qu.sources {
		if s.self != "" {
			if after == "" || (s.self > after) != desc && s.self != after {
				pages[i] = holders{pos: []string{s.self}}
			}
			continue
		}
		g.Go(func() error {
			_, pos, more, err := h.st.Roles.PageHolders(gctx, s.ref, s.group, after, desc, per)
			pages[i] = holders{pos, more}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, false, err
	}
	cs, more := mergeHolders(qu.sources, pages, desc, n)
	if err := h.decideAll(ctx, qu, cs); err != nil {
		return nil, nil, false, err
	}
	pos := make([]string, len(cs))
	for i, c := range cs {
		pos[i] = c.id
	}
	return cs, pos, more, nil
}

// mergeHolders makes at most n candidates of the sources' pages, in the
// read's direction (listmerge.Union), each with every source that holds it.
func mergeHolders(sources []source, pages []holders, desc bool, n int) ([]candidate, bool) {
	sorted := make([]listmerge.Sorted, len(pages))
	for i, p := range pages {
		sorted[i] = listmerge.Sorted{Pos: p.pos, More: p.more}
	}
	via := map[string][]source{}
	ids, more := listmerge.Union(sorted, desc, n, func(src, i int) {
		id := pages[src].pos[i]
		via[id] = append(via[id], sources[src])
	})
	out := make([]candidate, len(ids))
	for i, id := range ids {
		out[i] = candidate{id: id, via: via[id]}
	}
	return out, more
}

// decideAll decides each candidate as the authorizer would for a key of
// it authenticated into the account: its principal item (a grant may
// outlive its principal; the authorizer authenticates nobody then) and
// its own grants, read by access's Decider (the roles and groups they
// name in the accounts that matter are those ask read), all at once.
func (h *handler) decideAll(ctx context.Context, qu *question, cs []candidate) error {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.id
	}
	var (
		mu      sync.Mutex
		byID    = map[string]domain.Principal{}
		g, gctx = errgroup.WithContext(ctx)
	)
	g.SetLimit(accessFanOut)
	g.Go(func() error {
		ps, err := h.st.Roles.GetPrincipals(gctx, ids)
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps {
			byID[p.ID] = p
		}
		return err
	})
	for i := range cs {
		g.Go(func() error {
			d, err := h.dec.DeciderOver(gctx, caller.Principal{ID: cs[i].id, AccountID: qu.key.ID}, qu.key, qu.known)
			if err != nil {
				return err
			}
			if qu.fromPath {
				cs[i].dec, err = d.DecideFor(gctx, qu.method, qu.path, qu.target)
			} else {
				cs[i].dec, err = d.Decide(gctx, qu.method, qu.path)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i := range cs {
		p, ok := byID[cs[i].id]
		// A service user has keys in its own account only: it can make no
		// request in another, whatever it holds there.
		cs[i].p = p
		cs[i].allowed = ok && cs[i].dec.Allowed && (p.Kind != domain.KindServiceUser || p.Account == qu.key.ID)
	}
	return nil
}

// out is a candidate as the list shows it.
func (qu *question) out(c candidate) Access {
	a := Access{Principal: userHref(c.p.ID), Kind: c.p.Kind, Name: c.p.Name, Role: c.dec.Role, RoleName: c.dec.RoleName, Reason: c.dec.Explain()}
	if c.p.Kind == domain.KindServiceUser {
		a.Principal = serviceUserHref(c.p.Account, c.p.ID)
	} else {
		a.Email = c.p.Email
	}
	if m := c.dec.Permission; m != nil {
		a.Permission = &users.Grant{Index: m.Permission, Method: m.Method, Spec: m.Pattern, Effect: m.Effect}
	}
	for _, s := range c.via {
		if !s.group {
			continue
		}
		for _, r := range qu.groupRoles[s.ref] {
			if roleHref(s.ref.Account, r) == c.dec.Role {
				a.Groups = append(a.Groups, groupHref(s.ref.Account, s.ref.ID))
				break
			}
		}
	}
	return a
}
