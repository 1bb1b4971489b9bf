package access

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"cads/shared/apigw"
	"cads/shared/authz"
	"cads/shared/store"
)

// Decider makes further decisions for an already authenticated principal
// with the same engine and the same data as the authorizer: one load, then
// any number of decisions (collection filtering, task permissions, the
// policy simulator).
type Decider struct {
	p         apigw.Principal
	ancestors []string // of the key's account
	held      []*authz.CompiledRole
}

// Decider loads the principal's grants and its key account in parallel,
// then the roles of every account it holds grants in.
func (s *Service) Decider(ctx context.Context, p apigw.Principal) (*Decider, error) {
	var (
		wg         sync.WaitGroup
		grants     []store.Grant
		acct       store.Account
		gErr, aErr error
	)
	wg.Add(1)
	go func() { defer wg.Done(); grants, gErr = s.store.Grants(ctx, p.ID) }()
	if p.AccountID != "" {
		wg.Add(1)
		go func() { defer wg.Done(); acct, aErr = s.store.GetAccount(ctx, p.AccountID) }()
	}
	wg.Wait()
	if gErr != nil {
		return nil, fmt.Errorf("decider: %w", gErr)
	}
	if aErr != nil && !errors.Is(aErr, store.ErrNotFound) {
		return nil, fmt.Errorf("decider: %w", aErr)
	}
	var all []string
	for _, g := range grants {
		all = append(all, g.AccountID)
	}
	held, err := s.heldRoles(ctx, grants, all)
	if err != nil {
		return nil, fmt.Errorf("decider: %w", err)
	}
	return &Decider{p: p, ancestors: acct.Ancestors, held: held}, nil
}

// Decide decides a request made in the key's account.
func (d *Decider) Decide(method, path string) authz.Decision {
	return authz.Evaluate(authz.Input{Method: method, Path: path, PrincipalID: d.p.ID, KeyAccount: d.p.AccountID,
		Target: d.p.AccountID, TargetAncestors: d.ancestors, Held: d.held})
}

// DecideFor decides a request whose path names account target (the
// /v2/accounts/{id} cases), given that account's ancestors.
func (d *Decider) DecideFor(method, path string, target store.Account) authz.Decision {
	return authz.Evaluate(authz.Input{Method: method, Path: path, PrincipalID: d.p.ID, KeyAccount: d.p.AccountID,
		Target: target.ID, TargetAncestors: target.Ancestors, Held: d.held})
}
