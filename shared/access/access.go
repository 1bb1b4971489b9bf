package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/errgroup"

	"cads/shared/authz"
	"cads/shared/caller"
	"cads/shared/clock"
	"cads/shared/domain"
	"cads/shared/store"
)

// Store is what access reads.
type Store struct {
	Principals interface {
		LoadCredential(ctx context.Context, principal, keyID, target string, grants int) (domain.Credential, error)
		LoadKeyStanding(ctx context.Context, account string, refs []domain.KeyRef) (domain.KeyStanding, error)
		TouchKey(ctx context.Context, principal, id string, now time.Time) error
	}
	Roles interface {
		FirstGrants(ctx context.Context, principal string, n int) ([]domain.Grant, bool, error)
		GrantsAfter(ctx context.Context, principal string, after domain.Grant) ([]domain.Grant, error)
		RolesAndGroups(ctx context.Context, roles, groups []domain.RBACRef) ([]domain.Role, []domain.Group, error)
	}
	Accounts interface {
		GetAccount(ctx context.Context, id string) (domain.Account, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Principals: st.Principals, Roles: st.Roles, Accounts: st.Accounts}
}

// ErrUnauthenticated means no valid credential: unknown, malformed,
// expired or revoked key. It never says which, to give guessers nothing.
var ErrUnauthenticated = errors.New("unauthenticated")

// Service authenticates and decides.
type Service struct {
	store    Store
	log      *slog.Logger
	now      clock.Clock
	compiled *compileCache
	// sets indexes long lists of applicable roles across roles (authz.RoleSet),
	// once per distinct list; the compile cache keeps role pointers stable.
	sets *authz.RoleSets
	// warm keeps what Authorize read per credential and target, for at
	// most staleness: see Option WithStaleness and docs/rbac.md, "The
	// authorizer's warm path". nil when staleness is 0.
	warm *lru.Cache[string, *loaded]
	// deciders keeps what Deciders read per principal and key account,
	// likewise.
	deciders *lru.Cache[string, *deciderInputs]
	// items keeps the roles and groups the authorizer and the Deciders
	// read by key, for the same bound, shared by every credential of the
	// container: a role
	// held by many keys is read at most once per staleness period per
	// container, however many of them the container serves (docs/scale.md:
	// the RBAC partition is the hottest key a busy tenant has).
	items     *lru.Cache[itemKey, *rbacItem]
	staleness time.Duration
}

// Option configures a Service.
type Option func(*Service)

// DefaultStaleness is how long a warm container may decide with what it
// read: the bound within which a deleted key, a revoked grant or
// invitation, an edited or deleted role or a deleted account takes effect.
const DefaultStaleness = time.Second

// DefaultWarmEntries bounds the warm cache: one entry per credential and
// target account, a few KB each (compiled roles are shared between
// entries through the compile cache).
const DefaultWarmEntries = 4096

// WithStaleness turns the warm path on with the given staleness bound. A
// Service without it (or with 0) reads the table for every decision (two
// round trips); the deployed authorizer uses DefaultStaleness.
func WithStaleness(d time.Duration) Option { return func(s *Service) { s.staleness = d } }

// WithClock sets the clock freshness and key use are judged by
// (clock.System by default); the wiring passes wire.Deps.Clock.
func WithClock(c clock.Clock) Option {
	return func(s *Service) {
		if c != nil { // Deps built by hand may have none
			s.now = c
		}
	}
}

// New returns a Service over st.
func New(st Store, log *slog.Logger, opts ...Option) *Service {
	s := &Service{store: st, log: log, now: clock.System, compiled: newCompileCache(4096), sets: authz.NewRoleSets(maxIndexedRoles)}
	for _, o := range opts {
		o(s)
	}
	if s.staleness > 0 {
		// lru.New only fails for a size <= 0.
		s.warm, _ = lru.New[string, *loaded](DefaultWarmEntries)
		s.deciders, _ = lru.New[string, *deciderInputs](DefaultWarmEntries)
		s.items, _ = lru.New[itemKey, *rbacItem](DefaultWarmEntries)
	}
	return s
}

// maxIndexedRoles bounds the roles held in indexed role sets (about 7 KB
// each at 20 permissions: ~14 MB at most).
const maxIndexedRoles = 2048

// Result is an authenticated request's decision.
type Result struct {
	Principal caller.Principal
	Decision  authz.Decision
}

// loaded is what decisions need of the table for one credential and one
// target account: the key's standing and what the principal holds there,
// read as far as the decisions made with it needed (holding). A warm
// container decides any request of that key with it, within the staleness
// bound, and reads on only when a refusal could still turn into a grant.
// Read-only once built: requests share it; reading on makes a new one.
type loaded struct {
	at          time.Time // when its reads began
	cred        domain.Credential
	principal   caller.Principal
	lineage     []domain.KeyRef
	standing    domain.KeyStanding
	accountGone bool
	acct        domain.Account // the key's account, when read
	h           *holding
}

// Authorize authenticates secret and decides method+path for its principal.
// Cold, it reads the table in two sequential DynamoDB round trips whatever
// the depth of the account tree, the number of roles defined or the length
// of the key's lineage: (1) principal, key, path account and the first
// FirstGrants grants in parallel (no grant for a self-service request);
// (2) the roles and groups those grants name in the accounts that matter,
// by key, with the key's account and its lineage keys, in parallel. When
// that does not grant the request, it reads on (holding.step: the roles
// of the groups, then the rest of the grants and what they name) until a
// role grants it or everything was read: a refusal is decided with every
// role that applies. Warm (the same key and target account within the
// staleness bound), it reads nothing more than that: the secret is still
// checked, the expiries still compared with the clock and the decision
// still made.
func (s *Service) Authorize(ctx context.Context, secret, method, path string) (Result, error) {
	principalID, keyID, ok := ParseSecret(secret)
	if !ok {
		return Result{}, ErrUnauthenticated
	}
	target := ""
	if authz.CheckPath(path) == nil {
		if id, fromPath := authz.Target(method, path, ""); fromPath {
			target = id
		}
	}
	// A self-service request needs no role (docs/rbac.md): the principal
	// the secret names is the one whose key item must match it, so its
	// grants are not read at all.
	self := authz.SelfService(method, path, principalID)
	now := s.now()
	l, ck, warm, err := s.load(ctx, secret, principalID, keyID, target, self, now)
	if err != nil {
		return Result{}, err
	}
	res, l, err := s.decide(ctx, l, ck, method, path, target, now)
	if refused(res, err) && (warm || l.h.cached) {
		// A refusal must not come from a cache: what was read a moment ago
		// may predate the grant, invitation, account or key that would
		// allow this request. Decide again from the table as it is now;
		// refusals stay the rare path, so they pay the cold reads.
		if s.warm != nil {
			s.warm.Remove(ck)
		}
		if l, err = s.read(ctx, principalID, keyID, target, self, now, true); err != nil {
			return Result{}, err
		}
		if !secretMatches(secret, l.cred.Key.SecretHash) {
			return Result{}, ErrUnauthenticated
		}
		if s.warm != nil {
			s.warm.Add(ck, l)
		}
		res, _, err = s.decide(ctx, l, ck, method, path, target, now)
	}
	return res, err
}

// refused reports whether Authorize's answer is a refusal (401 or 403).
func refused(res Result, err error) bool {
	return errors.Is(err, ErrUnauthenticated) || (err == nil && !res.Decision.Allowed)
}

// decide decides method+path with l (reading on past the first grants
// when roles refuse), keeping what it read on in the warm cache under ck;
// it returns what it decided with.
func (s *Service) decide(ctx context.Context, l *loaded, ck, method, path, target string, now time.Time) (Result, *loaded, error) {
	if l.cred.Key.Expired(now) || l.accountGone {
		return Result{}, l, ErrUnauthenticated
	}
	for _, ref := range l.lineage {
		if k, ok := l.standing.Keys[ref]; !ok || k.Expired(now) {
			return Result{}, l, ErrUnauthenticated
		}
	}
	p := l.principal
	in := authz.Input{Method: method, Path: path, PrincipalID: p.ID, KeyAccount: p.AccountID, Target: p.AccountID,
		TargetAncestors: l.cred.Key.AccountAncestors, Held: l.h.held, Sets: s.sets}
	rolesMatter := true
	if target != "" {
		in.Target = target
		in.TargetAncestors = nil
		if l.cred.Target != nil {
			in.TargetAncestors = l.cred.Target.Ancestors
		} else {
			// The engine would deny anyway (nothing applies to an unknown
			// account); say why without telling whether it exists.
			in.Held, rolesMatter = nil, false
		}
	}
	// The engine decides user routes (authz.ClassGlobal) by the root
	// account's roles alone. Their partition is among the key account's
	// ancestors read in the second round trip, but the root is taken from
	// the key account's own item, not from the copy on the key item.
	if l.acct.ID != "" {
		in.Root = authz.RootOf(l.acct.ID, l.acct.Ancestors)
	}
	d := authz.Evaluate(in)
	// An allowed request is decided with what was read; a refusal only
	// with everything that applies, read on until a role grants it.
	if rolesMatter && d.RefusedByRoles() {
		h, err := s.readOn(ctx, l.h, p.ID, now, func(h *holding) bool {
			in.Held = h.held
			d = authz.Evaluate(in)
			return !d.RefusedByRoles()
		})
		if err != nil {
			return Result{}, l, fmt.Errorf("authorize: %w", err)
		}
		if h != l.h {
			next := *l
			next.h, l = h, &next
			if s.warm != nil {
				s.warm.Add(ck, l)
			}
		}
	}
	p.Target, p.TargetAncestors = in.Target, in.TargetAncestors
	return Result{Principal: p, Decision: d}, l, nil
}

// fresh reports whether something read at at may still be decided with
// at now: younger than the staleness bound (and not from the future, if
// the clock went back). One rule for every warm cache of the service.
func (s *Service) fresh(at, now time.Time) bool {
	age := now.Sub(at)
	return age >= 0 && age < s.staleness
}

// load returns what the decision needs for this credential and target:
// from the warm cache while it is younger than the staleness bound, else
// from the table. Only a credential whose secret matched is kept, so
// guessed secrets cannot fill the cache.
// The entry is keyed by credential and target; ck is that key.
// warm reports that l came from the warm cache. A secret that does not
// match a warm entry is refused without reading: a key's secret hash
// never changes, so that refusal cannot be stale.
func (s *Service) load(ctx context.Context, secret, principalID, keyID, target string, self bool, now time.Time) (l *loaded, ck string, warm bool, err error) {
	ck = principalID + "/" + keyID + "/" + target
	if s.warm != nil {
		if l, ok := s.warm.Get(ck); ok {
			if s.fresh(l.at, now) && s.fresh(l.h.at, now) {
				if !secretMatches(secret, l.cred.Key.SecretHash) {
					return nil, ck, true, ErrUnauthenticated
				}
				return l, ck, true, nil
			}
			s.warm.Remove(ck)
		}
	}
	l, err = s.read(ctx, principalID, keyID, target, self, now, false)
	if err != nil {
		return nil, ck, false, err
	}
	if !secretMatches(secret, l.cred.Key.SecretHash) {
		return nil, ck, false, ErrUnauthenticated
	}
	if s.warm != nil {
		s.warm.Add(ck, l)
	}
	return l, ck, false, nil
}

// read is the cold path: the two round trips. bypass takes no role or
// group from the container's item cache: every input is read now.
func (s *Service) read(ctx context.Context, principalID, keyID, target string, self bool, now time.Time, bypass bool) (*loaded, error) {
	first := FirstGrants
	if self {
		first = 0
	}
	cred, err := s.store.Principals.LoadCredential(ctx, principalID, keyID, target, first)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("authorize: %w", err)
	}
	l := &loaded{at: now, cred: cred, lineage: cred.Key.Lineage()}
	p := caller.Principal{ID: cred.Principal.ID, Kind: cred.Principal.Kind, Email: cred.Principal.Email, AccountID: cred.Key.Account, KeyID: cred.Key.ID,
		KeyDurability: cred.Key.Durability, KeyExpiry: cred.Key.Expiry}
	if o := cred.Key.Origin; o != nil {
		p.OriginPrincipal, p.OriginKey = o.Principal, o.ID
	}
	l.principal = p
	relevant := []string{cred.Key.Account}
	ancestors := cred.Key.AccountAncestors
	if target != "" {
		relevant[0], ancestors = target, nil
		if cred.Target != nil {
			ancestors = cred.Target.Ancestors
		}
	}
	relevant = append(relevant, ancestors...)
	var (
		// Not WithContext: a failed read must not cut the touch short,
		// whose failure is only logged.
		g        errgroup.Group
		touchErr error
	)
	// A busy key is touched once a minute, not on every request: the key
	// item read above says whether it is due (TouchKey's condition guards
	// concurrent touches). A warm container touches it on its next read.
	if cred.Key.UseIsStale(now) {
		g.Go(func() error { touchErr = s.store.Principals.TouchKey(ctx, p.ID, p.KeyID, now); return nil })
	}
	// The key's account must still exist: deleting an account sweeps its
	// keys, but a session key minted by a switch racing that deletion could
	// land after the sweep. A key minted under another (docs/rbac.md, "Key
	// lineage") stands only while its origin and parent do: deleting one
	// revokes it. Both are read in this second round trip, in parallel
	// with the roles, with one BatchGetItem, so a lineage costs no
	// sequential round trip and at most one call.
	readAccount := p.AccountID != "" && (cred.Target == nil || cred.Target.ID != p.AccountID)
	switch {
	case len(l.lineage) > 0:
		acctID := ""
		if readAccount {
			acctID = p.AccountID
		}
		g.Go(func() (err error) {
			l.standing, err = s.store.Principals.LoadKeyStanding(ctx, acctID, l.lineage)
			l.accountGone = readAccount && err == nil && l.standing.Account == nil
			if l.standing.Account != nil {
				l.acct = *l.standing.Account
			}
			return err
		})
	case readAccount:
		g.Go(func() (err error) {
			l.acct, err = s.store.Accounts.GetAccount(ctx, p.AccountID)
			if errors.Is(err, domain.ErrNotFound) {
				l.accountGone, err = true, nil
			}
			return err
		})
	}
	// The roles and groups the first grants name, by key, in this same
	// round trip (none for a self-service request: its holding stays
	// unstarted until a request of the same key needs roles).
	l.h = newHolding(relevant, cred.Grants, !self, cred.MoreGrants, now)
	l.h.bypass = bypass
	if !self {
		l.h, err = s.step(ctx, l.h, p.ID, now)
	}
	standErr := g.Wait()
	if touchErr != nil {
		s.log.WarnContext(ctx, "could not record key use", "key", p.KeyID, "error", touchErr.Error())
	}
	if standErr != nil {
		return nil, fmt.Errorf("authorize: key standing: %w", standErr)
	}
	if err != nil {
		return nil, fmt.Errorf("authorize: %w", err)
	}
	return l, nil
}

// compileCache keeps compiled roles keyed by role and last update, so a
// warm function compiles each role version once. It caches no decisions
// and no role data: which roles a key holds, and their contents, come from
// the table or from the warm caches above, within the staleness bound.
type compileCache struct {
	mu  sync.Mutex
	max int
	m   map[string]*authz.CompiledRole
}

func newCompileCache(max int) *compileCache {
	return &compileCache{max: max, m: map[string]*authz.CompiledRole{}}
}

func (c *compileCache) get(r domain.Role) (*authz.CompiledRole, error) {
	k := fmt.Sprintf("%s/%s@%d", r.AccountID, r.ID, r.Version)
	c.mu.Lock()
	cr, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return cr, nil
	}
	cr, err := authz.Compile(r.AuthzRole())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		c.m = map[string]*authz.CompiledRole{} // bounded memory; recompiling is cheap
	}
	c.m[k] = cr
	c.mu.Unlock()
	return cr, nil
}
