package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/infra/testenv"
	"cads/shared/clock"
	"cads/shared/ddb"
	"cads/shared/domain"
	"cads/shared/store"
)

// appTestPartition counts the items of one partition.
func appTestPartition(t *testing.T, d testenv.Dynamo, pk string) int {
	t.Helper()
	out, err := d.Client.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(d.Table), KeyConditionExpression: aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

func newAppTest(st *store.Store, account, id, blob string, archive []byte) domain.AppTest {
	now := st.Now()
	return domain.AppTest{Account: account, ID: id, Description: "d", MediaType: "application/x-tar", Summary: `{}`,
		Archive: store.NewAppTestBlob(blob, archive), ArchiveUpdated: now, Version: 1, Created: now, Updated: now}
}

func appTestBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(b)
	return b
}

// testAccounts creates top-level accounts: a test's create checks that
// its account exists and is not being deleted.
func testAccounts(t *testing.T, st *store.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := st.Accounts.CreateAccount(context.Background(), domain.Account{ID: id, Name: "account " + id, Ancestors: []string{}}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppTestArchiveRoundTrip(t *testing.T) {
	st, d := newStore(t)
	ctx := context.Background()
	testAccounts(t, st, "acct1", "acct2")
	// Several chunks, the last one partial; and a converted form.
	archive := appTestBytes(3*store.AppTestChunkBytes + 1234)
	converted := appTestBytes(store.AppTestChunkBytes + 1)
	at := newAppTest(st, "acct1", "load-test", "b1", archive)
	at.Converted = store.NewAppTestBlob("c1", converted)
	// Calls held 30 ms, so that the quota's read and the converted chunks,
	// made in parallel, overlap even on a loaded machine.
	d.Counter.SetDelay(30 * time.Millisecond)
	d.Counter.Reset()
	if err := st.Tests.CreateAppTest(ctx, at, archive, converted); err != nil {
		t.Fatal(err)
	}
	d.Counter.SetDelay(0)
	if n := d.Counter.Sequential(); n != 2 {
		t.Fatalf("create took %d round trips, want 2: the quota's allowance beside the converted chunks, then one transaction (%v)", n, d.Counter.ByOperation())
	}
	if at.Archive.Chunks != 4 || at.Converted.Chunks != 2 {
		t.Fatalf("chunks = %+v %+v", at.Archive, at.Converted)
	}
	dup := newAppTest(st, "acct1", "load-test", "b2", []byte("x"))
	dup.Converted = store.NewAppTestBlob("c2", []byte("y"))
	if err := st.Tests.CreateAppTest(ctx, dup, []byte("x"), []byte("y")); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("duplicate id: %v", err)
	}
	// The refused create left nothing: not its archive, not its converted form.
	if n := appTestPartition(t, d, "APPTEST#acct1#load-test"); n != 1+4+2 {
		t.Fatalf("partition holds %d items after a refused create", n)
	}
	// The same id in another account is another test.
	if err := st.Tests.CreateAppTest(ctx, newAppTest(st, "acct2", "load-test", "b3", []byte("other")), []byte("other"), nil); err != nil {
		t.Fatal(err)
	}

	d.Counter.Reset()
	got, err := st.Tests.GetAppTest(ctx, "acct1", "load-test")
	if err != nil || got.Archive != at.Archive || got.Converted != at.Converted || got.Description != "d" {
		t.Fatalf("GetAppTest = %+v, %v", got, err)
	}
	data, err := st.Tests.AppTestBlobData(ctx, "acct1", "load-test", got.Archive)
	if err != nil || !bytes.Equal(data, archive) {
		t.Fatalf("archive differs (%d bytes, %v)", len(data), err)
	}
	if n := d.Counter.Sequential(); n != 2 {
		t.Fatalf("reading the archive took %d sequential round trips, want 2", n)
	}
	if data, err := st.Tests.AppTestBlobData(ctx, "acct1", "load-test", got.Converted); err != nil || !bytes.Equal(data, converted) {
		t.Fatalf("converted form differs: %v", err)
	}
	if _, err := st.Tests.GetAppTest(ctx, "acct3", "load-test"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another account's test: %v", err)
	}
	list, pos, _, err := st.Tests.PageAppTests(ctx, "acct1", "", false, 10)
	if err != nil || len(list) != 1 || list[0].ID != "load-test" || pos[0] != "load-test" {
		t.Fatalf("PageAppTests = %+v, %v, %v", list, pos, err)
	}

	// Replace: the new archive and metadata at once; the old blobs go after.
	next := got
	next.MediaType, next.Description, next.Updated = "application/x-tar+x-bzip2", "", st.Now()
	small := []byte("new archive")
	next.Archive, next.Converted = store.NewAppTestBlob("b4", small), domain.AppTestBlob{}
	next, err = st.Tests.ReplaceAppTestArchive(ctx, got, next, small, nil)
	if err != nil || next.Version != 2 {
		t.Fatalf("replace: %+v, %v", next, err)
	}
	// A reader that still holds the old metadata gets the old archive until
	// its chunks are deleted, then learns that it was replaced.
	if data, err := st.Tests.AppTestBlobData(ctx, "acct1", "load-test", got.Archive); err != nil || !bytes.Equal(data, archive) {
		t.Fatalf("old archive before cleanup: %v", err)
	}
	if err := st.Tests.DeleteAppTestBlobs(ctx, "acct1", "load-test", got.Archive, got.Converted); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Tests.AppTestBlobData(ctx, "acct1", "load-test", got.Archive); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("old archive after cleanup: %v", err)
	}
	cur, _ := st.Tests.GetAppTest(ctx, "acct1", "load-test")
	data, err = st.Tests.AppTestBlobData(ctx, "acct1", "load-test", cur.Archive)
	if err != nil || string(data) != "new archive" || cur.Description != "" || cur.Converted.ID != "" || cur.Version != 2 {
		t.Fatalf("new archive: %q %+v %v", data, cur, err)
	}
	// A second replace from the stale read loses, and leaves nothing behind.
	stale := got
	stale.Archive, stale.Converted = store.NewAppTestBlob("b5", []byte("z")), store.NewAppTestBlob("c5", []byte("zz"))
	if _, err := st.Tests.ReplaceAppTestArchive(ctx, got, stale, []byte("z"), []byte("zz")); !errors.Is(err, domain.ErrChanged) {
		t.Fatalf("stale replace: %v", err)
	}
	if items := appTestPartition(t, d, "APPTEST#acct1#load-test"); items != 2 {
		t.Fatalf("partition holds %d items, want the metadata and one chunk", items)
	}

	u, err := st.Tests.UpdateAppTestDescription(ctx, "acct1", "load-test", "described")
	if err != nil || u.Description != "described" || u.Version != 3 || u.Archive.ID != "b4" {
		t.Fatalf("UpdateAppTestDescription = %+v, %v", u, err)
	}
	if _, err := st.Tests.UpdateAppTestDescription(ctx, "acct1", "nope", "x"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}

	d.Counter.Reset()
	del, err := st.Tests.DeleteAppTest(ctx, "acct1", "load-test")
	// The consistent read of the test, then the transaction deleting it
	// and counting it out of the account's usage.
	if n := d.Counter.Sequential(); n != 2 {
		t.Errorf("DeleteAppTest: %d round trips, want 2", n)
	}
	if err != nil || del.Archive.ID != "b4" {
		t.Fatalf("DeleteAppTest = %+v, %v", del, err)
	}
	if err := st.Tests.DeleteAppTestBlobs(ctx, "acct1", "load-test", del.Archive, del.Converted); err != nil {
		t.Fatal(err)
	}
	if items := appTestPartition(t, d, "APPTEST#acct1#load-test"); items != 0 {
		t.Fatalf("%d items left after delete", items)
	}
	if _, err := st.Tests.DeleteAppTest(ctx, "acct1", "load-test"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if list, _, _, _ := st.Tests.PageAppTests(ctx, "acct2", "", false, 10); len(list) != 1 {
		t.Fatalf("acct2's test was touched: %+v", list)
	}
}

// An archive over the transaction's 4 MB is refused before anything is
// written.
func TestAppTestCreateTooLarge(t *testing.T) {
	st, d := newStore(t)
	archive := appTestBytes(ddb.MaxTransactBytes + 1)
	at := newAppTest(st, "acct1", "big", "b1", archive)
	err := st.Tests.CreateAppTest(context.Background(), at, archive, nil)
	if !errors.Is(err, ddb.ErrTooManyItems) {
		t.Fatalf("err = %v, want ErrTooManyItems", err)
	}
	if items := appTestPartition(t, d, "APPTEST#acct1#big"); items != 0 {
		t.Fatalf("%d items written", items)
	}
}

func TestAppTestRuns(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	testAccounts(t, st, "acct1")
	at := newAppTest(st, "acct1", "t1", "b1", []byte("x"))
	if err := st.Tests.CreateAppTest(ctx, at, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	until := st.Now().Add(time.Hour)
	err := st.Tests.StartAppTestRun(ctx, "acct1", "t1", "r1", "queued", `{"id":"r1"}`, until, runMarker("r1"))
	got, _ := st.Tests.GetAppTest(ctx, "acct1", "t1")
	if err != nil || got.RunID != "r1" || got.RunState != "queued" || got.Run != `{"id":"r1"}` || got.Description != "d" {
		t.Fatalf("start: %+v, %v", got, err)
	}
	if err := st.Tests.StartAppTestRun(ctx, "acct1", "t1", "r2", "queued", `{}`, until, runMarker("r2")); domain.ErrorCode(err) != domain.Conflict {
		t.Fatalf("second run while one is active: %v", err)
	}
	if err := st.Tests.StartAppTestRun(ctx, "acct1", "nope", "r2", "queued", `{}`, until, runMarker("r2")); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("run of a missing test: %v", err)
	}
	if err := st.Tests.UpdateAppTestRun(ctx, "acct1", "t1", "r1", "running", "succeeded", `{}`, time.Time{}); !errors.Is(err, store.ErrRunChanged) {
		t.Fatalf("update from the wrong state: %v", err)
	}
	if err := st.Tests.UpdateAppTestRun(ctx, "acct1", "t1", "r1", "queued", "running", `{"s":1}`, until); err != nil {
		t.Fatal(err)
	}
	if err := st.Tests.UpdateAppTestRun(ctx, "acct1", "t1", "r1", "running", "succeeded", `{"s":2}`, time.Time{}); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Tests.GetAppTest(ctx, "acct1", "t1")
	if got.RunState != "succeeded" || got.Run != `{"s":2}` || got.RunActiveUntil != 0 {
		t.Fatalf("after the run: %+v", got)
	}
	// Finished: the next run may start, and the old one can no longer change.
	if err := st.Tests.StartAppTestRun(ctx, "acct1", "t1", "r2", "queued", `{}`, until, runMarker("r2")); err != nil {
		t.Fatal(err)
	}
	if err := st.Tests.UpdateAppTestRun(ctx, "acct1", "t1", "r1", "succeeded", "failed", `{}`, time.Time{}); !errors.Is(err, store.ErrRunChanged) {
		t.Fatalf("old run updated: %v", err)
	}
	// A run past its active window no longer blocks (its runner died).
	if err := st.Tests.UpdateAppTestRun(ctx, "acct1", "t1", "r2", "queued", "running", `{}`, st.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := st.Tests.StartAppTestRun(ctx, "acct1", "t1", "r3", "queued", `{}`, until, runMarker("r3")); err != nil {
		t.Fatalf("a stale run blocks: %v", err)
	}
	// Each started run wrote its outbox marker; the refused ones none.
	if due := dueBodies(t, st); len(due) != 3 || due[`{"run":"r1"}`].Queue != "TestRunsQueue" || due[`{"run":"r3"}`].Held {
		t.Fatalf("run markers: %+v", due)
	}
	// Archive changes leave the run alone.
	cur, _ := st.Tests.GetAppTest(ctx, "acct1", "t1")
	next := cur
	next.Archive = store.NewAppTestBlob("b2", []byte("y"))
	if _, err := st.Tests.ReplaceAppTestArchive(ctx, cur, next, []byte("y"), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Tests.GetAppTest(ctx, "acct1", "t1"); got.RunID != "r3" || got.RunState != "queued" {
		t.Fatalf("run lost by a replace: %+v", got)
	}
	if err := st.Tests.UpdateAppTestRun(ctx, "acct1", "gone", "r3", "queued", "running", `{}`, until); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("run of a missing test: %v", err)
	}
}

// Runs are counted per calendar month and year against the account's
// application_tests entitlements of that period: concurrent starts never
// overshoot, the refusal names the period, and a new month has room again
// while the year's limit still holds.
func TestAppTestRunsAreMetered(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	d := testenv.NewDynamo(t)
	st := store.New(d.Client, d.Table, store.WithClock(clk.Now))
	ctx := context.Background()
	testAccounts(t, st, "acct1")
	now := st.Now()
	ent := func(id, period string, n int) {
		t.Helper()
		if err := st.Entitlements.CreateEntitlement(ctx, domain.Entitlement{ID: id, Account: "acct1", Resource: domain.ResourceApplicationTests,
			Quantity: n, Period: period, Started: now.Add(-time.Hour), Version: 1, Created: now, Updated: now}); err != nil {
			t.Fatal(err)
		}
	}
	ent("e1", domain.PeriodMonth, 3)
	const racers = 8
	for i := range racers {
		if err := st.Tests.CreateAppTest(ctx, newAppTest(st, "acct1", fmt.Sprintf("t%d", i), fmt.Sprintf("b%d", i), []byte("x")), []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		started, refused int
		other            []error
	)
	for i := range racers {
		wg.Go(func() {
			run := fmt.Sprintf("r%d", i)
			err := st.Tests.StartAppTestRun(ctx, "acct1", fmt.Sprintf("t%d", i), run, "queued", `{}`, now.Add(time.Hour), runMarker(run))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				started++
			case domain.ErrorCode(err) == domain.Conflict && strings.Contains(domain.ErrorMessage(err), "3 application test runs per month"):
				refused++
			default:
				other = append(other, err)
			}
		})
	}
	wg.Wait()
	if started != 3 || refused != racers-3 || len(other) != 0 {
		t.Fatalf("%d concurrent runs at 3 a month: %d started, %d refused, others %v", racers, started, refused, other)
	}

	// A year's entitlement adds its own limit: next month the month's 3
	// have room again, and the year's 4, with March's 3 used, for one.
	ent("e2", domain.PeriodYear, 4)
	next := time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC)
	clk.Set(next)
	var ran []string
	for i := range racers {
		run := fmt.Sprintf("n%d", i)
		if err := st.Tests.StartAppTestRun(ctx, "acct1", fmt.Sprintf("t%d", i), run, "queued", `{}`, next.Add(time.Hour), runMarker(run)); err == nil {
			ran = append(ran, run)
		} else if domain.ErrorCode(err) == domain.Conflict && strings.Contains(domain.ErrorMessage(err), "per year") {
			break
		} else if domain.ErrorCode(err) != domain.Conflict {
			t.Fatal(err)
		}
	}
	if len(ran) != 1 {
		t.Errorf("runs next month with 3 of the year's 4 used: %v, want 1", ran)
	}
}
