package access

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/domain"
)

// Decider makes further decisions for an already authenticated principal
// with the same engine and the same data as the authorizer: one load, then
// any number of decisions (collection filtering, task permissions, the
// policy simulator).
type Decider struct {
	p         apigw.Principal
	ancestors []string // of the key's account
	root      string   // the root account of the key's account; "" if that account is gone
	held      []*authz.CompiledRole
	sets      *authz.RoleSets

	mu       sync.Mutex
	prepared map[string]*authz.Prepared // by target account, for Allows and AllowsFor
}

// deciderInputs is what a Decider decides with, as read for one principal
// and key account; shared read-only by the Deciders made from it.
type deciderInputs struct {
	at        time.Time
	ancestors []string
	root      string
	held      []*authz.CompiledRole
}

// Decider loads the principal's grants and its key account in parallel,
// then the roles of every account it holds grants in: two sequential
// round trips. With the warm path on (WithStaleness), a container reuses
// what it read for the same principal and key account for at most the
// staleness bound, as the authorizer does: a collection or a second
// decision then costs no round trip of its own.
func (s *Service) Decider(ctx context.Context, p apigw.Principal) (*Decider, error) {
	now := s.now()
	ck := p.ID + "/" + p.AccountID
	if s.deciders != nil {
		if in, ok := s.deciders.Get(ck); ok {
			if s.fresh(in.at, now) {
				return &Decider{p: p, ancestors: in.ancestors, root: in.root, held: in.held, sets: s.sets}, nil
			}
			s.deciders.Remove(ck)
		}
	}
	var (
		grants []domain.Grant
		acct   domain.Account
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { grants, err = s.store.Grants(gctx, p.ID); return err })
	if p.AccountID != "" {
		g.Go(func() error {
			var err error
			if acct, err = s.store.GetAccount(gctx, p.AccountID); errors.Is(err, domain.ErrNotFound) {
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	var all []string
	for _, g := range grants {
		all = append(all, g.AccountID)
	}
	held, at, err := s.heldRoles(ctx, grants, all, now)
	if err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	in := &deciderInputs{at: at, ancestors: acct.Ancestors, held: held}
	if acct.ID != "" {
		// From the key account's own item, as the authorizer takes it.
		in.root = authz.RootOf(acct.ID, acct.Ancestors)
	}
	if s.deciders != nil {
		s.deciders.Add(ck, in)
	}
	return &Decider{p: p, ancestors: in.ancestors, root: in.root, held: in.held, sets: s.sets}, nil
}

// Decide decides a request made in the key's account.
func (d *Decider) Decide(method, path string) authz.Decision {
	return authz.Evaluate(authz.Input{Method: method, Path: path, PrincipalID: d.p.ID, KeyAccount: d.p.AccountID,
		Target: d.p.AccountID, TargetAncestors: d.ancestors, Held: d.held, Root: d.root, Sets: d.sets})
}

// Allows reports whether Decide(method, path) would allow, without an
// explanation: for filtering a collection by permission, member by member,
// at the cost of one engine match per member.
func (d *Decider) Allows(method, path string) bool {
	return d.allows(method, path, d.p.AccountID, d.ancestors)
}

// AllowsFor reports whether DecideFor(method, path, target) would allow,
// without an explanation (see Allows).
func (d *Decider) AllowsFor(method, path string, target domain.Account) bool {
	return d.allows(method, path, target.ID, target.Ancestors)
}

func (d *Decider) allows(method, path, target string, ancestors []string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.prepared[target]
	if p == nil {
		if d.prepared == nil {
			d.prepared = map[string]*authz.Prepared{}
		}
		p = authz.Prepare(authz.Input{PrincipalID: d.p.ID, KeyAccount: d.p.AccountID, Target: target, TargetAncestors: ancestors, Held: d.held, Root: d.root, Sets: d.sets})
		d.prepared[target] = p
	}
	return p.Allowed(method, path)
}

// DecideFor decides a request whose path names account target (the
// /v2/accounts/{id} cases), given that account's ancestors.
func (d *Decider) DecideFor(method, path string, target domain.Account) authz.Decision {
	return authz.Evaluate(authz.Input{Method: method, Path: path, PrincipalID: d.p.ID, KeyAccount: d.p.AccountID,
		Target: target.ID, TargetAncestors: target.Ancestors, Held: d.held, Root: d.root, Sets: d.sets})
}

// ApplicableFor returns the roles that apply to a request whose path names
// account target (the /v2/accounts/{id} cases), as the engine selects them
// for the decision: the same scope rules, the same held roles. It is for
// rules that depend on which role applies, not only on what it permits
// (only account owners may invite: docs/api.md#who-may-invite). A request the engine refuses
// before looking at roles (bad path, no account, out of scope) has none.
func (d *Decider) ApplicableFor(method, path string, target domain.Account) []authz.Role {
	if authz.CheckPath(path) != nil || d.p.AccountID == "" {
		return nil
	}
	scope, err := authz.ScopeFor(method, path, d.p.AccountID, target.ID, target.Ancestors)
	if err != nil {
		return nil
	}
	app := authz.Applicable(d.held, target.ID, target.Ancestors, scope)
	out := make([]authz.Role, 0, len(app))
	for _, c := range app {
		// Identity only: callers ask which role applies, not what it permits.
		out = append(out, authz.Role{ID: c.ID(), AccountID: c.AccountID(), Name: c.Name(), Inheritable: c.Inheritable(),
			EntitlementAdministrator: c.EntitlementAdministrator()})
	}
	return out
}

// CanSwitch decides whether the principal may authenticate into account
// (docs/api.md#switching-accounts): GET /v2/accounts/{id} decided as if authenticated there,
// whatever account (or none) the current key is in.
func (d *Decider) CanSwitch(account domain.Account) authz.Decision {
	return authz.CanSwitch(d.held, account.ID, account.Ancestors)
}
