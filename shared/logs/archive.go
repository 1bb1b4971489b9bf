package logs

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"slices"
	"time"

	"cads/shared/domain"
	"cads/shared/ids"
	"cads/shared/store"
)

// Archived logs (docs/logs.md, Archived logs): a prepare-for-download
// task writes a gzip file of an application's records of one type over a
// range of whole hours (Archiver); the archived-logs endpoints (logsapi)
// list, download and delete such files. An archive is referenced as
// /v2/archived-logs/applications/<app id>/<archive type>.

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
