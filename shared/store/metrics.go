package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

// Metric chunks: one item per scope, tier, chunk of buckets and write
// shard, holding one number attribute per accumulator and bucket
// ("<offset>.<code>[.<key>]", see shared/metrics). Written only with ADD,
// so concurrent aggregators add up; read with BatchGetItem by key, the
// shards of a chunk summed by the reader. Shard 0 has no suffix (the key
// of every chunk written before shards existed). docs/metrics.md has the
// design.
func metricPK(scope, tier string, shard int) string {
	if shard > 0 {
		return "METRICS#" + scope + "#" + tier + "#" + strconv.Itoa(shard)
	}
	return "METRICS#" + scope + "#" + tier
}
func metricSK(start int64) string { return fmt.Sprintf("%012d", start) }

// Dedup items of the aggregator: one per ingest batch (a marker) and one per
// address-set event (its outbox item, written with the change).
func metricMarkerPK(id string) string { return "METRICMSG#" + id }
func metricEventPK(id string) string  { return "METRICEVENT#" + id }

const (
	skMetricMarker = "MSG"
	skMetricEvent  = "EVENT"
	// metricDedupKeep is how long markers and unsent events live: longer
	// than any message can stay in the queue (SQS keeps at most 14 days).
	metricDedupKeep = 15 * 24 * time.Hour
)

// MetricChunkKey names a chunk item.
type MetricChunkKey struct {
	Scope string
	Tier  string
	Start int64 // unix seconds
	// Shard is the write shard (0 for unsharded scopes): concurrent
	// aggregators spread one busy scope over several items and partitions.
	Shard int
}

// MetricAttr is an amount to add to one accumulator attribute.
type MetricAttr struct {
	Name  string
	Value int64
}

// MetricUpdate adds to the attributes of one chunk; Expires (unix seconds,
// 0 = never) becomes its TTL.
type MetricUpdate struct {
	Key     MetricChunkKey
	Attrs   []MetricAttr
	Expires int64
}

// MetricDedupKind says how a unit of work proves it was applied once.
type MetricDedupKind int

const (
	// MetricMarker: an ingest batch; a marker item is created at its first
	// step and counts the steps done.
	MetricMarker MetricDedupKind = iota
	// MetricOutbox: an address-set event; its outbox item counts the
	// steps done and is deleted by the last.
	MetricOutbox
)

// MetricDedup is one unit's dedup operation in a step: step Step (0-based)
// of Steps.
type MetricDedup struct {
	Kind  MetricDedupKind
	ID    string
	Step  int
	Steps int
}

// MetricStep is one transaction of the aggregator: the dedup operation of
// every unit it completes a step of, and the chunk updates of those steps.
// Every item appears once.
type MetricStep struct {
	Dedup   []MetricDedup
	Updates []MetricUpdate
}

// MetricDuplicateError says which dedup operations of a step found their
// unit already at (or past) that step; nothing of the step was applied.
type MetricDuplicateError struct{ Dedup []int }

func (e *MetricDuplicateError) Error() string {
	return fmt.Sprintf("metric step: %d units already applied", len(e.Dedup))
}

// ApplyMetricStep applies one step in one transaction: all of it or none.
func (s *Metrics) ApplyMetricStep(ctx context.Context, step MetricStep) error {
	ops := make([]types.TransactWriteItem, 0, len(step.Dedup)+len(step.Updates))
	ttl := s.now().Add(metricDedupKeep).Unix()
	for _, d := range step.Dedup {
		op, err := s.metricDedupOp(d, ttl)
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	for _, u := range step.Updates {
		ops = append(ops, types.TransactWriteItem{Update: s.metricUpdateOp(u)})
	}
	err := s.transact(ctx, "apply metric step", ops)
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) {
		var dup []int
		for _, r := range tx.Reasons {
			if r.Code == ddb.ReasonConditionalCheckFailed && r.Index < len(step.Dedup) {
				dup = append(dup, r.Index)
			}
		}
		if len(dup) > 0 {
			return &MetricDuplicateError{Dedup: dup}
		}
	}
	return err
}

func (s *Metrics) metricDedupOp(d MetricDedup, ttl int64) (types.TransactWriteItem, error) {
	next := avNum(int64(d.Step + 1))
	cur := avNum(int64(d.Step))
	switch {
	case d.Kind == MetricMarker && d.Step == 0:
		m, err := item(keyAttrs{PK: metricMarkerPK(d.ID), SK: skMetricMarker, Entity: "metric_marker"},
			struct {
				Step  int   `dynamodbav:"step"`
				Steps int   `dynamodbav:"steps"`
				TTL   int64 `dynamodbav:"ttl"`
			}{1, d.Steps, ttl})
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: m,
			ConditionExpression: aws.String("attribute_not_exists(PK)")}}, nil
	case d.Kind == MetricMarker:
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table), Key: key(metricMarkerPK(d.ID), skMetricMarker),
			UpdateExpression: aws.String("SET #s = :next"), ConditionExpression: aws.String("#s = :cur"),
			ExpressionAttributeNames:  map[string]string{"#s": "step"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":next": next, ":cur": cur}}}, nil
	}
	// Outbox: the item exists until the last step deletes it; "step" is
	// absent before the first step.
	cond := "#s = :cur"
	values := map[string]types.AttributeValue{":cur": cur}
	if d.Step == 0 {
		cond, values = "attribute_exists(PK) AND attribute_not_exists(#s)", map[string]types.AttributeValue{}
	}
	k := key(metricEventPK(d.ID), skMetricEvent)
	if d.Step == d.Steps-1 {
		if len(values) == 0 {
			values = nil
		}
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: k, ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: map[string]string{"#s": "step"}, ExpressionAttributeValues: values}}, nil
	}
	values[":next"] = next
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table), Key: k, UpdateExpression: aws.String("SET #s = :next"),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: map[string]string{"#s": "step"}, ExpressionAttributeValues: values}}, nil
}

// metricUpdateOp ADDs every attribute; equal amounts share one value
// placeholder, which keeps the expression (at most 4 KB) short.
func (s *Metrics) metricUpdateOp(u MetricUpdate) *types.Update {
	names := make(map[string]string, len(u.Attrs)+2)
	values := make(map[string]types.AttributeValue, 8)
	byValue := make(map[int64]string, 8)
	var b strings.Builder
	b.WriteString("SET #ent = :ent")
	names["#ent"] = "entity"
	values[":ent"] = avStr("metric_chunk")
	if u.Expires > 0 {
		b.WriteString(", #ttl = if_not_exists(#ttl, :ttl)")
		names["#ttl"] = AttrTTL
		values[":ttl"] = avNum(u.Expires)
	}
	for i, a := range u.Attrs {
		if i == 0 {
			b.WriteString(" ADD ")
		} else {
			b.WriteString(", ")
		}
		n := "#" + strconv.FormatInt(int64(i), 36)
		names[n] = a.Name
		v, ok := byValue[a.Value]
		if !ok {
			v = ":" + strconv.FormatInt(int64(len(byValue)), 36)
			byValue[a.Value] = v
			values[v] = avNum(a.Value)
		}
		b.WriteString(n + " " + v)
	}
	return &types.Update{TableName: aws.String(s.table), Key: key(metricPK(u.Key.Scope, u.Key.Tier, u.Key.Shard), metricSK(u.Key.Start)),
		UpdateExpression: aws.String(b.String()), ExpressionAttributeNames: names, ExpressionAttributeValues: values}
}

// MetricProgress reads how far a unit got: the steps done and, for a
// marker, how many it has. A missing marker has done nothing; a missing
// outbox item was finished (or never existed), so it reports done.
func (s *Metrics) MetricProgress(ctx context.Context, kind MetricDedupKind, id string) (step int, done bool, err error) {
	pk, sk := metricMarkerPK(id), skMetricMarker
	if kind == MetricOutbox {
		pk, sk = metricEventPK(id), skMetricEvent
	}
	var v struct {
		Step  int `dynamodbav:"step"`
		Steps int `dynamodbav:"steps"`
	}
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, false, wrap("metric progress", err)
	}
	if res.Item == nil {
		return 0, kind == MetricOutbox, nil
	}
	if err := attributevalue.UnmarshalMap(res.Item, &v); err != nil {
		return 0, false, fmt.Errorf("metric progress: %w", err)
	}
	if kind == MetricMarker {
		return v.Step, v.Step >= v.Steps, nil
	}
	return v.Step, false, nil
}

// MetricChunks reads chunks by key (BatchGetItem, 100 keys per call, in
// parallel). Chunks that were never written are absent from the result.
func (s *Metrics) MetricChunks(ctx context.Context, keys []MetricChunkKey) (map[MetricChunkKey]map[string]int64, error) {
	if len(keys) == 0 {
		return map[MetricChunkKey]map[string]int64{}, nil
	}
	byPK := make(map[string]MetricChunkKey, len(keys))
	req := make([]map[string]types.AttributeValue, 0, len(keys))
	for _, k := range keys {
		pk, sk := metricPK(k.Scope, k.Tier, k.Shard), metricSK(k.Start)
		byPK[pk+"|"+sk] = k
		req = append(req, key(pk, sk))
	}
	items, err := ddb.BatchGet(ctx, s.db, s.table, req)
	if err != nil {
		return nil, wrap("read metric chunks", err)
	}
	out := make(map[MetricChunkKey]map[string]int64, len(items))
	for _, it := range items {
		pk, _ := it[AttrPK].(*types.AttributeValueMemberS)
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		if pk == nil || sk == nil {
			continue
		}
		k, ok := byPK[pk.Value+"|"+sk.Value]
		if !ok {
			continue
		}
		vals := make(map[string]int64, len(it))
		for name, av := range it {
			n, ok := av.(*types.AttributeValueMemberN)
			if !ok || name == AttrTTL {
				continue
			}
			v, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("metric chunk %s %s: attribute %s: %w", pk.Value, sk.Value, name, err)
			}
			vals[name] = v
		}
		out[k] = vals
	}
	return out, nil
}

// MetricEvent is an address-set event waiting in its outbox until the
// aggregator has folded it. Its item is its outbox marker (Outbox: the
// producer's Queue and Due), held until the last fold step deletes it, so
// the sweep sends it again until it was folded, and the fold's dedup
// reads its progress from the same item.
type MetricEvent struct {
	ID      string        `dynamodbav:"id"`
	Body    string        `dynamodbav:"body"`
	Created time.Time     `dynamodbav:"created"`
	TTL     int64         `dynamodbav:"ttl"`
	Outbox  *OutboxMarker `dynamodbav:"-"`
}

func (s *Metrics) metricEventPut(e MetricEvent) (types.TransactWriteItem, error) {
	m := e.Outbox
	if m == nil || m.Queue == "" {
		return types.TransactWriteItem{}, fmt.Errorf("metric event %s: no outbox marker", e.ID)
	}
	e.TTL = e.Created.Add(metricDedupKeep).Unix()
	m.Body = e.Body
	m.place(metricEventPK(e.ID), skMetricEvent, true)
	it, err := item(m.keys("metric_event"), e)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	it["queue"] = avStr(m.Queue)
	it["held"] = &types.AttributeValueMemberBOOL{Value: true}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it,
		ConditionExpression: aws.String("attribute_not_exists(PK)")}}, nil
}
