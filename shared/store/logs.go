package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

// LogItem is one stored chunk of application log records (shared/logs
// decides what a chunk holds). Chunks are partitioned by application, log
// type and hour (PK LOGS#<app>#<type>#<yyyymmddhh>) and sorted by time (SK
// <time, ms, UTC>#<id>), so a time range reads only the partitions of its
// hours, each as one key-range Query. Data is opaque here: chunks are read
// whole and never updated.
type LogItem struct {
	App  string    `dynamodbav:"-"`
	Type string    `dynamodbav:"-"`
	Time time.Time `dynamodbav:"-"`
	ID   string    `dynamodbav:"-"`
	Data string    `dynamodbav:"rec"`
	// TTL is the record's expiry (epoch seconds): DynamoDB removes it.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

// logTimeLayout is fixed-width so that sort keys order as times.
const logTimeLayout = "2006-01-02T15:04:05.000Z"

// LogPartitionSpan is the time one log partition covers.
const LogPartitionSpan = time.Hour

func logPK(app, typ string, t time.Time) string {
	return "LOGS#" + app + "#" + typ + "#" + t.UTC().Format("2006010215")
}

func logSK(t time.Time, id string) string { return t.UTC().Format(logTimeLayout) + "#" + id }

// PutLogs writes log chunks (BatchWriteItem, 25 per call, in parallel).
// A chunk written twice with the same id is overwritten with itself, which
// makes redelivered ingest batches harmless.
func (s *Store) PutLogs(ctx context.Context, recs []LogItem) error {
	reqs := make([]types.WriteRequest, 0, len(recs))
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		k := keyAttrs{PK: logPK(r.App, r.Type, r.Time), SK: logSK(r.Time, r.ID), Entity: "log"}
		if seen[k.PK+"\x00"+k.SK] {
			continue // DynamoDB refuses the same key twice in one batch
		}
		seen[k.PK+"\x00"+k.SK] = true
		m, err := item(k, r)
		if err != nil {
			return err
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: m}})
	}
	return wrap("put logs", ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// LogRange is one partition's part of a log query.
type LogRange struct {
	App, Type string
	Hour      time.Time // any time within the partition's hour
	From, To  time.Time // from inclusive, to exclusive
	Desc      bool      // newest first
	// PageSize bounds the items one Query call returns.
	PageSize int
}

// ScanLogs reads the chunks of one partition whose time is within
// [From, To), in time order, page by page, handing each to yield until it
// returns false: a query stops reading as soon as it has what it needs.
func (s *Store) ScanLogs(ctx context.Context, r LogRange, yield func(LogItem) bool) error {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :a AND :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(logPK(r.App, r.Type, r.Hour)),
			":a":  avStr(r.From.UTC().Format(logTimeLayout)),
			// "<to>" sorts before every "<to>#<id>": to stays exclusive.
			":b": avStr(r.To.UTC().Format(logTimeLayout)),
		},
		ScanIndexForward: aws.Bool(!r.Desc),
	}
	if r.PageSize > 0 {
		in.Limit = aws.Int32(int32(r.PageSize))
	}
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return wrap("query logs", err)
		}
		for _, it := range out.Items {
			li, err := logItemFrom(r.App, r.Type, it)
			if err != nil {
				return err
			}
			if !yield(li) {
				return nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func logItemFrom(app, typ string, it map[string]types.AttributeValue) (LogItem, error) {
	sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
	data, _ := it["rec"].(*types.AttributeValueMemberS)
	if sk == nil || data == nil || len(sk.Value) < len(logTimeLayout)+2 {
		return LogItem{}, fmt.Errorf("query logs: malformed log item")
	}
	t, err := time.Parse(logTimeLayout, sk.Value[:len(logTimeLayout)])
	if err != nil {
		return LogItem{}, fmt.Errorf("query logs: sort key: %w", err)
	}
	return LogItem{App: app, Type: typ, Time: t, ID: sk.Value[len(logTimeLayout)+1:], Data: data.Value}, nil
}
