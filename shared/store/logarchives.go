package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/domain"
)

// LogArchiveChunk is one part of an archive's file.
type logArchiveChunk struct {
	Data []byte `dynamodbav:"data"`
}

// Bounds of an archive: its chunks are written with the header in one
// transaction (all or nothing), within DynamoDB's 4 MB per transaction.
const (
	LogArchiveChunkBytes = 350 << 10
	MaxLogArchiveBytes   = 3<<20 - 64<<10
)

func logArchivesPK(account string) string { return "LOGARCHIVES#" + account }

// LogArchiveSK is the header's sort key: the archives of one application
// and type sort together, by range.
func LogArchiveSK(app, typ string, from, to time.Time) string {
	return app + "#" + typ + "#" + from.UTC().Format(timeLayout) + "#" + to.UTC().Format(timeLayout)
}

func logArchiveBlobPK(account, blob string) string { return "LOGARCHIVE#" + account + "#" + blob }
func logArchiveChunkSK(n int) string               { return fmt.Sprintf("CHUNK#%04d", n) }

// maxLogArchiveChunks is the most chunks an archive has.
const maxLogArchiveChunks = (MaxLogArchiveBytes + LogArchiveChunkBytes - 1) / LogArchiveChunkBytes

// putArchiveAttempts bounds the retries when another preparation of the
// same range replaces the archive between the read and the write.
const putArchiveAttempts = 4

// PutLogArchive writes an archive: its header (replacing one of the same
// application, type and range) and its file's chunks, in one transaction
// conditional on the application still being the account's. The replaced
// archive's chunks are deleted in the same transaction (at most
// maxLogArchiveChunks keys, so it stays within DynamoDB's 100 actions),
// conditionally on the header being still the one read: nothing is left
// for its TTL, and a concurrent replacement makes this one read again.
func (s *Logs) PutLogArchive(ctx context.Context, a domain.LogArchive, data []byte) error {
	if len(data) > MaxLogArchiveBytes {
		return fmt.Errorf("log archive of %d bytes: at most %d", len(data), MaxLogArchiveBytes)
	}
	pk, sk := logArchivesPK(a.Account), LogArchiveSK(a.App, a.Type, a.From, a.To)
	hdr, err := item(keyAttrs{PK: pk, SK: sk, Entity: "log_archive"}, a)
	if err != nil {
		return err
	}
	chunks := make([]types.TransactWriteItem, 0, a.Chunks)
	for n := 0; n < a.Chunks; n++ {
		part := data[n*LogArchiveChunkBytes : min(len(data), (n+1)*LogArchiveChunkBytes)]
		it, err := item(keyAttrs{PK: logArchiveBlobPK(a.Account, a.Blob), SK: logArchiveChunkSK(n), Entity: "log_archive_chunk"}, logArchiveChunk{Data: part})
		if err != nil {
			return err
		}
		it[AttrTTL] = avNum(a.Expires)
		chunks = append(chunks, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it}})
	}
	for attempt := 1; ; attempt++ {
		var old domain.LogArchive
		err := s.getItem(ctx, "get log archive", pk, sk, &old)
		replaces := err == nil
		if err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
		put := &types.Put{TableName: aws.String(s.table), Item: hdr, ConditionExpression: aws.String("attribute_not_exists(PK)")}
		if replaces {
			put.ConditionExpression = aws.String("#blob = :old")
			put.ExpressionAttributeNames = map[string]string{"#blob": "blob"}
			put.ExpressionAttributeValues = map[string]types.AttributeValue{":old": avStr(old.Blob)}
		}
		items := append([]types.TransactWriteItem{s.repos.Applications.appInAccount(a.Account, a.App), {Put: put}}, chunks...)
		if replaces && old.Blob != a.Blob {
			for n := 0; n < min(old.Chunks, maxLogArchiveChunks); n++ {
				items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(logArchiveBlobPK(a.Account, old.Blob), logArchiveChunkSK(n))}})
			}
		}
		err = s.transact(ctx, "put log archive", items)
		switch {
		case txConditionFailedAt(err, 0):
			return domain.ErrNotFound
		case txConditionFailedAt(err, 1) && attempt < putArchiveAttempts:
			continue // replaced (or written) meanwhile: read it again
		case txConditionFailedAt(err, 1):
			return domain.ChangedMeanwhile("the archive of this range")
		}
		return err
	}
}

// MaxLogArchives bounds the archives an account keeps (checked when one
// is prepared), so that listing them is one bounded Query.
const MaxLogArchives = 100

// ListLogArchives returns the account's archives that have not expired at
// now, by application, type and range (at most MaxLogArchives+1 read).
// prefix narrows them to one application ("<app>#") or one application
// and type ("<app>#<type>#").
func (s *Logs) ListLogArchives(ctx context.Context, account, prefix string, now time.Time) ([]domain.LogArchive, error) {
	items, err := s.query(ctx, "list log archives", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(logArchivesPK(account)), ":p": avStr(prefix)},
	}, MaxLogArchives+1)
	if err != nil {
		return nil, err
	}
	all, err := unmarshalAll[domain.LogArchive](items)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, a := range all {
		if a.Expires > now.Unix() {
			out = append(out, a)
		}
	}
	return out, nil
}

// GetLogArchive reads one archive's header; domain.ErrNotFound when there is
// none (or it has expired at now).
func (s *Logs) GetLogArchive(ctx context.Context, account, app, typ string, from, to, now time.Time) (domain.LogArchive, error) {
	var a domain.LogArchive
	if err := s.getItem(ctx, "get log archive", logArchivesPK(account), LogArchiveSK(app, typ, from, to), &a); err != nil {
		return a, err
	}
	if a.Expires <= now.Unix() {
		return domain.LogArchive{}, domain.ErrNotFound
	}
	return a, nil
}

// LogArchiveData reads an archive's file: one Query of its chunks.
// A file whose chunks are not all there (expired under the reader) is
// domain.ErrNotFound, never a part.
func (s *Logs) LogArchiveData(ctx context.Context, a domain.LogArchive) ([]byte, error) {
	items, err := s.query(ctx, "read log archive", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(logArchiveBlobPK(a.Account, a.Blob))},
		ConsistentRead:            aws.Bool(true),
	}, a.Chunks)
	if err != nil {
		return nil, err
	}
	if len(items) != a.Chunks {
		return nil, domain.ErrNotFound
	}
	out := make([]byte, 0, a.Size)
	for _, it := range items {
		var c logArchiveChunk
		if err := attributevalue.UnmarshalMap(it, &c); err != nil {
			return nil, fmt.Errorf("read log archive: %w", err)
		}
		out = append(out, c.Data...)
	}
	if len(out) != a.Size {
		return nil, domain.ErrNotFound
	}
	return out, nil
}

// DeleteLogArchive deletes an archive, header and chunks, in one
// transaction: it is served whole or not at all.
//
// pinned (a request's If-Match) deletes a only as read, the file it
// names (an archive prepared again for the same range has another):
// anything else, missing included, is domain.ErrChanged.
func (s *Logs) DeleteLogArchive(ctx context.Context, a domain.LogArchive, pinned bool) error {
	meta := &types.Delete{TableName: aws.String(s.table), Key: key(logArchivesPK(a.Account), LogArchiveSK(a.App, a.Type, a.From, a.To))}
	if pinned {
		meta.ConditionExpression = aws.String("#b = :b")
		meta.ExpressionAttributeNames = map[string]string{"#b": "blob"}
		meta.ExpressionAttributeValues = map[string]types.AttributeValue{":b": avStr(a.Blob)}
	}
	items := []types.TransactWriteItem{{Delete: meta}}
	for n := 0; n < a.Chunks; n++ {
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(logArchiveBlobPK(a.Account, a.Blob), logArchiveChunkSK(n))}})
	}
	err := s.transact(ctx, "delete log archive", items)
	if pinned && txConditionFailedAt(err, 0) {
		return domain.ErrChanged
	}
	return err
}
