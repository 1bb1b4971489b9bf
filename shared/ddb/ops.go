package ddb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/retry"
)

// API is the subset of *dynamodb.Client the helpers in this package use.
type API interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// ErrUnprocessed is returned (wrapped, with the count) when BatchGet or
// BatchWrite still has unprocessed keys/items after its bounded retries.
var ErrUnprocessed = errors.New("ddb: unprocessed items remain after retries")

// MaxParallelBatches bounds how many BatchGetItem/BatchWriteItem calls one
// BatchGet/BatchWrite has in flight at once.
const MaxParallelBatches = 8

// Retry policy for UnprocessedKeys/UnprocessedItems. A round in which
// DynamoDB made no progress counts against unprocessedRetries and doubles the
// backoff (full jitter, capped); a round with progress (e.g. the 16 MB
// response cap) waits the base delay and does not count, so the number of
// rounds stays bounded by chunk size + unprocessedRetries.
var (
	unprocessedRetries     = 8
	unprocessedBaseBackoff = 25 * time.Millisecond
	unprocessedMaxBackoff  = time.Second
)

func backoff(ctx context.Context, failures int) error {
	if failures == 0 {
		return retry.Wait(ctx, unprocessedBaseBackoff)
	}
	return retry.Backoff(ctx, failures, unprocessedBaseBackoff, unprocessedMaxBackoff)
}

// TransactWrite sends one TransactWriteItems call after validating it
// client-side as DynamoDB would: at most MaxTransactItems actions
// (ErrTooManyItems), exactly one of Put/Update/Delete/ConditionCheck per
// action (ErrInvalidRequest), every Put item within MaxItemBytes
// (ErrItemTooLarge), every key valid (ErrInvalidKey), and the Put items and
// keys together within MaxTransactBytes (ErrTooManyItems). The size an Update
// produces cannot be known client-side and is not checked. Nothing is sent
// when validation fails. An empty transaction is a no-op returning nil.
//
// A TransactionCanceledException is returned as *TxCanceledError (errors.Is
// ErrConditionFailed when an action's condition failed); other errors are
// returned wrapped with the operation name, errors.As-compatible.
func TransactWrite(ctx context.Context, c API, in *dynamodb.TransactWriteItemsInput) error {
	if in == nil || len(in.TransactItems) == 0 {
		return nil
	}
	if n := len(in.TransactItems); n > MaxTransactItems {
		return fmt.Errorf("%w: %d transaction actions (max %d)", ErrTooManyItems, n, MaxTransactItems)
	}
	total := 0
	for i, it := range in.TransactItems {
		size, err := checkTransactItem(it)
		if err != nil {
			return fmt.Errorf("ddb: transaction action %d: %w", i, err)
		}
		total += size
	}
	if total > MaxTransactBytes {
		return fmt.Errorf("%w: transaction carries %d bytes (max %d)", ErrTooManyItems, total, MaxTransactBytes)
	}
	if _, err := c.TransactWriteItems(ctx, in); err != nil {
		if m := MapError(err); m != err {
			return m
		}
		return fmt.Errorf("ddb: TransactWriteItems: %w", err)
	}
	return nil
}

func checkTransactItem(it types.TransactWriteItem) (int, error) {
	set := 0
	var key map[string]types.AttributeValue
	if it.Put != nil {
		set++
	}
	if it.Update != nil {
		set++
		key = it.Update.Key
	}
	if it.Delete != nil {
		set++
		key = it.Delete.Key
	}
	if it.ConditionCheck != nil {
		set++
		key = it.ConditionCheck.Key
	}
	if set != 1 {
		return 0, fmt.Errorf("%w: exactly one of Put, Update, Delete, ConditionCheck must be set (%d are)", ErrInvalidRequest, set)
	}
	if it.Put != nil {
		if err := CheckItem(it.Put.Item); err != nil {
			return 0, err
		}
		return ItemSize(it.Put.Item), nil
	}
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	return ItemSize(key), nil
}

// BatchGet fetches any number of keys of one table with eventually
// consistent reads. Every key is validated first (ErrInvalidKey; nothing is
// sent then); duplicate keys are fetched once (DynamoDB refuses a batch with
// duplicates). Keys go out in chunks of MaxBatchGet, sent in parallel (at most
// MaxParallelBatches in flight); UnprocessedKeys are retried with bounded
// backoff (ErrUnprocessed when exhausted). The first error cancels the other
// chunks and is returned. Items that do not exist are absent from the result;
// result order is not guaranteed.
//
// projection, if given, lists top-level attribute names to return (sent as
// #placeholders, so reserved words are fine). Include the key attributes if
// the caller needs to match items to keys.
func BatchGet(ctx context.Context, c API, table string, keys []map[string]types.AttributeValue, projection ...string) ([]map[string]types.AttributeValue, error) {
	return batchGet(ctx, c, table, keys, false, projection)
}

// BatchGetConsistent is BatchGet with strongly consistent reads.
func BatchGetConsistent(ctx context.Context, c API, table string, keys []map[string]types.AttributeValue, projection ...string) ([]map[string]types.AttributeValue, error) {
	return batchGet(ctx, c, table, keys, true, projection)
}

func batchGet(ctx context.Context, c API, table string, keys []map[string]types.AttributeValue, consistent bool, projection []string) ([]map[string]types.AttributeValue, error) {
	unique := make([]map[string]types.AttributeValue, 0, len(keys))
	seen := make(map[string]struct{}, len(keys))
	for i, k := range keys {
		if err := CheckKey(k); err != nil {
			return nil, fmt.Errorf("ddb: BatchGet key %d: %w", i, err)
		}
		id := keyID(k)
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		unique = append(unique, k)
	}
	if len(unique) == 0 {
		return nil, nil
	}
	template := types.KeysAndAttributes{}
	if consistent {
		template.ConsistentRead = aws.Bool(true)
	}
	if len(projection) > 0 {
		names := make(map[string]string, len(projection))
		expr := make([]byte, 0, 8*len(projection))
		for i, p := range projection {
			ph := "#p" + strconv.Itoa(i)
			names[ph] = p
			if i > 0 {
				expr = append(expr, ", "...)
			}
			expr = append(expr, ph...)
		}
		template.ProjectionExpression = aws.String(string(expr))
		template.ExpressionAttributeNames = names
	}

	chunks := chunk(unique, MaxBatchGet)
	results := make([][]map[string]types.AttributeValue, len(chunks))
	err := runParallel(ctx, len(chunks), func(ctx context.Context, i int) error {
		pending := chunks[i]
		failures := 0
		for {
			req := template
			req.Keys = pending
			out, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{table: req},
			})
			if err != nil {
				return fmt.Errorf("ddb: BatchGetItem: %w", err)
			}
			results[i] = append(results[i], out.Responses[table]...)
			next := out.UnprocessedKeys[table].Keys
			if len(next) == 0 {
				return nil
			}
			if len(next) >= len(pending) {
				failures++
				if failures > unprocessedRetries {
					return fmt.Errorf("%w: %d keys of table %s", ErrUnprocessed, len(next), table)
				}
			} else {
				failures = 0
			}
			if err := backoff(ctx, failures); err != nil {
				return err
			}
			pending = next
		}
	})
	if err != nil {
		return nil, err
	}
	n := 0
	for _, r := range results {
		n += len(r)
	}
	items := make([]map[string]types.AttributeValue, 0, n)
	for _, r := range results {
		items = append(items, r...)
	}
	return items, nil
}

// BatchWrite applies puts and deletes to one table in chunks of
// MaxBatchWrite, sent in parallel (at most MaxParallelBatches in flight),
// retrying UnprocessedItems with bounded backoff (ErrUnprocessed when
// exhausted). Every request is validated before anything is sent: exactly one
// of PutRequest/DeleteRequest (ErrInvalidRequest), put items within
// MaxItemBytes (ErrItemTooLarge), delete keys valid (ErrInvalidKey).
// Identical delete requests are sent once.
//
// It is not atomic: on error some chunks may have been applied. Requests for
// the same item must not be mixed in one call (DynamoDB refuses duplicates in
// a batch and chunks run concurrently); only exact duplicate deletes are
// detected, since which put attributes form the key depends on the table.
func BatchWrite(ctx context.Context, c API, table string, reqs []types.WriteRequest) error {
	unique := make([]types.WriteRequest, 0, len(reqs))
	seen := make(map[string]struct{})
	for i, r := range reqs {
		switch {
		case (r.PutRequest == nil) == (r.DeleteRequest == nil):
			return fmt.Errorf("ddb: BatchWrite request %d: %w: exactly one of PutRequest, DeleteRequest must be set", i, ErrInvalidRequest)
		case r.PutRequest != nil:
			if err := CheckItem(r.PutRequest.Item); err != nil {
				return fmt.Errorf("ddb: BatchWrite request %d: %w", i, err)
			}
		default:
			if err := CheckKey(r.DeleteRequest.Key); err != nil {
				return fmt.Errorf("ddb: BatchWrite request %d: %w", i, err)
			}
			id := keyID(r.DeleteRequest.Key)
			if _, dup := seen[id]; dup {
				continue
			}
			seen[id] = struct{}{}
		}
		unique = append(unique, r)
	}
	if len(unique) == 0 {
		return nil
	}
	chunks := chunk(unique, MaxBatchWrite)
	return runParallel(ctx, len(chunks), func(ctx context.Context, i int) error {
		pending := chunks[i]
		failures := 0
		for {
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{table: pending},
			})
			if err != nil {
				return fmt.Errorf("ddb: BatchWriteItem: %w", err)
			}
			next := out.UnprocessedItems[table]
			if len(next) == 0 {
				return nil
			}
			if len(next) >= len(pending) {
				failures++
				if failures > unprocessedRetries {
					return fmt.Errorf("%w: %d write requests for table %s", ErrUnprocessed, len(next), table)
				}
			} else {
				failures = 0
			}
			if err := backoff(ctx, failures); err != nil {
				return err
			}
			pending = next
		}
	})
}

// QueryAll runs the query and follows LastEvaluatedKey until the result set
// is exhausted or max items have been collected (max <= 0: no limit); the
// result is truncated to max. The caller's input is not modified.
//
// When max > 0 and the input sets neither Limit nor a FilterExpression, each
// page's Limit is set to the number of items still wanted, so no more items
// are read (and paid for) than returned. A caller-set Limit is kept as the
// page size. With Select=COUNT no items are returned.
func QueryAll(ctx context.Context, c API, in *dynamodb.QueryInput, max int) ([]map[string]types.AttributeValue, error) {
	q := *in
	setLimit := max > 0 && in.Limit == nil && in.FilterExpression == nil
	var items []map[string]types.AttributeValue
	prev := ""
	for {
		if setLimit {
			q.Limit = aws.Int32(int32(min(max-len(items), 1<<30)))
		}
		out, err := c.Query(ctx, &q)
		if err != nil {
			return nil, fmt.Errorf("ddb: Query: %w", err)
		}
		items = append(items, out.Items...)
		if max > 0 && len(items) >= max {
			return items[:max:max], nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		id := keyID(out.LastEvaluatedKey)
		if id == prev {
			return nil, fmt.Errorf("ddb: Query: LastEvaluatedKey did not advance (%s)", id)
		}
		prev = id
		q.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func chunk[T any](s []T, size int) [][]T {
	out := make([][]T, 0, (len(s)+size-1)/size)
	for len(s) > size {
		out = append(out, s[:size:size])
		s = s[size:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

// runParallel runs fn(ctx, 0..n-1) with at most MaxParallelBatches at once
// and returns the first error, canceling the context of the others; once
// one failed (or ctx ended), no further call starts.
func runParallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(MaxParallelBatches)
	started := 0
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
		started++
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if started < n {
		// No call failed, so the caller's context ended.
		return ctx.Err()
	}
	return nil
}
