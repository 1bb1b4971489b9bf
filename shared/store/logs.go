package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// logTimeLayout is fixed-width so that sort keys order as times.
const logTimeLayout = "2006-01-02T15:04:05.000Z"

// LogPartitionSpan is the time one log partition covers.
const LogPartitionSpan = time.Hour

func logPK(app, typ string, t time.Time) string {
	return "LOGS#" + app + "#" + typ + "#" + t.UTC().Format("2006010215")
}

func logSK(t time.Time, id string) string { return t.UTC().Format(logTimeLayout) + "#" + id }

// The log hour index: one item per application, log type and UTC day (PK
// LOGHOURS#<app>#<type>, SK <yyyymmdd>) whose number set `hours` holds the
// hours (0-23) of the day that received chunks, so a query reads only the
// partitions that hold something: a range of a month is one index Query
// (at most 32 items) plus a Query per non-empty hour, instead of a Query per
// hour. The set is only ever ADDed to, which is idempotent: a redelivered
// write leaves the item as it was.
func logHoursPK(app, typ string) string { return "LOGHOURS#" + app + "#" + typ }
func logHoursSK(t time.Time) string     { return t.UTC().Format("20060102") }

// logHoursSpan is one UTC day: times truncate to UTC midnights (the zero
// time is one), as partition hours truncate to whole UTC hours.
const logHoursSpan = 24 * time.Hour

// LogDay is the entry of the hour index for one application, log type and
// UTC day: the hours to add and the item's TTL (epoch seconds).
type LogDay struct {
	App, Type string
	Day       time.Time // any time within the UTC day
	Hours     []int     // 0-23
	TTL       int64
}

// PutLogs writes log chunks (BatchWriteItem, 25 per call, in parallel) and,
// in the same parallel round, adds their hours to the hour index (one
// UpdateItem per entry of index, which must cover the hour of every chunk).
// It fails if any part fails: the caller retries the whole write. A chunk
// written twice with the same id is overwritten with itself and an hour
// added twice is there once, which makes redelivered ingest batches
// harmless. The index may be written while a chunk write fails: an hour
// indexed without chunks costs a later query one wasted (empty) Query, and
// the retry writes the chunks it names.
func (s *Logs) PutLogs(ctx context.Context, recs []domain.LogItem, index []LogDay) error {
	reqs := make([]types.WriteRequest, 0, len(recs))
	seen := make(map[string]bool, len(recs))
	indexed := make(map[string]bool, len(index)*2)
	updates := make([]*dynamodb.UpdateItemInput, 0, len(index))
	for _, d := range index {
		if len(d.Hours) == 0 {
			continue // an empty set is not a DynamoDB value
		}
		day := d.Day.UTC().Truncate(logHoursSpan)
		ns := make([]string, 0, len(d.Hours))
		for _, h := range d.Hours {
			if h < 0 || h > 23 {
				return fmt.Errorf("put logs: hour %d of the index is not 0-23", h)
			}
			ns = append(ns, strconv.Itoa(h))
			indexed[logPK(d.App, d.Type, day.Add(time.Duration(h)*time.Hour))] = true
		}
		slices.Sort(ns)
		ns = slices.Compact(ns) // a set holds no duplicates
		in := &dynamodb.UpdateItemInput{
			TableName:                aws.String(s.table),
			Key:                      key(logHoursPK(d.App, d.Type), logHoursSK(day)),
			UpdateExpression:         aws.String("ADD #h :h SET #e = :e"),
			ExpressionAttributeNames: map[string]string{"#h": "hours", "#e": "entity"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":h": &types.AttributeValueMemberNS{Value: ns},
				":e": avStr("log_hours"),
			},
		}
		if d.TTL > 0 {
			// The same value from every write of the day (the caller's
			// rule: the day's end plus the retention), so it outlives
			// every chunk of the day and a redelivery changes nothing.
			*in.UpdateExpression += ", #t = :t"
			in.ExpressionAttributeNames["#t"] = AttrTTL
			in.ExpressionAttributeValues[":t"] = avNum(d.TTL)
		}
		updates = append(updates, in)
	}
	for _, r := range recs {
		k := keyAttrs{PK: logPK(r.App, r.Type, r.Time), SK: logSK(r.Time, r.ID), Entity: "log"}
		if !indexed[k.PK] {
			return fmt.Errorf("put logs: the chunk of %s is not in the hour index", k.PK)
		}
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
	if len(reqs) == 0 && len(updates) == 0 {
		return nil
	}

	// One round: the chunk batches and the index updates all start at once
	// (the updates at most ddb.MaxParallelBatches at a time, beside the
	// batches' own bound); the first error cancels the rest.
	g, gctx := errgroup.WithContext(ctx)
	if len(reqs) > 0 {
		// The batches' goroutine holds one slot throughout.
		g.SetLimit(ddb.MaxParallelBatches + 1)
		g.Go(func() error { return wrap("put logs", ddb.BatchWrite(gctx, s.db, s.table, reqs)) })
	} else {
		g.SetLimit(ddb.MaxParallelBatches)
	}
	started := 0
	for _, in := range updates {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			_, err := s.db.UpdateItem(gctx, in)
			return wrap("put log hours", err)
		})
		started++
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if started < len(updates) {
		return ctx.Err()
	}
	return nil
}

// LogHours reads the hour index: the starts of the hours of [from, to)
// whose partitions received chunks, ascending. One Query over the days of
// the range (32 items for a month), strongly consistent: a write that
// completed before the query must not have its hour skipped. An eventually
// consistent read could return the day's item without an hour added a
// moment ago and hide that hour whole, for every later page too; the
// items are small, so consistency costs 1 RCU instead of 0.5 per query.
// (The partitions themselves are still read eventually consistently, as
// before the index: a chunk written within the last second or so can be
// missing from its partition's Query.)
func (s *Logs) LogHours(ctx context.Context, app, typ string, from, to time.Time) ([]time.Time, error) {
	first := from.UTC().Truncate(LogPartitionSpan)
	last := to.UTC().Add(-time.Nanosecond).Truncate(LogPartitionSpan)
	if last.Before(first) {
		return nil, nil
	}
	items, err := s.query(ctx, "query log hours", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :a AND :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(logHoursPK(app, typ)),
			":a":  avStr(logHoursSK(first)),
			":b":  avStr(logHoursSK(last)),
		},
		ConsistentRead: aws.Bool(true),
	}, 0)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for _, it := range items {
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		hours, _ := it["hours"].(*types.AttributeValueMemberNS)
		if sk == nil || hours == nil {
			continue
		}
		day, err := time.Parse("20060102", sk.Value)
		if err != nil {
			return nil, fmt.Errorf("query log hours: sort key: %w", err)
		}
		for _, v := range hours.Value {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 23 {
				return nil, fmt.Errorf("query log hours: %s: hour %q", sk.Value, v)
			}
			if h := day.Add(time.Duration(n) * time.Hour); !h.Before(first) && !h.After(last) {
				out = append(out, h)
			}
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out, nil
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
func (s *Logs) ScanLogs(ctx context.Context, r LogRange, yield func(domain.LogItem) bool) error {
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
		ConsistentRead:   aws.Bool(true), // a POSTed record is in the next query
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

func logItemFrom(app, typ string, it map[string]types.AttributeValue) (domain.LogItem, error) {
	sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
	data, _ := it["rec"].(*types.AttributeValueMemberS)
	if sk == nil || data == nil || len(sk.Value) < len(logTimeLayout)+2 {
		return domain.LogItem{}, fmt.Errorf("query logs: malformed log item")
	}
	t, err := time.Parse(logTimeLayout, sk.Value[:len(logTimeLayout)])
	if err != nil {
		return domain.LogItem{}, fmt.Errorf("query logs: sort key: %w", err)
	}
	return domain.LogItem{App: app, Type: typ, Time: t, ID: sk.Value[len(logTimeLayout)+1:], Data: data.Value}, nil
}
