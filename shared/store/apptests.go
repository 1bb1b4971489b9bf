package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// NewAppTestBlob describes data stored as blob id.
func NewAppTestBlob(id string, data []byte) domain.AppTestBlob {
	sum := sha256.Sum256(data)
	return domain.AppTestBlob{ID: id, Chunks: (len(data) + AppTestChunkBytes - 1) / AppTestChunkBytes, Size: len(data), SHA256: hex.EncodeToString(sum[:])}
}

// AppTestChunkBytes is the size of an archive chunk item's data, well
// under the 400 KB item limit.
const AppTestChunkBytes = 256 * 1024

// ErrRunChanged means a run update lost to another: the test has another
// run now, or the run is no longer in the expected state.
var ErrRunChanged = errors.New("the test's run changed concurrently")

const skAppTest = "TEST"

func appTestPK(account, id string) string { return "APPTEST#" + account + "#" + id }
func appTestsGSI(account string) string   { return "APPTESTS#" + account }
func appTestGSISK(id string) string       { return "TEST#" + id }
func appTestChunkSK(blob string, i int) string {
	return fmt.Sprintf("CHUNK#%s#%04d", blob, i)
}

func appTestKey(t domain.AppTest) keyAttrs {
	return keyAttrs{PK: appTestPK(t.Account, t.ID), SK: skAppTest, GSI1PK: appTestsGSI(t.Account), GSI1SK: appTestGSISK(t.ID), Entity: "apptest"}
}

type appTestChunk struct {
	Data []byte `dynamodbav:"data"`
}

// chunkPuts splits an archive into chunk items of blob.
func (s *Tests) chunkPuts(account, id, blob string, archive []byte) ([]types.TransactWriteItem, error) {
	var puts []types.TransactWriteItem
	for i := 0; len(archive) > 0; i++ {
		n := min(len(archive), AppTestChunkBytes)
		p, err := s.put(keyAttrs{PK: appTestPK(account, id), SK: appTestChunkSK(blob, i), Entity: "apptest_chunk"}, appTestChunk{Data: archive[:n]})
		if err != nil {
			return nil, err
		}
		puts = append(puts, p)
		archive = archive[n:]
	}
	return puts, nil
}

// CreateAppTest writes a new test. Its converted form (when there is
// one: t.Converted names it) goes first, unreachable until the transaction
// that writes the test and its archive makes it so; the transaction is all
// or nothing, and a failure deletes the converted chunks again. An
// existing test of that id is a *domain.Error, and so is an account that
// is being deleted or gone: the transaction checks the account's
// `deleting` mark and counts the test in the account's usage item, which
// the account's deletion reads, on the condition that the account's
// tests quota has room (domain.QuotaReached otherwise). The archive's
// size bounds the transaction (4 MB).
func (s *Tests) CreateAppTest(ctx context.Context, t domain.AppTest, archive, converted []byte) error {
	meta, err := s.put(appTestKey(t), t)
	if err != nil {
		return err
	}
	chunks, err := s.chunkPuts(t.Account, t.ID, t.Archive.ID, archive)
	if err != nil {
		return err
	}
	// The quota's allowance beside the converted chunks: one sequential
	// round trip before the transaction either way.
	var (
		g    errgroup.Group
		q    domain.Quota
		cErr error
	)
	g.Go(func() (err error) { q, err = s.quotaOf(ctx, t.Account, domain.ResourceTests); return err })
	g.Go(func() error { cErr = s.writeConverted(ctx, t, converted); return nil })
	if err := errors.Join(g.Wait(), cErr); err != nil {
		if cErr == nil {
			err = s.dropConverted(ctx, t, err)
		}
		return err
	}
	err = s.transact(ctx, "create application test", append([]types.TransactWriteItem{meta, {ConditionCheck: &types.ConditionCheck{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(t.Account), skAccount),
		ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(deleting)"),
	}}, s.usageOp(t.Account, q, 1)}, chunks...))
	if err != nil {
		err = s.dropConverted(ctx, t, err)
	}
	switch {
	case txConditionFailedAt(err, 0):
		return domain.DuplicateTest(t.ID)
	case txConditionFailedAt(err, 1):
		return domain.AccountGone(t.Account)
	}
	if qerr := quotaRefused(err, 2, t.Account, q); qerr != nil {
		return qerr
	}
	return err
}

// writeConverted writes the chunks of t's converted form, if it has one.
func (s *Tests) writeConverted(ctx context.Context, t domain.AppTest, converted []byte) error {
	if t.Converted.ID == "" {
		return nil
	}
	puts, err := s.chunkPuts(t.Account, t.ID, t.Converted.ID, converted)
	if err != nil {
		return err
	}
	reqs := make([]types.WriteRequest, len(puts))
	for i, p := range puts {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: p.Put.Item}}
	}
	return wrap("write converted application test archive", ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// dropConverted deletes the converted chunks of a write that failed with
// err, and returns err (with the cleanup's failure, if any).
func (s *Tests) dropConverted(ctx context.Context, t domain.AppTest, err error) error {
	if t.Converted.ID == "" {
		return err
	}
	if cerr := s.DeleteAppTestBlobs(ctx, t.Account, t.ID, t.Converted); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// GetAppTest reads a test of account with a strongly consistent read, so
// a change or a run state is seen by the very next request.
func (s *Tests) GetAppTest(ctx context.Context, account, id string) (domain.AppTest, error) {
	var t domain.AppTest
	err := s.getItem(ctx, "get application test", appTestPK(account, id), skAppTest, &t)
	return t, err
}

// AppTestBlobData reads a blob of a test: one BatchGetItem of its chunks
// (strongly consistent). A chunk that is gone means the blob was replaced
// or the test deleted since the test was read: domain.ErrChanged.
func (s *Tests) AppTestBlobData(ctx context.Context, account, id string, b domain.AppTestBlob) ([]byte, error) {
	keys := s.chunkKeys(account, id, b.ID, b.Chunks)
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return nil, wrap("read application test archive", err)
	}
	parts := make(map[string][]byte, len(items))
	for _, it := range items {
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		d, _ := it["data"].(*types.AttributeValueMemberB)
		if sk != nil && d != nil {
			parts[sk.Value] = d.Value
		}
	}
	var buf bytes.Buffer
	buf.Grow(b.Size)
	for i := range b.Chunks {
		p, ok := parts[appTestChunkSK(b.ID, i)]
		if !ok {
			return nil, domain.ErrChanged
		}
		buf.Write(p)
	}
	sum := sha256.Sum256(buf.Bytes())
	if buf.Len() != b.Size || hex.EncodeToString(sum[:]) != b.SHA256 {
		return nil, fmt.Errorf("application test %s/%s: chunks of blob %s do not match its recorded size and digest", account, id, b.ID)
	}
	return buf.Bytes(), nil
}

func (s *Tests) chunkKeys(account, id, blob string, n int) []map[string]types.AttributeValue {
	keys := make([]map[string]types.AttributeValue, n)
	for i := range n {
		keys[i] = key(appTestPK(account, id), appTestChunkSK(blob, i))
	}
	return keys
}

// ReplaceAppTestArchive makes next (read as prev) the test's state with a
// new archive (and converted form, if next.Converted names one). The
// converted chunks go first, unreachable; then the new archive's chunks
// and the metadata change go in one transaction, conditional on the
// version read, so a reader sees the old archive or the new one, never a
// mix. next's blobs must be new; its Version becomes prev's + 1. The old
// blobs stay until DeleteAppTestBlobs removes them. A concurrent change is
// domain.ErrChanged, a deleted test domain.ErrNotFound.
func (s *Tests) ReplaceAppTestArchive(ctx context.Context, prev domain.AppTest, next domain.AppTest, archive, converted []byte) (domain.AppTest, error) {
	if next.Archive.ID == "" || next.Archive.ID == prev.Archive.ID || (next.Converted.ID != "" && next.Converted.ID == prev.Converted.ID) {
		return domain.AppTest{}, errors.New("replace application test archive: the new archive needs new blob ids")
	}
	next.Version = prev.Version + 1
	chunks, err := s.chunkPuts(next.Account, next.ID, next.Archive.ID, archive)
	if err != nil {
		return domain.AppTest{}, err
	}
	arch, err := attributevalue.Marshal(next.Archive)
	if err != nil {
		return domain.AppTest{}, fmt.Errorf("replace application test archive: %w", err)
	}
	conv, err := attributevalue.Marshal(next.Converted)
	if err != nil {
		return domain.AppTest{}, fmt.Errorf("replace application test archive: %w", err)
	}
	upd := types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.table),
		Key:       key(appTestPK(prev.Account, prev.ID), skAppTest),
		UpdateExpression: aws.String("SET #desc = :desc, #mt = :mt, #fn = :fn, #arch = :arch, #conv = :conv, " +
			"#au = :au, #sum = :sum, #v = :next, #u = :u"),
		ConditionExpression: aws.String("#v = :v"),
		ExpressionAttributeNames: map[string]string{"#desc": "description", "#mt": "media_type", "#fn": "filename", "#arch": "archive",
			"#conv": "converted", "#au": "archive_updated", "#sum": "summary", "#v": "version", "#u": "updated"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":desc": avStr(next.Description), ":mt": avStr(next.MediaType), ":fn": avStr(next.Filename),
			":arch": arch, ":conv": conv, ":au": avTime(next.ArchiveUpdated), ":sum": avStr(next.Summary),
			":next": avNum(int64(next.Version)), ":u": avTime(next.Updated), ":v": avNum(int64(prev.Version)),
		},
	}}
	if err := s.writeConverted(ctx, next, converted); err != nil {
		return domain.AppTest{}, err
	}
	err = s.transact(ctx, "replace application test archive", append([]types.TransactWriteItem{upd}, chunks...))
	if err != nil {
		err = s.dropConverted(ctx, next, err)
	}
	if txConditionFailedAt(err, 0) {
		if _, gerr := s.GetAppTest(ctx, prev.Account, prev.ID); gerr != nil {
			return domain.AppTest{}, gerr
		}
		return domain.AppTest{}, domain.ErrChanged
	}
	if err != nil {
		return domain.AppTest{}, err
	}
	return next, nil
}

// DeleteAppTestBlobs deletes the chunks of blobs that are no longer the
// test's (replaced or deleted; zero blobs are skipped). Nothing reads them
// any more, so a failure leaves unreachable items, never a visible
// half-deleted archive.
func (s *Tests) DeleteAppTestBlobs(ctx context.Context, account, id string, blobs ...domain.AppTestBlob) error {
	var reqs []types.WriteRequest
	for _, b := range blobs {
		if b.ID == "" {
			continue
		}
		for _, k := range s.chunkKeys(account, id, b.ID, b.Chunks) {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
		}
	}
	return wrap("delete application test chunks", ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// UpdateAppTestDescription changes only the description (and updated).
// With versions (a request's If-Match), only a test at one of them
// changes: any other state, missing included, is domain.ErrChanged.
func (s *Tests) UpdateAppTestDescription(ctx context.Context, account, id, desc string, versions ...int) (domain.AppTest, error) {
	cond, vals := atVersions("attribute_exists(PK)", map[string]types.AttributeValue{
		":desc": avStr(desc), ":u": avTime(s.now()), ":one": avNum(1), ":zero": avNum(0),
	}, versions)
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(appTestPK(account, id), skAppTest),
		UpdateExpression:          aws.String("SET #desc = :desc, #u = :u, #v = if_not_exists(#v, :zero) + :one"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#desc": "description", "#u": "updated", "#v": "version"},
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if ddb.IsConditionFailed(err) && len(versions) > 0 {
		return domain.AppTest{}, domain.ErrChanged
	}
	if ddb.IsConditionFailed(err) {
		return domain.AppTest{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.AppTest{}, wrap("update application test", err)
	}
	var t domain.AppTest
	if err := attributevalue.UnmarshalMap(res.Attributes, &t); err != nil {
		return domain.AppTest{}, fmt.Errorf("update application test: unmarshal: %w", err)
	}
	return t, nil
}

// DeleteAppTest deletes a test and returns it as it was; its blobs are
// deleted next (DeleteAppTestBlobs). A missing test is domain.ErrNotFound.
// A transaction returns no old item, so the test is read first and the
// delete is conditional on the version read (the blobs returned are the
// ones deleted); the delete and the account's usage count change in one
// transaction. A test changed meanwhile is read again, unless pre is
// given: pre judges the test as read (a request's If-Match), and a change
// since is then domain.ErrStale.
func (s *Tests) DeleteAppTest(ctx context.Context, account, id string, pre ...func(domain.AppTest) error) (domain.AppTest, error) {
	var t domain.AppTest
	err := ReapplyIf(ctx, len(pre) > 0, func(ctx context.Context) error {
		var err error
		if t, err = s.GetAppTest(ctx, account, id); err != nil {
			return err
		}
		for _, check := range pre {
			if err := check(t); err != nil {
				return err
			}
		}
		del := &types.Delete{
			TableName:                 aws.String(s.table),
			Key:                       key(appTestPK(account, id), skAppTest),
			ConditionExpression:       aws.String("#v = :v"),
			ExpressionAttributeNames:  map[string]string{"#v": "version"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(int64(t.Version))},
		}
		if t.Version == 0 { // written before tests had versions
			del.ConditionExpression, del.ExpressionAttributeValues = aws.String("attribute_exists(PK) AND attribute_not_exists(#v)"), nil
		}
		err = s.transact(ctx, "delete application test", []types.TransactWriteItem{{Delete: del}, s.usageOp(account, domain.Quota{Kind: usageTests}, -1)})
		if txConditionFailedAt(err, 0) {
			return domain.ErrChanged
		}
		return err
	})
	if err != nil {
		return domain.AppTest{}, err
	}
	return t, nil
}

// StartAppTestRun records a new run of a test (state `state`, details
// `run`) unless the test has an active run: that is a *domain.Error
// naming it. The run's outbox marker m is written in the same
// transaction, so its message is owed from then on. A run stays active
// until activeUntil, or until UpdateAppTestRun ends it. A missing test is
// domain.ErrNotFound. A transaction returns no values: the caller reads the test
// back (GetAppTest) if it needs it.
//
// The run is counted in the account's runs of this calendar month and of
// this year (USAGE#application_tests#<2026-11> and #<2026>), in the same
// transaction, on the condition that each period its application_tests
// entitlements limit has room (domain.RunAllowance;
// domain.TestRunsReached otherwise): concurrent runs cannot overshoot.
func (s *Tests) StartAppTestRun(ctx context.Context, account, id, runID, state, run string, activeUntil time.Time, m *OutboxMarker) error {
	now := s.now()
	mput, err := s.outboxPut(m, testRunOutboxPK(runID))
	if err != nil {
		return err
	}
	es, err := s.repos.Entitlements.ListEntitlements(ctx, account)
	if err != nil {
		return err
	}
	periods := []string{domain.PeriodMonth, domain.PeriodYear}
	var counts []types.TransactWriteItem
	quotas := map[string]domain.Quota{}
	for _, p := range periods {
		q := domain.Quota{Kind: domain.ResourceApplicationTests + "#" + domain.RunPeriodKey(p, now)}
		q.Limit, q.Limited = domain.RunAllowance(es, p, now)
		quotas[p] = q
		counts = append(counts, s.usageOp(account, q, 1))
	}
	err = s.transact(ctx, "start application test run", append([]types.TransactWriteItem{{Update: &types.Update{
		TableName:                aws.String(s.table),
		Key:                      key(appTestPK(account, id), skAppTest),
		UpdateExpression:         aws.String("SET #id = :id, #st = :st, #run = :run, #until = :until, #v = if_not_exists(#v, :zero) + :one"),
		ConditionExpression:      aws.String("attribute_exists(PK) AND (attribute_not_exists(#until) OR #until < :now)"),
		ExpressionAttributeNames: map[string]string{"#id": "run_id", "#st": "run_state", "#run": "run", "#until": "run_active_until", "#v": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":id": avStr(runID), ":st": avStr(state), ":run": avStr(run),
			":until": avNum(activeUntil.UnixMilli()), ":now": avNum(now.UnixMilli()), ":zero": avNum(0), ":one": avNum(1),
		},
	}}, mput}, counts...))
	if txConditionFailedAt(err, 0) {
		cur, gerr := s.GetAppTest(ctx, account, id)
		if gerr != nil {
			return gerr
		}
		return domain.RunInProgress(id, cur.RunID, cur.RunState)
	}
	for i, p := range periods {
		if txConditionFailedAt(err, 2+i) {
			return domain.TestRunsReached(account, p, quotas[p].Limit)
		}
	}
	return err
}

// UpdateAppTestRun moves run runID of a test from state `from` to `to`
// with new details. The run stays active until activeUntil; a zero time
// ends it (a new run may start). ErrRunChanged when the test's run is
// another or not in state `from`, domain.ErrNotFound when the test is gone.
func (s *Tests) UpdateAppTestRun(ctx context.Context, account, id, runID, from, to, run string, activeUntil time.Time) error {
	until := int64(0)
	if !activeUntil.IsZero() {
		until = activeUntil.UnixMilli()
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(appTestPK(account, id), skAppTest),
		UpdateExpression:         aws.String("SET #st = :to, #run = :run, #until = :until, #v = if_not_exists(#v, :zero) + :one"),
		ConditionExpression:      aws.String("#id = :id AND #st = :from"),
		ExpressionAttributeNames: map[string]string{"#id": "run_id", "#st": "run_state", "#run": "run", "#until": "run_active_until", "#v": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":id": avStr(runID), ":from": avStr(from), ":to": avStr(to), ":run": avStr(run), ":until": avNum(until),
			":zero": avNum(0), ":one": avNum(1),
		},
	})
	if ddb.IsConditionFailed(err) {
		if _, gerr := s.GetAppTest(ctx, account, id); gerr != nil {
			return gerr
		}
		return ErrRunChanged
	}
	return wrap("update application test run", err)
}
