package access

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"cads/shared/authz"
	"cads/shared/domain"
)

// FirstGrants is how many of the caller's grants the authorizer reads in
// its first round trip (docs/rbac.md, "What the authorizer reads"): an
// allowed request whose granting role is among them costs the same
// whatever the number of grants the caller holds. The rest is read only
// when those do not grant the request.
const FirstGrants = 10

// itemKey names a role or a group in the per-container item cache.
type itemKey struct {
	group bool
	ref   domain.RBACRef
}

// rbacItem is one role or group as read at `at`; both nil when it did
// not exist (a grant outliving its role applies nothing).
type rbacItem struct {
	at    time.Time
	role  *domain.Role
	group *domain.Group
}

// holding is what the authorizer knows of the roles a principal holds
// that can apply to one target: the grants read so far, in key order, and
// the roles and groups they name in the target's accounts, read by key
// as far as the decisions made so far needed. Read-only once built:
// reading on (step) makes a new one.
type holding struct {
	at time.Time // when the oldest thing it holds was read
	// rel: the target account and its ancestors; nil for every account
	// (a Decider's, whose decisions name targets of their own).
	rel    map[string]bool
	grants []domain.Grant
	// started: the first grants were read (a self-service request reads
	// none); more: grants may follow the last of grants.
	started, more bool
	items         map[itemKey]*rbacItem
	held          []*authz.CompiledRole // compiled from items
	// cached: something was taken from the container's item cache, so a
	// refusal made with it is not final (decided again from the table);
	// bypass: take nothing from it (the holding of that second decision).
	cached, bypass bool
}

// newHolding starts a holding for the accounts rel (nil: every account)
// from the first grants read at `at` (started false: none were read).
func newHolding(rel []string, grants []domain.Grant, started, more bool, at time.Time) *holding {
	h := &holding{at: at, grants: grants, started: started, more: more, items: map[itemKey]*rbacItem{}}
	if rel != nil {
		h.rel = make(map[string]bool, len(rel))
		for _, a := range rel {
			if a != "" {
				h.rel[a] = true
			}
		}
	}
	return h
}

// relevant reports whether roles of account a can apply to the holding's
// targets.
func (h *holding) relevant(a string) bool { return h.rel == nil || h.rel[a] }

func (h *holding) clone() *holding {
	c := *h
	c.grants = slices.Clip(h.grants) // an append copies
	c.items = maps.Clone(h.items)
	return &c
}

// pending returns what deciding with everything read so far still needs
// by key: the roles and groups that the grants name in the target's
// accounts, and the roles of the groups read, not read yet.
func (h *holding) pending() (roles, groups []domain.RBACRef) {
	seen := map[itemKey]bool{}
	need := func(k itemKey) {
		if _, read := h.items[k]; read || seen[k] {
			return
		}
		seen[k] = true
		if k.group {
			groups = append(groups, k.ref)
		} else {
			roles = append(roles, k.ref)
		}
	}
	for _, g := range h.grants {
		if !h.relevant(g.AccountID) {
			continue
		}
		if g.Group == "" {
			need(itemKey{ref: domain.RBACRef{Account: g.AccountID, ID: g.RoleID}})
			continue
		}
		gk := itemKey{group: true, ref: domain.RBACRef{Account: g.AccountID, ID: g.Group}}
		need(gk)
		if it := h.items[gk]; it != nil && it.group != nil {
			// A group names roles of its own account.
			for _, r := range it.group.Roles {
				need(itemKey{ref: domain.RBACRef{Account: g.AccountID, ID: r}})
			}
		}
	}
	return roles, groups
}

// complete reports whether every grant was read and every role and group
// they name in the target's accounts: a refusal made with it is final.
func (h *holding) complete() bool {
	if !h.started || h.more {
		return false
	}
	r, g := h.pending()
	return len(r) == 0 && len(g) == 0
}

func (h *holding) add(k itemKey, it *rbacItem) {
	h.items[k] = it
	if it.at.Before(h.at) {
		h.at = it.at
	}
}

// fromCache takes what pending needs from the container's item cache,
// while younger than the staleness bound; it reports whether it took
// anything.
func (s *Service) fromCache(h *holding, now time.Time) bool {
	if s.items == nil || h.bypass {
		return false
	}
	took := false
	for {
		roles, groups := h.pending()
		n := 0
		for _, k := range keysOf(roles, groups) {
			if it, ok := s.items.Get(k); ok && s.fresh(it.at, now) {
				h.add(k, it)
				n++
			}
		}
		if n == 0 {
			return took
		}
		// a group taken from the cache may name roles it holds too
		took, h.cached = true, true
	}
}

func keysOf(roles, groups []domain.RBACRef) []itemKey {
	out := make([]itemKey, 0, len(roles)+len(groups))
	for _, r := range roles {
		out = append(out, itemKey{ref: r})
	}
	for _, g := range groups {
		out = append(out, itemKey{group: true, ref: g})
	}
	return out
}

// step reads on, one round trip at most, cheapest first: the roles and
// groups pending needs (one BatchGetItem per 100, in parallel), else the
// first grants if none were read, else the rest of the grants, whole.
// What the item cache holds is taken first; when that alone made progress
// and nothing is left to read by key, step returns without reading, so
// the caller decides again before reading more grants. It returns h
// itself when there is nothing left to read.
func (s *Service) step(ctx context.Context, h *holding, principal string, now time.Time) (*holding, error) {
	n := h.clone()
	took := s.fromCache(n, now)
	roles, groups := n.pending()
	switch {
	case len(roles) > 0 || len(groups) > 0:
		rs, gs, err := s.store.Roles.RolesAndGroups(ctx, roles, groups)
		if err != nil {
			return nil, fmt.Errorf("roles and groups: %w", err)
		}
		read := make(map[itemKey]*rbacItem, len(roles)+len(groups))
		for _, k := range keysOf(roles, groups) {
			read[k] = &rbacItem{at: now} // absent unless found below
		}
		for i := range rs {
			if it := read[itemKey{ref: domain.RBACRef{Account: rs[i].AccountID, ID: rs[i].ID}}]; it != nil {
				it.role = &rs[i]
			}
		}
		for i := range gs {
			if it := read[itemKey{group: true, ref: domain.RBACRef{Account: gs[i].AccountID, ID: gs[i].ID}}]; it != nil {
				it.group = &gs[i]
			}
		}
		for k, it := range read {
			n.add(k, it)
			if s.items != nil {
				s.items.Add(k, it)
			}
		}
		s.fromCache(n, now) // the roles of groups just read, when cached
	case took:
	case !n.started:
		grants, more, err := s.store.Roles.FirstGrants(ctx, principal, FirstGrants)
		if err != nil {
			return nil, fmt.Errorf("grants: %w", err)
		}
		n.grants, n.more, n.started = grants, more, true
	case n.more && len(n.grants) > 0:
		rest, err := s.store.Roles.GrantsAfter(ctx, principal, n.grants[len(n.grants)-1])
		if err != nil {
			return nil, fmt.Errorf("grants: %w", err)
		}
		n.grants, n.more = append(n.grants, rest...), false
	default:
		return h, nil
	}
	n.held = s.compile(ctx, n)
	return n, nil
}

// readOn reads on from h, one step (one round trip) at a time, until
// enough says what was read suffices or nothing is left to read; a nil
// enough reads everything. It is the one way both the authorizer and the
// Decider read past the first grants: a refusal more roles could still
// turn into a grant reads on, an allowed decision never does (more roles
// can only grant: a deny is local to its role). It returns h itself when
// it read nothing.
func (s *Service) readOn(ctx context.Context, h *holding, principal string, now time.Time, enough func(*holding) bool) (*holding, error) {
	for !h.complete() {
		n, err := s.step(ctx, h, principal, now)
		if err != nil {
			return nil, err
		}
		if n == h {
			break // nothing left to read
		}
		h = n
		if enough != nil && enough(h) {
			break
		}
	}
	return h, nil
}

// compile returns the compiled roles of n: the roles the grants name in
// the target's accounts, directly or through a group, that were read, in
// a stable order (by account and id) so that the same roles make the same
// list for the engine's role-set cache.
func (s *Service) compile(ctx context.Context, n *holding) []*authz.CompiledRole {
	seen := map[domain.RBACRef]bool{}
	var refs []domain.RBACRef
	add := func(r domain.RBACRef) {
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	for _, g := range n.grants {
		if !n.relevant(g.AccountID) {
			continue
		}
		if g.Group == "" {
			add(domain.RBACRef{Account: g.AccountID, ID: g.RoleID})
			continue
		}
		if it := n.items[itemKey{group: true, ref: domain.RBACRef{Account: g.AccountID, ID: g.Group}}]; it != nil && it.group != nil {
			for _, r := range it.group.Roles {
				add(domain.RBACRef{Account: g.AccountID, ID: r})
			}
		}
	}
	slices.SortFunc(refs, func(a, b domain.RBACRef) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.ID, b.ID))
	})
	out := make([]*authz.CompiledRole, 0, len(refs))
	for _, r := range refs {
		it := n.items[itemKey{ref: r}]
		if it == nil || it.role == nil {
			continue
		}
		c, err := s.compiled.get(*it.role)
		if err != nil {
			// A stored role always validated when written; skip a corrupt
			// one rather than fail every request of its holders.
			s.log.ErrorContext(ctx, "stored role does not compile", "role", r.Account+"/"+r.ID, "error", err.Error())
			continue
		}
		out = append(out, c)
	}
	return out
}
