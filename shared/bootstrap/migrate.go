package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"cads/shared/domain"
	"cads/shared/names"
	"cads/shared/store"
)

// MigrateOptions bound one run of MigrateSchema.
type MigrateOptions struct {
	// PageSize is how many items are scanned and fixed at a time
	// (default 100).
	PageSize int
	// StopBy: no page is started after it (zero: no bound). The installer
	// sets it well before its deadline, so a run stops between pages and
	// records where it is.
	StopBy time.Time
	// MaxPages bounds the pages of one run (0: no bound).
	MaxPages int
}

// MigrateResult says what a run did.
type MigrateResult struct {
	Version int
	// Done: every item was scanned at Version.
	Done bool
	// Scanned, Fixed and Skipped count what this run did (Fixed by entity,
	// as store.MigrationPage).
	Scanned, Skipped int
	Fixed            map[string]int
	// Progress is what the table records after the run.
	Progress domain.SchemaMigration
}

// MigrateSchema runs the store's schema migration at store.SchemaVersion
// over the whole table, a page at a time, recording the scan position after
// each page: a run that stops (StopBy, MaxPages, an error) is continued by
// the next one from there, and a finished version costs the next run one
// read. Running it again changes nothing (store.MigratePage's writes are
// conditional on what they read).
func MigrateSchema(ctx context.Context, st *store.Store, log *slog.Logger, o MigrateOptions) (MigrateResult, error) {
	ver := store.SchemaVersion
	res := MigrateResult{Version: ver, Fixed: map[string]int{}}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	prog, err := st.Installation.GetSchemaMigration(ctx)
	switch {
	case errors.Is(err, domain.ErrNotFound):
	case err != nil:
		return res, fmt.Errorf("schema migration: %w", err)
	case prog.Version > ver:
		log.WarnContext(ctx, "schema migration: the table is at a later version than this code's; nothing to do", "table_version", prog.Version, "version", ver)
		res.Done, res.Progress = true, prog
		return res, nil
	case prog.Version == ver && prog.Done:
		res.Done, res.Progress = true, prog
		return res, nil
	}
	if prog.Version != ver {
		prog = domain.SchemaMigration{Version: ver, Started: st.Now()}
		log.InfoContext(ctx, "schema migration: started", "version", ver)
	} else {
		log.InfoContext(ctx, "schema migration: resumed", "version", ver, "after_pk", prog.AfterPK, "after_sk", prog.AfterSK, "scanned", prog.Scanned, "fixed", prog.Fixed)
	}
	if prog.Fixed == nil {
		prog.Fixed = map[string]int{}
	}
	for pages := 0; ; pages++ {
		if o.MaxPages > 0 && pages >= o.MaxPages || !o.StopBy.IsZero() && time.Now().After(o.StopBy) {
			log.WarnContext(ctx, "schema migration: stopped before the end; the next run goes on from here", "version", ver, "after_pk", prog.AfterPK, "after_sk", prog.AfterSK, "scanned", prog.Scanned, "fixed", prog.Fixed)
			res.Progress = prog
			return res, nil
		}
		p, err := st.Installation.MigratePage(ctx, prog.AfterPK, prog.AfterSK, o.PageSize, names.KeyAndSkeleton)
		res.Scanned += p.Scanned
		res.Skipped += p.Skipped
		for k, n := range p.Fixed {
			res.Fixed[k] += n
		}
		for _, a := range p.Taken {
			log.WarnContext(ctx, "schema migration: an application names an alias another application claims; left as it is", "alias", a)
		}
		for _, a := range p.NamesTaken {
			log.WarnContext(ctx, "schema migration: an account's name reads as another account's (equal name keys); it keeps its old name claim until one of them is renamed", "account", a)
		}
		for _, k := range p.Odd {
			log.WarnContext(ctx, "schema migration: an item's attributes name another key than its own; left as it is", "item", k)
		}
		if err != nil {
			// The page's writes that succeeded are kept; the page is read
			// again by the next run, which finds them done.
			return res, fmt.Errorf("schema migration: items after %s/%s: %w", prog.AfterPK, prog.AfterSK, err)
		}
		prog.Scanned += p.Scanned
		for k, n := range p.Fixed {
			prog.Fixed[k] += n
		}
		prog.AfterPK, prog.AfterSK, prog.Done = p.AfterPK, p.AfterSK, p.Done
		prog.Updated = st.Now()
		if err := st.Installation.PutSchemaMigration(ctx, prog); err != nil {
			return res, fmt.Errorf("schema migration: record progress: %w", err)
		}
		log.InfoContext(ctx, "schema migration: progress", "version", ver, "page_scanned", p.Scanned, "page_fixed", p.Fixed,
			"page_skipped", p.Skipped, "scanned", prog.Scanned, "fixed", maps.Clone(prog.Fixed), "done", prog.Done)
		if prog.Done {
			res.Done, res.Progress = true, prog
			log.InfoContext(ctx, "schema migration: finished", "version", ver, "scanned", prog.Scanned, "fixed", prog.Fixed)
			return res, nil
		}
	}
}
