package logsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/logs"
	"cads/shared/store"
)

// The archived-logs endpoints (docs/logs.md, Archived logs) list, download
// and delete the archives the prepare-for-download task writes
// (logs.Archiver). An archive is referenced as
// /v2/archived-logs/applications/<app id>/<archive type>.

// Deciders makes second decisions with the authorizer's engine: the
// listing shows only the references the caller may GET.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

// archiveRef reads {id} and {log_type} of an archive's path: anything
// that cannot name one is a 404.
func archiveRef(r *http.Request) (app, typ string, err error) {
	app, err = apigw.PathID(r, "id", "application")
	if err != nil {
		return "", "", err
	}
	at := r.PathValue("log_type")
	typ, ok := domain.ArchiveTypes[at]
	if !ok {
		return "", "", domain.Errorf(domain.NotFound, "no archive type %q; the types are %s", domain.Clip(at, 40), strings.Join(domain.ArchiveTypeNames(), ", "))
	}
	return app, typ, nil
}

// rangeParams reads from and to (RFC 3339); required says whether both
// must be given.
func rangeParams(r *http.Request, required bool) (from, to time.Time, err error) {
	q := r.URL.Query()
	for _, x := range []struct {
		name string
		t    *time.Time
	}{{"from", &from}, {"to", &to}} {
		v := q.Get(x.name)
		if v == "" {
			if required {
				return from, to, domain.Errorf(domain.Invalid, "from and to are required: the range of a prepared archive (GET /v2/archived-logs lists them)")
			}
			continue
		}
		t, perr := time.Parse(time.RFC3339Nano, v)
		if perr != nil {
			return from, to, domain.Errorf(domain.Invalid, "%s must be an RFC 3339 timestamp such as 2026-05-01T00:00:00Z", x.name)
		}
		*x.t = t.UTC()
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return from, to, domain.Errorf(domain.Invalid, "from must be before to; from is inclusive, to exclusive")
	}
	return from, to, nil
}

// within reports whether the archive lies inside [from, to) (zero: open).
func within(a domain.LogArchive, from, to time.Time) bool {
	return (from.IsZero() || !a.From.Before(from)) && (to.IsZero() || !a.To.After(to))
}

// overlaps reports whether the archive meets [from, to) (zero: open).
func overlaps(a domain.LogArchive, from, to time.Time) bool {
	return (from.IsZero() || a.To.After(from)) && (to.IsZero() || a.From.Before(to))
}

// listArchives is GET /v2/archived-logs: the account's archives whose
// range meets [from, to), narrowed by filter (type and application), of
// the references the caller may GET.
func (h *handler) listArchives(r *http.Request, p caller.Principal) (int, any, error) {
	from, to, err := rangeParams(r, false)
	if err != nil {
		return 0, nil, err
	}
	app, typ, err := parseArchiveFilter(r.URL.Query().Get("filter"))
	if err != nil {
		return 0, nil, err
	}
	prefix := ""
	if app != "" {
		prefix = app + "#"
		if typ != "" {
			prefix += typ + "#"
		}
	}
	// The archives and the decision's data are read in parallel: one
	// round trip of wall time when the decision's data is warm.
	var (
		as []domain.LogArchive
		d  *access.Decider
		g  errgroup.Group
	)
	g.Go(func() (err error) {
		as, err = h.st.Logs.ListLogArchives(r.Context(), p.AccountID, prefix, h.st.Now())
		return err
	})
	g.Go(func() (err error) { d, err = h.dec.Decider(r.Context(), p); return err })
	if err := g.Wait(); err != nil {
		return 0, nil, err
	}
	var keep []domain.LogArchive
	for _, a := range as {
		if typ != "" && a.Type != typ || !overlaps(a, from, to) {
			continue
		}
		ok, err := d.Allows(r.Context(), http.MethodGet, domain.ArchiveHref(a.App, domain.ArchiveTypeOf(a.Type)))
		if err != nil {
			return 0, nil, err
		}
		if ok {
			keep = append(keep, a)
		}
	}
	return http.StatusOK, logs.ArchivedLogs(keep), nil
}

var archiveFilterRE = regexp.MustCompile(`^\s*([a-z]+)\s*=\s*(?:'([^']*)'|"([^"]*)"|([^\s'"]+))\s*$`)

// parseArchiveFilter reads the listing's filter: type and application
// equalities joined with and (the fields the reference document offers).
func parseArchiveFilter(f string) (app, typ string, err error) {
	if strings.TrimSpace(f) == "" {
		return "", "", nil
	}
	if len(f) > 512 {
		return "", "", domain.Errorf(domain.Invalid, "filter: at most 512 characters")
	}
	for _, term := range regexp.MustCompile(`(?i)\s+and\s+`).Split(f, -1) {
		m := archiveFilterRE.FindStringSubmatch(term)
		if m == nil {
			return "", "", domain.Errorf(domain.Invalid, "filter: %q is not <field>=<value>; the fields are type and application, joined with and", domain.Clip(term, 60))
		}
		v := m[2] + m[3] + m[4]
		switch m[1] {
		case "type":
			t, ok := domain.ArchiveTypes[v]
			if !ok {
				return "", "", domain.Errorf(domain.Invalid, "filter: type %q is not an archive type; use one of %s", domain.Clip(v, 40), strings.Join(domain.ArchiveTypeNames(), ", "))
			}
			if typ != "" && typ != t {
				return "", "", domain.Errorf(domain.Invalid, "filter: type given twice")
			}
			typ = t
		case "application":
			// An href or an id.
			v = strings.TrimPrefix(v, "/v2/applications/")
			if !ids.Valid(v) {
				return "", "", domain.Errorf(domain.Invalid, "filter: application %q is not an application id", domain.Clip(v, 70))
			}
			if app != "" && app != v {
				return "", "", domain.Errorf(domain.Invalid, "filter: application given twice")
			}
			app = v
		default:
			return "", "", domain.Errorf(domain.Invalid, "filter: unknown field %q; the fields are type and application", domain.Clip(m[1], 40))
		}
	}
	return app, typ, nil
}

// downloadArchive is GET /v2/archived-logs/applications/{id}/{log_type}:
// the gzip file of the archive of exactly [from, to).
func (h *handler) downloadArchive(r *http.Request, p caller.Principal) (int, any, error) {
	from, to, err := rangeParams(r, true)
	if err != nil {
		return 0, nil, err
	}
	app, typ, err := archiveRef(r)
	if err != nil {
		return 0, nil, err
	}
	notFound := domain.Errorf(domain.NotFound, "no archive of %s from %s to %s; prepare one with a prepare-for-download task", domain.ArchiveHref(app, domain.ArchiveTypeOf(typ)),
		from.Format(time.RFC3339), to.Format(time.RFC3339))
	a, err := h.st.Logs.GetLogArchive(r.Context(), p.AccountID, app, typ, from, to, h.st.Now())
	if errors.Is(err, domain.ErrNotFound) {
		return 0, nil, notFound
	}
	if err != nil {
		return 0, nil, err
	}
	tag := archiveETag(a)
	if apigw.NotModified(r, tag) {
		return http.StatusOK, apigw.WithETag(nil, tag), nil // a 304: the file is not read
	}
	data, err := h.st.Logs.LogArchiveData(r.Context(), a)
	if errors.Is(err, domain.ErrNotFound) {
		return 0, nil, notFound
	}
	if err != nil {
		return 0, nil, err
	}
	name := fmt.Sprintf("%s-%s-%s-%s.jsonl.gz", app, domain.ArchiveTypeOf(typ), from.Format("20060102T15Z"), to.Format("20060102T15Z"))
	return http.StatusOK, apigw.WithETag(&apigw.Binary{ContentType: "application/gzip", Filename: name, Data: data}, tag), nil
}

// archiveETag is an archive's entity tag: its file never changes, and an
// archive prepared again for the same range has a new one (blob).
func archiveETag(a domain.LogArchive) string {
	return etag.Of("logarchive", a.Account+"/"+a.App+"/"+a.Type+"/"+a.From.UTC().Format(time.RFC3339)+"/"+a.To.UTC().Format(time.RFC3339)+"/"+a.Blob, 0)
}

// deleteArchives is DELETE /v2/archived-logs/applications/{id}/{log_type}:
// the archives of the reference lying inside [from, to) (all without
// them), each deleted whole in its own transaction, answered as the
// listing shows them. None there is a 404.
func (h *handler) deleteArchives(r *http.Request, p caller.Principal) (int, any, error) {
	from, to, err := rangeParams(r, false)
	if err != nil {
		return 0, nil, err
	}
	app, typ, err := archiveRef(r)
	if err != nil {
		return 0, nil, err
	}
	as, err := h.st.Logs.ListLogArchives(r.Context(), p.AccountID, app+"#"+typ+"#", h.st.Now())
	if err != nil {
		return 0, nil, err
	}
	var in []domain.LogArchive
	for _, a := range as {
		if within(a, from, to) {
			in = append(in, a)
		}
	}
	// With If-Match, every archive in the range must be one it names (the
	// ETag of its download), checked before any goes; each is then
	// deleted only as read.
	pre := apigw.IfMatch(r)
	for _, a := range in {
		if err := pre.Check(archiveETag(a)); err != nil {
			return 0, nil, err
		}
	}
	var gone []domain.LogArchive
	for _, a := range in {
		err := store.ReapplyIf(r.Context(), pre.Set(), func(ctx context.Context) error { return h.st.Logs.DeleteLogArchive(ctx, a, pre.Set()) })
		if err != nil {
			return 0, nil, err
		}
		gone = append(gone, a)
	}
	if len(gone) == 0 {
		return 0, nil, domain.Errorf(domain.NotFound, "no archive of %s in that range", domain.ArchiveHref(app, domain.ArchiveTypeOf(typ)))
	}
	return http.StatusOK, logs.ArchivedLogs(gone), nil
}
