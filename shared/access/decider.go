package access

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/domain"
)

// Decider makes further decisions for an already authenticated principal
// with the same engine and the same data as the authorizer, read the same
// way (docs/rbac.md, "What the authorizer reads"): one load of the first
// grants and the roles they name, then any number of decisions
// (collection filtering, task permissions, the policy simulator). A
// refusal that more roles could turn into a grant reads on as the
// authorizer does (Service.readOn), until a role grants it or everything
// was read, and every later decision of the Decider decides with what was
// read. A refusal is so always decided, and explained, with every role
// that applies. Safe for concurrent use.
type Decider struct {
	s    *Service
	p    caller.Principal
	ck   string // its entry in the service's deciders cache
	sets *authz.RoleSets

	mu       sync.Mutex
	in       *deciderInputs
	prepared map[string]*authz.Prepared // by target account, for Allows and AllowsFor
	// reused: in came from the service's warm cache, so a refusal made
	// with it is decided again from the table (until).
	reused bool
}

// deciderInputs is what a Decider decides with, as read for one principal
// and key account; shared read-only by the Deciders made from it (reading
// on makes a new one).
type deciderInputs struct {
	at        time.Time // when the key account was read
	ancestors []string  // of the key's account
	root      string    // the root account of the key's account; "" if that account is gone
	h         *holding  // over every account: a Decider's targets vary
	all       bool      // h holds everything: no decision reads on
}

// Decider reads the principal's first FirstGrants grants and its key
// account in parallel, then the roles and groups those grants name, by
// key: two sequential round trips whatever the number of roles the
// principal holds or its accounts define. With the warm path on
// (WithStaleness), a container reuses what it read (and what its
// Deciders read on) for the same principal and key account for at most
// the staleness bound, as the authorizer does: a collection or a second
// decision then costs no round trip of its own.
func (s *Service) Decider(ctx context.Context, p caller.Principal) (*Decider, error) {
	now := s.now()
	ck := p.ID + "/" + p.AccountID
	if s.deciders != nil {
		if in, ok := s.deciders.Get(ck); ok {
			if s.fresh(in.at, now) && s.fresh(in.h.at, now) {
				d := s.newDecider(p, ck, in)
				d.reused = true
				return d, nil
			}
			s.deciders.Remove(ck)
		}
	}
	in, err := s.readDecider(ctx, p, now, false)
	if err != nil {
		return nil, err
	}
	if s.deciders != nil {
		s.deciders.Add(ck, in)
	}
	return s.newDecider(p, ck, in), nil
}

// Known is every role and group of some accounts, as a caller read them
// consistently (their whole RBAC partitions): what a Decider made with
// DeciderOver takes instead of reading by key the roles and groups its
// principal's grants name in those accounts.
type Known struct {
	rel   []string
	items map[itemKey]*rbacItem
}

// NewKnown is what was read of accounts: roles and groups of those
// accounts (a grant naming one not among them names one that is gone).
func NewKnown(accounts []string, roles []domain.Role, groups []domain.Group) *Known {
	k := &Known{rel: accounts, items: make(map[itemKey]*rbacItem, len(roles)+len(groups))}
	for i := range roles {
		k.items[itemKey{ref: domain.RBACRef{Account: roles[i].AccountID, ID: roles[i].ID}}] = &rbacItem{role: &roles[i]}
	}
	for i := range groups {
		k.items[itemKey{group: true, ref: domain.RBACRef{Account: groups[i].AccountID, ID: groups[i].ID}}] = &rbacItem{group: &groups[i]}
	}
	return k
}

// DeciderOver is a Decider for a principal asked about rather than
// authenticated: p.AccountID is the account acct its key would be in
// (acct read consistently by the caller), and its decisions are on
// targets whose roles are those of known's accounts (the target and its
// ancestors). It holds, as the authorizer's holding does, only the roles
// of those accounts: it reads the principal's first grants (one Query)
// and takes the roles and groups they name from known; a refusal reads on
// as the authorizer does (the rest of the grants, then what they name, by
// key). Nothing comes from or goes to the container's caches, so every
// principal is decided from the table as it is now. Who can
// (GET /v2/accounts/{id}/access) decides each principal with it.
func (s *Service) DeciderOver(ctx context.Context, p caller.Principal, acct domain.Account, known *Known) (*Decider, error) {
	if acct.ID != p.AccountID || acct.ID == "" {
		return nil, fmt.Errorf("decider: account %q is not the key account %q", acct.ID, p.AccountID)
	}
	grants, more, err := s.store.Roles.FirstGrants(ctx, p.ID, FirstGrants)
	if err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	now := s.now()
	h := newHolding(known.rel, grants, true, more, now)
	h.bypass = true
	for {
		roles, groups := h.pending()
		if len(roles)+len(groups) == 0 {
			break
		}
		for _, k := range keysOf(roles, groups) {
			it := known.items[k]
			if it == nil {
				it = &rbacItem{} // not in the partitions read: gone
			}
			h.add(k, &rbacItem{at: now, role: it.role, group: it.group})
		}
	}
	h.held = s.compile(ctx, h)
	in := &deciderInputs{at: now, ancestors: acct.Ancestors, h: h, all: h.complete(), root: authz.RootOf(acct.ID, acct.Ancestors)}
	// No cache key: its holding covers known's accounts only, so it must
	// never serve another Decider.
	return s.newDecider(p, "", in), nil
}

// readDecider reads what a Decider decides with: the two round trips.
// bypass takes no role or group from the container's item cache.
func (s *Service) readDecider(ctx context.Context, p caller.Principal, now time.Time, bypass bool) (*deciderInputs, error) {
	var (
		grants []domain.Grant
		more   bool
		acct   domain.Account
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { grants, more, err = s.store.Roles.FirstGrants(gctx, p.ID, FirstGrants); return err })
	if p.AccountID != "" {
		g.Go(func() error {
			var err error
			if acct, err = s.store.Accounts.GetAccount(gctx, p.AccountID); errors.Is(err, domain.ErrNotFound) {
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	h := newHolding(nil, grants, true, more, now)
	h.bypass = bypass
	h, err := s.step(ctx, h, p.ID, now)
	if err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	in := &deciderInputs{at: now, ancestors: acct.Ancestors, h: h, all: h.complete()}
	if acct.ID != "" {
		// From the key account's own item, as the authorizer takes it.
		in.root = authz.RootOf(acct.ID, acct.Ancestors)
	}
	return in, nil
}

func (s *Service) newDecider(p caller.Principal, ck string, in *deciderInputs) *Decider {
	return &Decider{s: s, p: p, ck: ck, sets: s.sets, in: in}
}

// readOn reads on (Service.readOn), deciding again after each read with
// everything read so far, until decided reports that the decision needs
// no more roles or everything was read; it keeps what it read for the
// later decisions of this Decider and, warm, of the container's next
// ones. d.mu is held.
func (d *Decider) readOn(ctx context.Context, decided func() bool) error {
	h, err := d.s.readOn(ctx, d.in.h, d.p.ID, d.s.now(), func(h *holding) bool {
		d.use(h)
		return decided()
	})
	if err != nil {
		return fmt.Errorf("decider: %w", err)
	}
	d.use(h)
	d.in.all = h.complete()
	if d.s.deciders != nil && d.ck != "" {
		d.s.deciders.Add(d.ck, d.in)
	}
	return nil
}

// until reads on until done, which decides again with the roles read so
// far, reports that no more are needed (done is asked first, with what is
// already read). d.mu is held.
// A refusal made with anything not read by this Decider (the warm
// cache's inputs, roles of the item cache) is not final: it reads the
// inputs again from the table, bypassing the caches, and decides again,
// once per Decider.
func (d *Decider) until(ctx context.Context, done func() bool) error {
	if done() {
		return nil
	}
	if !d.in.all {
		if err := d.readOn(ctx, done); err != nil || done() {
			return err
		}
	}
	if !d.reused && !d.in.h.cached {
		return nil
	}
	in, err := d.s.readDecider(ctx, d.p, d.s.now(), true)
	if err != nil {
		return err
	}
	d.in, d.prepared, d.reused = in, nil, false
	if d.s.deciders != nil {
		d.s.deciders.Add(d.ck, in)
	}
	if done() || d.in.all {
		return nil
	}
	return d.readOn(ctx, done)
}

// use makes the Decider decide with h from now on. d.mu is held.
func (d *Decider) use(h *holding) {
	in := *d.in // shared read-only with the cache and other Deciders
	in.h = h
	d.in, d.prepared = &in, nil
}

// decide makes the decision eval makes with the roles read so far (eval
// runs with d.mu held); a refusal more roles could turn into a grant is
// made again after each read on.
func (d *Decider) decide(ctx context.Context, eval func() authz.Decision) (authz.Decision, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var dec authz.Decision
	if err := d.until(ctx, func() bool { dec = eval(); return !dec.RefusedByRoles() }); err != nil {
		return authz.Decision{}, err
	}
	return dec, nil
}

// input is the engine's input for a request on target (ancestors: its
// ancestors) with the roles read so far. d.mu is held.
func (d *Decider) input(method, path, target string, ancestors []string) authz.Input {
	return authz.Input{Method: method, Path: path, PrincipalID: d.p.ID, KeyAccount: d.p.AccountID,
		Target: target, TargetAncestors: ancestors, Held: d.in.h.held, Root: d.in.root, Sets: d.sets}
}

// Decide decides a request made in the key's account.
func (d *Decider) Decide(ctx context.Context, method, path string) (authz.Decision, error) {
	return d.decide(ctx, func() authz.Decision {
		return authz.Evaluate(d.input(method, path, d.p.AccountID, d.in.ancestors))
	})
}

// DecideFor decides a request whose path names account target (the
// /v2/accounts/{id} cases), given that account's ancestors.
func (d *Decider) DecideFor(ctx context.Context, method, path string, target domain.Account) (authz.Decision, error) {
	return d.decide(ctx, func() authz.Decision {
		return authz.Evaluate(d.input(method, path, target.ID, target.Ancestors))
	})
}

// Allows reports whether Decide(method, path) would allow, without an
// explanation: for filtering a collection by permission, member by member,
// at the cost of one engine match per member.
func (d *Decider) Allows(ctx context.Context, method, path string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.allows(ctx, method, path, d.p.AccountID, d.in.ancestors)
}

// AllowsFor reports whether DecideFor(method, path, target) would allow,
// without an explanation (see Allows).
func (d *Decider) AllowsFor(ctx context.Context, method, path string, target domain.Account) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.allows(ctx, method, path, target.ID, target.Ancestors)
}

// allows is Allows on target. d.mu is held.
func (d *Decider) allows(ctx context.Context, method, path, target string, ancestors []string) (bool, error) {
	if d.preparedFor(target, ancestors).Allowed(method, path) {
		return true, nil
	}
	// Only a refusal more roles could turn needs the full decision, and
	// only until everything was read.
	if err := d.until(ctx, func() bool { return !authz.Evaluate(d.input(method, path, target, ancestors)).RefusedByRoles() }); err != nil {
		return false, err
	}
	return d.preparedFor(target, ancestors).Allowed(method, path), nil
}

// preparedFor returns the engine's prepared decisions on target with the
// roles read so far. d.mu is held.
func (d *Decider) preparedFor(target string, ancestors []string) *authz.Prepared {
	p := d.prepared[target]
	if p == nil {
		if d.prepared == nil {
			d.prepared = map[string]*authz.Prepared{}
		}
		p = authz.Prepare(d.input("", "", target, ancestors))
		d.prepared[target] = p
	}
	return p
}

// AnyApplies reports whether one of the roles that apply to a request
// whose path names account target (the /v2/accounts/{id} cases), as the
// engine selects them for the decision (the same scope rules, the same
// held roles), satisfies match. It is for rules that depend on which role
// applies, not only on what it permits (only account owners may invite:
// docs/api.md#who-may-invite). A request the engine refuses before looking
// at roles (bad path, no account, out of scope) has none. When none of
// the roles read so far matches, it reads on, as for a refusal, until one
// does or everything was read.
func (d *Decider) AnyApplies(ctx context.Context, method, path string, target domain.Account, match func(authz.Role) bool) (bool, error) {
	if authz.CheckPath(path) != nil || d.p.AccountID == "" {
		return false, nil
	}
	scope, err := authz.ScopeFor(method, path, d.p.AccountID, target.ID, target.Ancestors)
	if err != nil {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	matches := func() bool {
		for _, c := range authz.Applicable(d.in.h.held, target.ID, target.Ancestors, scope) {
			// Identity only: callers ask which role applies, not what it permits.
			if match(authz.Role{ID: c.ID(), AccountID: c.AccountID(), Name: c.Name(), Inheritable: c.Inheritable(),
				EntitlementAdministrator: c.EntitlementAdministrator()}) {
				return true
			}
		}
		return false
	}
	found := false
	if err := d.until(ctx, func() bool { found = matches(); return found }); err != nil {
		return false, err
	}
	return found, nil
}

// CanSwitch decides whether the principal may authenticate into account
// (docs/api.md#switching-accounts): GET /v2/accounts/{id} decided as if authenticated there,
// whatever account (or none) the current key is in.
func (d *Decider) CanSwitch(ctx context.Context, account domain.Account) (authz.Decision, error) {
	return d.decide(ctx, func() authz.Decision {
		return authz.CanSwitch(d.in.h.held, account.ID, account.Ancestors)
	})
}
