package logs

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
)

// Archived logs (docs/logs.md, Archived logs): a prepare-for-download
// task writes a gzip file of an application's records of one type over a
// range of whole hours; the archived-logs endpoints list, download and
// delete such files. An archive is referenced as
// /v2/archived-logs/applications/<app id>/<archive type>.

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// An archive's range is whole hours, at most domain.MaxArchiveHours
// (MaxPartitions) of them; the file is at most store.MaxLogArchiveBytes
// (its download travels base64-encoded within the response budget).

// ArchiveStore is what preparing an archive reads and writes.
type ArchiveStore interface {
	Now() time.Time
	ScanStore
	PutLogArchive(ctx context.Context, a domain.LogArchive, data []byte) error
	ListLogArchives(ctx context.Context, account, prefix string, now time.Time) ([]domain.LogArchive, error)
}

// Archiver prepares archives (the prepare-for-download task's work).
type Archiver struct {
	st ArchiveStore
	// Budgets (ScanBudget, MaxQueryTime, store.MaxLogArchiveBytes); tests
	// lower them.
	budget    int
	timeLimit time.Duration
	maxBytes  int
}

// NewArchiver returns an Archiver writing to st.
func NewArchiver(st ArchiveStore) *Archiver {
	return &Archiver{st: st, budget: ScanBudget, timeLimit: MaxQueryTime, maxBytes: store.MaxLogArchiveBytes}
}

// ArchiveRequest is what to archive.
type ArchiveRequest struct {
	Account, App, ArchiveType string
	From, To                  time.Time
	RetentionDays             int
	Task                      string
}

// Prepare reads the records of the range (the hour index, then the hours
// it names) into a gzip file of JSON lines, one record per line in stored
// order, and writes it with its header in one transaction. A range that
// passes a budget (records read, scan time, file size) or an account at
// MaxLogArchives is a *BadQuery naming the limit, and nothing is written;
// an application that is gone is domain.ErrNotFound.
func (a *Archiver) Prepare(ctx context.Context, r ArchiveRequest) (domain.LogArchive, error) {
	typ, ok := domain.ArchiveTypes[r.ArchiveType]
	if !ok {
		return domain.LogArchive{}, bad("no archive type %q", r.ArchiveType)
	}
	now := a.st.Now()
	have, err := a.st.ListLogArchives(ctx, r.Account, "", now)
	if err != nil {
		return domain.LogArchive{}, err
	}
	sk := store.LogArchiveSK(r.App, typ, r.From, r.To)
	if len(have) >= store.MaxLogArchives && !slices.ContainsFunc(have, func(x domain.LogArchive) bool { return store.LogArchiveSK(x.App, x.Type, x.From, x.To) == sk }) {
		return domain.LogArchive{}, bad("the account keeps %d archives (MaxLogArchives): delete some first", store.MaxLogArchives)
	}
	hours, err := a.st.LogHours(ctx, r.App, typ, r.From, r.To)
	if err != nil {
		return domain.LogArchive{}, err
	}
	slices.SortFunc(hours, func(x, y time.Time) int { return x.Compare(y) })
	scanCtx, cancel := context.WithTimeout(ctx, a.timeLimit)
	defer cancel()
	var (
		buf               bytes.Buffer
		count, examined   int
		stopErr, writeErr error
	)
	gz := gzip.NewWriter(&buf)
	enc := json.NewEncoder(gz)
	for _, h := range hours {
		err := a.st.ScanLogs(scanCtx, store.LogRange{App: r.App, Type: typ, Hour: h, From: h, To: r.To, PageSize: chunkPage}, func(it domain.LogItem) bool {
			recs, err := decodeChunk(it, false)
			if err != nil {
				writeErr = err
				return false
			}
			for _, rec := range recs {
				if examined++; examined > a.budget {
					stopErr = bad("the range holds more than %d records (ScanBudget): prepare a shorter range", a.budget)
					return false
				}
				if rec.t.Before(r.From) || !rec.t.Before(r.To) {
					continue
				}
				if err := enc.Encode(rec.rec); err != nil {
					writeErr = err
					return false
				}
				count++
			}
			if buf.Len() > a.maxBytes {
				stopErr = bad("the archive would pass %d bytes compressed (MaxLogArchiveBytes): prepare a shorter range", a.maxBytes)
				return false
			}
			return true
		})
		switch {
		case stopErr != nil:
			return domain.LogArchive{}, stopErr
		case writeErr != nil:
			return domain.LogArchive{}, writeErr
		case err != nil && ctx.Err() == nil && scanCtx.Err() != nil:
			return domain.LogArchive{}, bad("reading the range took longer than %s (MaxQueryTime): prepare a shorter range", a.timeLimit)
		case err != nil:
			return domain.LogArchive{}, err
		}
	}
	if err := gz.Close(); err != nil {
		return domain.LogArchive{}, err
	}
	if buf.Len() > a.maxBytes {
		return domain.LogArchive{}, bad("the archive would pass %d bytes compressed (MaxLogArchiveBytes): prepare a shorter range", a.maxBytes)
	}
	days := r.RetentionDays
	if days == 0 {
		days = domain.DefaultArchiveRetention
	}
	arc := domain.LogArchive{Account: r.Account, App: r.App, Type: typ, From: r.From.UTC(), To: r.To.UTC(), Count: count, Size: buf.Len(),
		Blob: ids.New(), Chunks: (buf.Len() + store.LogArchiveChunkBytes - 1) / store.LogArchiveChunkBytes, Task: r.Task, Created: now,
		Expires: now.Add(time.Duration(days) * 24 * time.Hour).Unix()}
	if err := a.st.PutLogArchive(ctx, arc, buf.Bytes()); err != nil {
		return domain.LogArchive{}, err
	}
	return arc, nil
}

// ArchivedLogJSON is one element of the archived-logs answers: a
// reference and its archives' ranges (the reference document's
// ArchivedLog and Range).
type ArchivedLogJSON struct {
	Href   string      `json:"href"`
	Ranges []RangeJSON `json:"ranges"`
}

// RangeJSON is one archive. Every archive that exists is ready: the
// records are online for their whole retention, so none waits for a
// restore.
type RangeJSON struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Count int       `json:"count"`
	State string    `json:"state"`
	Size  int       `json:"size"`
}

// ArchivedLogs groups archives by reference, in the order given.
func ArchivedLogs(as []domain.LogArchive) []ArchivedLogJSON {
	out := []ArchivedLogJSON{}
	for _, a := range as {
		href := domain.ArchiveHref(a.App, domain.ArchiveTypeOf(a.Type))
		if n := len(out); n == 0 || out[n-1].Href != href {
			out = append(out, ArchivedLogJSON{Href: href})
		}
		out[len(out)-1].Ranges = append(out[len(out)-1].Ranges, RangeJSON{From: a.From.UTC(), To: a.To.UTC(), Count: a.Count, State: "ready", Size: a.Size})
	}
	return out
}

// ArchiveReadStore is what the archived-logs endpoints read and delete.
type ArchiveReadStore interface {
	ListLogArchives(ctx context.Context, account, prefix string, now time.Time) ([]domain.LogArchive, error)
	GetLogArchive(ctx context.Context, account, app, typ string, from, to, now time.Time) (domain.LogArchive, error)
	LogArchiveData(ctx context.Context, a domain.LogArchive) ([]byte, error)
	DeleteLogArchive(ctx context.Context, a domain.LogArchive, pinned bool) error
}

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
		return "", "", domain.Errorf(domain.NotFound, "no archive type %q; the types are %s", clip(at, 40), strings.Join(domain.ArchiveTypeNames(), ", "))
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
	return http.StatusOK, ArchivedLogs(keep), nil
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
			return "", "", domain.Errorf(domain.Invalid, "filter: %q is not <field>=<value>; the fields are type and application, joined with and", clip(term, 60))
		}
		v := m[2] + m[3] + m[4]
		switch m[1] {
		case "type":
			t, ok := domain.ArchiveTypes[v]
			if !ok {
				return "", "", domain.Errorf(domain.Invalid, "filter: type %q is not an archive type; use one of %s", clip(v, 40), strings.Join(domain.ArchiveTypeNames(), ", "))
			}
			if typ != "" && typ != t {
				return "", "", domain.Errorf(domain.Invalid, "filter: type given twice")
			}
			typ = t
		case "application":
			// An href or an id.
			v = strings.TrimPrefix(v, "/v2/applications/")
			if !ids.Valid(v) {
				return "", "", domain.Errorf(domain.Invalid, "filter: application %q is not an application id", clip(v, 70))
			}
			if app != "" && app != v {
				return "", "", domain.Errorf(domain.Invalid, "filter: application given twice")
			}
			app = v
		default:
			return "", "", domain.Errorf(domain.Invalid, "filter: unknown field %q; the fields are type and application", clip(m[1], 40))
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
	return apigw.ETag("logarchive", a.Account+"/"+a.App+"/"+a.Type+"/"+a.From.UTC().Format(time.RFC3339)+"/"+a.To.UTC().Format(time.RFC3339)+"/"+a.Blob, 0)
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
	return http.StatusOK, ArchivedLogs(gone), nil
}
