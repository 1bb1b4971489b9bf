// Package testsapi is the tests function's HTTP handler
// (docs/api.md#application-tests) over package tests.
package testsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/caller"
	"cads/shared/ddb"
	"cads/shared/domain"
	"cads/shared/etag"
	"cads/shared/ids"
	"cads/shared/jsontext"
	"cads/shared/outbox"
	"cads/shared/routes"
	"cads/shared/store"
	"cads/shared/tests"
)

// Store is what the tests API reads and writes.
type Store struct {
	Now   func() time.Time
	Tests interface {
		CreateAppTest(ctx context.Context, t domain.AppTest, archive, converted []byte) error
		GetAppTest(ctx context.Context, account, id string) (domain.AppTest, error)
		PageAppTests(ctx context.Context, account, after string, desc bool, n int) ([]domain.AppTest, []string, bool, error)
		AppTestBlobData(ctx context.Context, account, id string, b domain.AppTestBlob) ([]byte, error)
		ReplaceAppTestArchive(ctx context.Context, prev, next domain.AppTest, archive, converted []byte) (domain.AppTest, error)
		DeleteAppTestBlobs(ctx context.Context, account, id string, blobs ...domain.AppTestBlob) error
		UpdateAppTestDescription(ctx context.Context, account, id, desc string, versions ...int) (domain.AppTest, error)
		DeleteAppTest(ctx context.Context, account, id string, pre ...func(domain.AppTest) error) (domain.AppTest, error)
		StartAppTestRun(ctx context.Context, account, id, runID, state, run string, activeUntil time.Time, m *store.OutboxMarker) error
		UpdateAppTestRun(ctx context.Context, account, id, runID, from, to, run string, activeUntil time.Time) error
	}
	Applications interface {
		GetApplication(ctx context.Context, account, id string) (domain.Application, error)
		AliasAccounts(ctx context.Context, aliases []string) (map[string]string, error)
	}
}

// NewStore is a Store over the table's repositories.
func NewStore(st *store.Store) Store {
	return Store{Now: st.Now, Tests: st.Tests, Applications: st.Applications}
}

// Deciders makes second decisions with the authorizer's engine.
type Deciders interface {
	Decider(ctx context.Context, p caller.Principal) (*access.Decider, error)
}

// Limits of the API's own fields.
const (
	MaxIDLen          = 50
	MaxDescription    = 1000 // characters
	MaxDuration       = 600  // seconds; the runner is a Lambda function (at most 900 s)
	MaxVirtualUsers   = 1000
	maxDescFieldBytes = 4 * MaxDescription
)

var idPattern = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

type handler struct {
	st  Store
	dec Deciders
	q   *outbox.Queue
	log *slog.Logger
}

// New returns the tests function's HTTP handler. q is the outbox of the
// run queue; it may be nil in a deployment without one: runs are then
// refused.
func New(st Store, dec Deciders, q *outbox.Queue, log *slog.Logger) *apigw.Router {
	h := &handler{st: st, dec: dec, q: q, log: log}
	mux := apigw.NewRouter(routes.Tests)
	mux.HandleFunc("getTests", h.wrap(h.list))
	mux.HandleFunc("postTests", h.wrap(h.run))
	mux.HandleFunc("getTestsById", h.wrap(h.get))
	mux.HandleFunc("putTestsById", h.wrap(h.create))
	mux.HandleFunc("patchTestsById", h.wrap(h.patch))
	mux.HandleFunc("deleteTestsById", h.wrap(h.remove))
	return mux
}

type endpoint = apigw.Endpoint

func (h *handler) wrap(e endpoint) http.HandlerFunc { return apigw.HandleInAccount(h.log, e) }

func testID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if len(id) > MaxIDLen || !idPattern.MatchString(id) {
		return "", domain.Errorf(domain.Invalid, "test id %q must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ and have at most %d characters", id, MaxIDLen)
	}
	return id, nil
}

// tagged is a test's body with its ETag: the test's version, which every
// change increments, a run's included.
func tagged(t domain.AppTest) *apigw.Tagged { return apigw.WithETag(tests.Out(t), testETag(t)) }

func testETag(t domain.AppTest) string { return etag.Of("test", t.Account+"/"+t.ID, t.Version) }

func notFound(err error, id string) error {
	return domain.IfNotFound(err, "no test %q", id)
}

// storeError turns a transaction over DynamoDB's count or size limits into
// a 413: the input was too large. An item over the item size limit is
// already the store's 400 naming that limit.
func storeError(err error) error {
	if _, ok := domain.AsError(err); !ok && errors.Is(err, ddb.ErrTooManyItems) {
		return &domain.Error{Code: domain.TooLarge, Message: "the test configuration is too large to store; make it smaller", Err: err}
	}
	return err
}

// ---------------------------------------------------------------- reads

func (h *handler) list(r *http.Request, p caller.Principal) (int, any, error) {
	page, err := apigw.ParsePage(r.URL.Query(), "id", "created", "updated")
	if err != nil {
		return 0, nil, err
	}
	list, err := apigw.List(r, page, apigw.Lister[domain.AppTest, tests.ApplicationTest]{
		// Tests are kept in id order (their ids are the caller's).
		Name: "tests", Indexed: "id",
		ValidPosition: func(s string) bool { return len(s) <= MaxIDLen && idPattern.MatchString(s) },
		Read: func(ctx context.Context, after string, desc bool, n int) ([]domain.AppTest, []string, bool, error) {
			return h.st.Tests.PageAppTests(ctx, p.AccountID, after, desc, n)
		},
		// A collection shows only the members the caller may GET (docs/api.md#collection-reads).
		Allow: func(ctx context.Context) (func(domain.AppTest) (bool, error), error) {
			dec, err := h.dec.Decider(ctx, p)
			if err != nil {
				return nil, err
			}
			return func(t domain.AppTest) (bool, error) { return dec.Allows(ctx, http.MethodGet, tests.TestHref(t.ID)) }, nil
		},
		Out:  func(t domain.AppTest) (tests.ApplicationTest, error) { return tests.Out(t), nil },
		Sort: sortTests,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, list, nil
}

func sortTests(ts []tests.ApplicationTest, order []apigw.OrderKey) {
	apigw.Sort(ts, order, func(t tests.ApplicationTest, field string) any {
		switch field {
		case "id":
			return t.ID
		case "updated":
			return t.Updated
		}
		return t.Created
	}, func(t tests.ApplicationTest) string { return t.ID })
}

// get is GET /v2/tests/{id}: the archive as tar.bz2 when that is the
// first type the client accepts (as API Gateway decides on binary
// responses), the metadata otherwise.
func (h *handler) get(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := testID(r)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	t, err := h.st.Tests.GetAppTest(ctx, p.AccountID, id)
	if err != nil {
		return 0, nil, notFound(err, id)
	}
	if firstAccept(r.Header.Get("Accept")) != tests.TypeTarBzip2 {
		return http.StatusOK, tagged(t), nil
	}
	// The tar.bz2 form was made at upload: the upload itself, or its
	// converted copy.
	blob := func(t domain.AppTest) domain.AppTestBlob {
		if t.Converted.ID != "" {
			return t.Converted
		}
		return t.Archive
	}
	data, err := h.st.Tests.AppTestBlobData(ctx, p.AccountID, id, blob(t))
	if errors.Is(err, domain.ErrChanged) {
		// Replaced between the two reads: the new one is complete now.
		if t, err = h.st.Tests.GetAppTest(ctx, p.AccountID, id); err != nil {
			return 0, nil, notFound(err, id)
		}
		data, err = h.st.Tests.AppTestBlobData(ctx, p.AccountID, id, blob(t))
	}
	if err != nil {
		return 0, nil, notFound(err, id)
	}
	return http.StatusOK, &apigw.Binary{ContentType: tests.TypeTarBzip2, Filename: id + ".tar.bz2", Data: data}, nil
}

func firstAccept(accept string) string {
	first, _, _ := strings.Cut(accept, ",")
	mt, _, err := mime.ParseMediaType(strings.TrimSpace(first))
	if err != nil {
		return ""
	}
	return mt
}

// ---------------------------------------------------------------- writes

// upload is a PUT or PATCH body: the optional description and the
// optional configuration file.
type upload struct {
	desc     *string
	file     []byte
	fileType string
	filename string
}

// readUpload reads multipart/form-data (fields desc and file) or a raw
// body of one of the configuration types.
func readUpload(r *http.Request) (upload, error) {
	var up upload
	mt := apigw.MediaType(r)
	switch {
	case mt == "multipart/form-data":
	case tests.AcceptedType(mt):
		body, err := apigw.ReadBody(r, int64(tests.MaxArchiveBytes))
		if err != nil {
			return up, err
		}
		up.file, up.fileType = body, mt
		return up, nil
	case mt == "":
		return up, domain.Errorf(domain.Unsupported, "missing Content-Type; send multipart/form-data or one of %s", strings.Join(tests.MediaTypes, ", "))
	default:
		return up, domain.Errorf(domain.Unsupported, "Content-Type %q is not accepted here; send multipart/form-data or one of %s", mt, strings.Join(tests.MediaTypes, ", "))
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return up, domain.Errorf(domain.Invalid, "multipart/form-data needs a boundary parameter")
	}
	body, err := apigw.ReadBody(r, int64(tests.MaxBodyBytes))
	if err != nil {
		return up, err
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	seenFile := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return up, domain.Errorf(domain.Invalid, "malformed multipart body: %v", err)
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return up, domain.Errorf(domain.Invalid, "malformed multipart body: %v", err)
		}
		switch name := part.FormName(); name {
		case "desc":
			if up.desc != nil {
				return up, domain.Errorf(domain.Invalid, "the form field desc is sent twice")
			}
			if len(data) > maxDescFieldBytes {
				return up, domain.Errorf(domain.Invalid, "desc must have at most %d characters", MaxDescription)
			}
			s := string(data)
			up.desc = &s
		case "file":
			if seenFile {
				return up, domain.Errorf(domain.Invalid, "the form field file is sent twice")
			}
			seenFile = true
			up.file, up.filename = data, part.FileName()
			if up.fileType, err = partType(part.Header.Get("Content-Type"), up.filename, data); err != nil {
				return up, err
			}
		default:
			return up, domain.Errorf(domain.Invalid, "unknown form field %q: the fields are desc and file", name)
		}
	}
	if seenFile && len(up.file) > tests.MaxArchiveBytes {
		return up, domain.Errorf(domain.TooLarge, "the file is %d bytes; at most %d are accepted", len(up.file), tests.MaxArchiveBytes)
	}
	return up, nil
}

// partType decides what a form file claims to be: its part's Content-Type
// when that is one of the configuration types, else its file name's
// extension, else its first bytes. Open then checks the claim.
func partType(contentType, filename string, data []byte) (string, error) {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && tests.AcceptedType(mt) {
		return mt, nil
	}
	name := strings.ToLower(filename)
	for _, e := range []struct{ suffix, typ string }{
		{".tar.bz2", tests.TypeTarBzip2}, {".tbz2", tests.TypeTarBzip2}, {".tbz", tests.TypeTarBzip2},
		{".tar.gz", tests.TypeTarGzip}, {".tgz", tests.TypeTarGzip}, {".tar", tests.TypeTar}, {".zip", tests.TypeZip},
		{".json", tests.TypeJSON}, {".bz2", tests.TypeBzip2}, {".gz", tests.TypeGzip},
	} {
		if strings.HasSuffix(name, e.suffix) {
			return e.typ, nil
		}
	}
	switch {
	case bytes.HasPrefix(data, tests.Bzip2Magic):
		return tests.TypeBzip2, nil
	case bytes.HasPrefix(data, tests.GzipMagic):
		return tests.TypeGzip, nil
	case bytes.HasPrefix(data, tests.ZipMagic), bytes.HasPrefix(data, tests.ZipEmpty):
		return tests.TypeZip, nil
	case tests.LooksLikeTar(data):
		return tests.TypeTar, nil
	case bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")):
		return tests.TypeJSON, nil
	}
	return "", domain.Errorf(domain.Invalid, "the file is none of %s (by its Content-Type, its name or its content)", strings.Join(tests.MediaTypes, ", "))
}

func validDesc(s string) (string, error) {
	// A form field is not JSON, so the body reader has not judged it.
	if err := jsontext.CheckText("desc", s); err != nil {
		return "", err
	}
	if utf8.RuneCountInString(s) > MaxDescription {
		return "", domain.Errorf(domain.Invalid, "desc must be UTF-8 text of at most %d characters", MaxDescription)
	}
	return s, nil
}

// prepared is a checked upload, ready to store: its summary, and its
// tar.bz2 form when the upload is not one.
type prepared struct {
	summary   string
	converted []byte
}

// prepare checks an uploaded configuration completely before anything is
// written: what it claims to be, its configuration, that every request
// names an alias of the account's applications (owned reads the claims
// of the hosts named), and that its tar.bz2 form fits in a response.
func prepare(up upload, now time.Time, owned func(urls []string) (map[string]bool, error)) (prepared, error) {
	a, err := tests.Open(up.fileType, up.file)
	if err != nil {
		return prepared{}, err
	}
	c, err := tests.ParseConfig(a)
	if err != nil {
		return prepared{}, err
	}
	own, err := owned(tests.ConfigURLs(c))
	if err != nil {
		return prepared{}, err
	}
	if err := tests.CheckTargets(c, own); err != nil {
		return prepared{}, err
	}
	var pr prepared
	if !a.IsTarBzip2() {
		if pr.converted, err = a.TarBzip2(now); err != nil {
			if errors.Is(err, tests.ErrTooLarge) {
				return prepared{}, domain.Errorf(domain.TooLarge, "the configuration converts to a tar.bz2 archive of more than %d bytes, too large to return; make it smaller", tests.MaxDownloadBytes)
			}
			return prepared{}, err
		}
	}
	sum, err := json.Marshal(tests.Summarize(a, c))
	if err != nil {
		return prepared{}, fmt.Errorf("encode configuration summary: %w", err)
	}
	pr.summary = string(sum)
	return pr, nil
}

// create is PUT /v2/tests/{id}: a new test (an existing id is a 409).
func (h *handler) create(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := testID(r)
	if err != nil {
		return 0, nil, err
	}
	up, err := readUpload(r)
	if err != nil {
		return 0, nil, err
	}
	if up.file == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "file is required: the test configuration (multipart/form-data field file, or the whole body)")
	}
	// PUT only creates: no existing test can be at the state an If-Match
	// names, and a missing one has none.
	if apigw.IfMatch(r).Set() {
		return 0, nil, domain.Errorf(domain.Precondition, "PUT creates a test and If-Match names an existing one: change it with PATCH")
	}
	desc := ""
	if up.desc != nil {
		if desc, err = validDesc(*up.desc); err != nil {
			return 0, nil, err
		}
	}
	now := h.st.Now()
	pr, err := prepare(up, now, h.owned(r.Context(), p.AccountID))
	if err != nil {
		return 0, nil, err
	}
	t := domain.AppTest{Account: p.AccountID, ID: id, Description: desc, MediaType: up.fileType, Filename: up.filename,
		Archive: store.NewAppTestBlob(ids.New(), up.file), ArchiveUpdated: now, Summary: pr.summary, Version: 1, Created: now, Updated: now}
	if pr.converted != nil {
		t.Converted = store.NewAppTestBlob(ids.New(), pr.converted)
	}
	if err := h.st.Tests.CreateAppTest(r.Context(), t, up.file, pr.converted); err != nil {
		return 0, nil, storeError(err)
	}
	return http.StatusOK, tagged(t), nil
}

// patch is PATCH /v2/tests/{id}: a new description, a new configuration,
// or both.
func (h *handler) patch(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := testID(r)
	if err != nil {
		return 0, nil, err
	}
	up, err := readUpload(r)
	if err != nil {
		return 0, nil, err
	}
	if up.desc == nil && up.file == nil {
		return 0, nil, domain.Errorf(domain.Invalid, "nothing to change: send desc, file or both")
	}
	if up.desc != nil {
		if _, err := validDesc(*up.desc); err != nil {
			return 0, nil, err
		}
	}
	ctx := r.Context()
	pre := apigw.IfMatch(r)
	if up.file == nil {
		// One write, conditional on the versions If-Match names.
		versions, err := pre.WriteVersions("test", p.AccountID+"/"+id)
		if err != nil {
			return 0, nil, err
		}
		var t domain.AppTest
		err = store.ReapplyIf(ctx, len(versions) > 0, func(ctx context.Context) (err error) {
			t, err = h.st.Tests.UpdateAppTestDescription(ctx, p.AccountID, id, *up.desc, versions...)
			return err
		})
		if err != nil {
			return 0, nil, notFound(err, id)
		}
		return http.StatusOK, tagged(t), nil
	}
	now := h.st.Now()
	// The test is read while the upload is checked; a missing test is a
	// 404 before any problem of the upload.
	var (
		prev domain.AppTest
		read errgroup.Group
	)
	read.Go(func() (err error) { prev, err = h.st.Tests.GetAppTest(ctx, p.AccountID, id); return err })
	pr, err := prepare(up, now, h.owned(ctx, p.AccountID))
	if prevErr := read.Wait(); prevErr != nil {
		return 0, nil, notFound(prevErr, id)
	}
	if err != nil {
		return 0, nil, err
	}
	archive, converted := store.NewAppTestBlob(ids.New(), up.file), domain.AppTestBlob{}
	if pr.converted != nil {
		converted = store.NewAppTestBlob(ids.New(), pr.converted)
	}
	var next domain.AppTest
	fresh := true // prev was just read
	// A replace that lost a race wrote nothing (its converted chunks are
	// dropped): it applies again to the test as it is then (unless
	// If-Match named the state it was based on).
	current := func(ctx context.Context) (domain.AppTest, error) {
		if fresh {
			fresh = false
			return prev, nil
		}
		t, err := h.st.Tests.GetAppTest(ctx, p.AccountID, id)
		return t, notFound(err, id)
	}
	err = store.Edit(ctx, pre, current, testETag, func(ctx context.Context, cur domain.AppTest) error {
		prev = cur
		n := prev
		if up.desc != nil {
			n.Description = *up.desc
		}
		n.MediaType, n.Filename, n.Summary, n.ArchiveUpdated, n.Updated = up.fileType, up.filename, pr.summary, now, now
		n.Archive, n.Converted = archive, converted
		next, err = h.st.Tests.ReplaceAppTestArchive(ctx, prev, n, up.file, pr.converted)
		return notFound(storeError(err), id)
	})
	if err != nil {
		return 0, nil, err
	}
	if err := h.st.Tests.DeleteAppTestBlobs(ctx, p.AccountID, id, prev.Archive, prev.Converted); err != nil {
		h.log.WarnContext(ctx, "old archive chunks of a test left behind (unreachable)", "account", p.AccountID, "test", id, "error", err.Error())
	}
	return http.StatusOK, tagged(next), nil
}

// owned returns the check prepare makes of the hosts a configuration
// names: which are aliases of the account's applications (OwnAliases).
func (h *handler) owned(ctx context.Context, account string) func(urls []string) (map[string]bool, error) {
	return func(urls []string) (map[string]bool, error) {
		return tests.OwnAliases(ctx, h.st.Applications, account, urls)
	}
}

func (h *handler) remove(r *http.Request, p caller.Principal) (int, any, error) {
	id, err := testID(r)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	pre := apigw.IfMatch(r)
	var checks []func(domain.AppTest) error
	if pre.Set() {
		checks = append(checks, func(t domain.AppTest) error { return pre.Check(testETag(t)) })
	}
	t, err := h.st.Tests.DeleteAppTest(ctx, p.AccountID, id, checks...)
	if err != nil {
		return 0, nil, notFound(err, id)
	}
	if err := h.st.Tests.DeleteAppTestBlobs(ctx, p.AccountID, id, t.Archive, t.Converted); err != nil {
		h.log.WarnContext(ctx, "archive chunks of a deleted test left behind (unreachable)", "account", p.AccountID, "test", id, "error", err.Error())
	}
	return http.StatusOK, tests.Out(t), nil
}

// ---------------------------------------------------------------- runs

// runPost is ApplicationTestPost. assignCost defaults to true (the
// reference document's default).
type runPost struct {
	ID           *string `json:"id"`
	Duration     *int    `json:"duration"`
	VirtualUsers *int    `json:"virtualUsers"`
	AssignCost   *bool   `json:"assignCost"`
	Targets      *string `json:"targets"`
}

// run is POST /v2/tests: queue a run of a stored test. 200 with the test,
// whose last_run is the new run, queued.
func (h *handler) run(r *http.Request, p caller.Principal) (int, any, error) {
	var in runPost
	if err := apigw.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	switch {
	case in.ID == nil:
		return 0, nil, domain.Errorf(domain.Invalid, "id is required: the test to run")
	case len(*in.ID) > MaxIDLen || !idPattern.MatchString(*in.ID):
		return 0, nil, domain.Errorf(domain.Invalid, "id %q must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ and have at most %d characters", *in.ID, MaxIDLen)
	case in.Duration == nil || *in.Duration < 1 || *in.Duration > MaxDuration:
		return 0, nil, domain.Errorf(domain.Invalid, "duration is required: the run's length in seconds, from 1 to %d", MaxDuration)
	case in.VirtualUsers == nil || *in.VirtualUsers < 1 || *in.VirtualUsers > MaxVirtualUsers:
		return 0, nil, domain.Errorf(domain.Invalid, "virtualUsers is required: from 1 to %d", MaxVirtualUsers)
	}
	ctx := r.Context()
	run := tests.Run{ID: ids.New(), State: tests.RunQueued, Duration: *in.Duration, VirtualUsers: *in.VirtualUsers, AssignCost: true,
		RequestedBy: tests.UserHref(p.ID)}
	run.LoadID = run.ID
	if in.AssignCost != nil {
		run.AssignCost = *in.AssignCost
	}
	if in.Targets != nil && *in.Targets != "" {
		app, err := h.target(ctx, p, *in.Targets)
		if err != nil {
			return 0, nil, err
		}
		run.Targets = tests.AppHref(app)
	}
	if h.q == nil {
		return 0, nil, errors.New("no test run queue is configured")
	}
	now := h.st.Now()
	run.Created = now
	detail, err := json.Marshal(run)
	if err != nil {
		return 0, nil, fmt.Errorf("encode run: %w", err)
	}
	until := now.Add(time.Duration(run.Duration)*time.Second + tests.RunGrace)
	msg, err := json.Marshal(tests.RunMessage{Account: p.AccountID, Test: *in.ID, Run: run.ID})
	if err != nil {
		return 0, nil, fmt.Errorf("encode run message: %w", err)
	}
	m := h.q.Marker(string(msg))
	if err := h.st.Tests.StartAppTestRun(ctx, p.AccountID, *in.ID, run.ID, tests.RunQueued, string(detail), until, &m); err != nil {
		return 0, nil, notFound(storeError(err), *in.ID)
	}
	// Written with its marker, the run will start: a failed send is the
	// outbox sweep's to repeat, and the runner ignores a duplicate. The
	// answer's read of the test runs alongside the send.
	var (
		t    domain.AppTest
		read errgroup.Group
	)
	read.Go(func() (err error) { t, err = h.st.Tests.GetAppTest(ctx, p.AccountID, *in.ID); return err })
	_ = h.q.Send(ctx, &m)
	if gerr := read.Wait(); gerr != nil {
		return 0, nil, notFound(storeError(gerr), *in.ID)
	}
	return http.StatusOK, tagged(t), nil
}

// target resolves `targets` (an application id or href of the caller's
// account) and checks that the caller may read that application: a run's
// records are attributed to it.
func (h *handler) target(ctx context.Context, p caller.Principal, targets string) (string, error) {
	app := strings.TrimPrefix(targets, "/v2/applications/")
	if !ids.Valid(app) {
		return "", domain.Errorf(domain.Invalid, "targets must be an application id or href (/v2/applications/<id>), not %q", targets)
	}
	var (
		g      errgroup.Group // both answers are needed to choose the error
		dec    *access.Decider
		appErr error
	)
	g.Go(func() (err error) { dec, err = h.dec.Decider(ctx, p); return err })
	g.Go(func() error { _, appErr = h.st.Applications.GetApplication(ctx, p.AccountID, app); return nil })
	if decErr := g.Wait(); decErr != nil {
		return "", decErr
	}
	// The application is looked at only once the decision allows it, so a
	// refused caller learns nothing about it.
	d, err := dec.Decide(ctx, http.MethodGet, tests.AppHref(app))
	if err != nil {
		return "", err
	}
	if !d.Allowed {
		return "", domain.Errorf(domain.Forbidden, "targets: running a test against %s needs GET %s: %s", tests.AppHref(app), tests.AppHref(app), d.Explain())
	}
	if errors.Is(appErr, domain.ErrNotFound) {
		return "", domain.Errorf(domain.NotFound, "targets: no application %q", app)
	}
	return app, appErr
}
