package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/builtin"
	"cads/shared/domain"
	"cads/shared/store"
)

// UpgradeOptions bound one run of UpgradeRoles.
type UpgradeOptions struct {
	// PageSize is how many accounts are read and upgraded at a time
	// (default 50).
	PageSize int
	// StopBy: no page is started after it (zero: no bound). The installer
	// sets it well before its deadline, so a run stops between pages and
	// records where it is.
	StopBy time.Time
	// MaxPages bounds the pages of one run (0: no bound).
	MaxPages int
}

// UpgradeResult says what a run did.
type UpgradeResult struct {
	Revision int
	// Done: every account's built-in roles are at Revision.
	Done bool
	// Accounts and Roles count what this run read and upgraded.
	Accounts, Roles int
	// Progress is what the table records after the run.
	Progress domain.RolesUpgrade
}

// writeFanOut bounds the role writes of one page in flight at once.
const writeFanOut = 8

// UpgradeRoles brings the built-in roles of every account (the control
// roles, and the root account's entitlement administrator roles) to the
// current revision of their definitions (builtin.Upgrade), a page of
// accounts at a time in the installation's creation order, recording its
// progress after each page: a run that stops (StopBy, MaxPages, an
// error) is continued by the next one from there, and a finished
// revision costs the next run one read. Only roles the platform made are
// touched (builtin.KeyOf); each is rewritten only if the stored revision
// is older, conditionally on its version, so an administrator's
// concurrent edit is re-read and kept. Running it again changes nothing.
func UpgradeRoles(ctx context.Context, st *store.Store, log *slog.Logger, o UpgradeOptions) (UpgradeResult, error) {
	rev := builtin.Revision()
	res := UpgradeResult{Revision: rev}
	if rev == 0 {
		return res, errors.New("upgrade roles: the built-in definitions do not load")
	}
	if o.PageSize <= 0 {
		o.PageSize = 50
	}
	prog, err := st.Installation.GetRolesUpgrade(ctx)
	switch {
	case errors.Is(err, domain.ErrNotFound):
	case err != nil:
		return res, fmt.Errorf("upgrade roles: %w", err)
	case prog.Revision > rev:
		log.WarnContext(ctx, "roles upgrade: the table's built-in roles are at a later revision than this code's; nothing to do", "table_revision", prog.Revision, "revision", rev)
		res.Done, res.Progress = true, prog
		return res, nil
	case prog.Revision == rev && prog.Done:
		res.Done, res.Progress = true, prog
		return res, nil
	}
	if prog.Revision != rev {
		prog = domain.RolesUpgrade{Revision: rev, Started: st.Now()}
		log.InfoContext(ctx, "roles upgrade: started", "revision", rev)
	} else {
		log.InfoContext(ctx, "roles upgrade: resumed", "revision", rev, "after", prog.After, "accounts_done", prog.Accounts, "roles_upgraded", prog.Roles)
	}
	for pages := 0; ; pages++ {
		if o.MaxPages > 0 && pages >= o.MaxPages || !o.StopBy.IsZero() && time.Now().After(o.StopBy) {
			log.WarnContext(ctx, "roles upgrade: stopped before the end; the next run goes on from here", "revision", rev, "after", prog.After, "accounts_done", prog.Accounts, "roles_upgraded", prog.Roles)
			res.Progress = prog
			return res, nil
		}
		accts, pos, more, err := st.Accounts.PageAccounts(ctx, prog.After, false, o.PageSize)
		if err != nil {
			return res, fmt.Errorf("upgrade roles: read accounts after %q: %w", prog.After, err)
		}
		n, err := upgradePage(ctx, st, log, rev, accts)
		res.Roles += n
		if err != nil {
			return res, fmt.Errorf("upgrade roles: accounts after %q: %w", prog.After, err)
		}
		res.Accounts += len(accts)
		prog.Accounts += len(accts)
		prog.Roles += n
		if len(pos) > 0 {
			prog.After = pos[len(pos)-1]
		}
		prog.Done = !more
		prog.Updated = st.Now()
		if err := st.Installation.PutRolesUpgrade(ctx, prog); err != nil {
			return res, fmt.Errorf("upgrade roles: record progress: %w", err)
		}
		log.InfoContext(ctx, "roles upgrade: progress", "revision", rev, "after", prog.After, "accounts_done", prog.Accounts, "roles_upgraded", prog.Roles, "done", prog.Done)
		if prog.Done {
			res.Done, res.Progress = true, prog
			return res, nil
		}
	}
}

// upgradePage upgrades the built-in roles of accts: their RBAC partitions
// read in parallel, then the outdated roles written, a few at a time.
func upgradePage(ctx context.Context, st *store.Store, log *slog.Logger, rev int, accts []domain.AccountRecord) (int, error) {
	if len(accts) == 0 {
		return 0, nil
	}
	ids := make([]string, len(accts))
	for i, a := range accts {
		ids[i] = a.ID
	}
	roles, err := st.Roles.RolesOf(ctx, ids)
	if err != nil {
		return 0, err
	}
	var (
		mu sync.Mutex
		n  int
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writeFanOut)
	for _, r := range roles {
		if builtin.KeyOf(r.Builtin, r.Control, r.EntitlementAdministrator, r.Inheritable, r.Name) == "" || r.BuiltinRevision >= rev {
			continue
		}
		g.Go(func() error {
			changed, err := upgradeRole(gctx, st, log, rev, r)
			if changed {
				mu.Lock()
				n++
				mu.Unlock()
			}
			return err
		})
	}
	err = g.Wait()
	return n, err
}

// upgradeRole writes r at revision rev. A lost race means someone edited
// the role since it was read: it is read again and the upgrade applied to
// what they wrote (store.Reapply).
func upgradeRole(ctx context.Context, st *store.Store, log *slog.Logger, rev int, r domain.Role) (bool, error) {
	upgraded, fresh := false, true
	err := store.Reapply(ctx, func(ctx context.Context) error {
		if !fresh {
			var err error
			if r, err = st.Roles.GetRole(ctx, r.AccountID, r.ID); errors.Is(err, domain.ErrNotFound) {
				return nil // deleted meanwhile (its account went)
			} else if err != nil {
				return err
			}
		}
		fresh = false
		key := builtin.KeyOf(r.Builtin, r.Control, r.EntitlementAdministrator, r.Inheritable, r.Name)
		if key == "" || r.BuiltinRevision >= rev {
			return nil
		}
		up, err := builtin.Upgrade(key, r.AccountID, r.BuiltinRevision, r.Permissions, r.Description)
		if err != nil {
			return err
		}
		next := r
		next.Builtin, next.BuiltinRevision = key, rev
		next.Permissions, next.Description = up.Permissions, up.Description
		next.Version, next.Updated = r.Version+1, st.Now()
		if err := st.Roles.PutRole(ctx, next); err != nil {
			return err
		}
		log.InfoContext(ctx, "roles upgrade: role upgraded", "account", r.AccountID, "role", r.ID, "builtin", key,
			"from_revision", r.BuiltinRevision, "revision", rev, "added", up.Added, "removed", up.Removed)
		upgraded = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("role %s of account %s: %w", r.ID, r.AccountID, err)
	}
	return upgraded, nil
}
