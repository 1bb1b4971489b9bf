package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/clock"
	"cads/shared/ddb"
	"cads/shared/domain"
)

// Table is the one DynamoDB table every repository reads and writes:
// what they share (keys, transactions, pages, retries, the consistency
// rules). It is safe for concurrent use.
type Table struct {
	// repos is the table's repositories, for a write of one family that
	// reads or changes another's items in the same transaction.
	repos *Store
	db    tableAPI
	table string
	now   func() time.Time
	// root is the installation's root account id once read: it never
	// changes after the bootstrap, and user key creates need it for their
	// quota (keyquota.go).
	root atomic.Pointer[string]
}

// Option configures a Store.
type Option func(*storeOptions)

type storeOptions struct{ clock clock.Clock }

// WithClock makes c the store's clock (clock.System by default): the time
// it stamps on what it writes and that Now returns.
func WithClock(c clock.Clock) Option {
	return func(o *storeOptions) {
		if c != nil {
			o.clock = c
		}
	}
}

// New returns a Store over the named table.
func New(db *dynamodb.Client, table string, opts ...Option) *Store {
	o := storeOptions{clock: clock.System}
	for _, opt := range opts {
		opt(&o)
	}
	c := o.clock
	now := func() time.Time { return c().UTC().Truncate(time.Millisecond) }
	t := &Table{table: table, now: now}
	t.db = journaled{Client: db, table: table, now: now, root: t.rootAccount}
	s := &Store{Table: t,
		Accounts: &Accounts{t}, Entitlements: &Entitlements{t}, Roles: &Roles{t},
		Principals: &Principals{t}, Invitations: &Invitations{t}, Applications: &Applications{t},
		Tasks: &Tasks{t}, AddressSets: &AddressSets{t}, Metrics: &Metrics{t}, Logs: &Logs{t},
		Tests: &Tests{t}, Audit: &Audit{t}, Installation: &Installation{t}}
	t.repos = s
	return s
}

// Now is the store's clock (UTC, millisecond precision, as stored).
func (s *Table) Now() time.Time { return s.now() }

// Name is the table's name.
func (s *Table) Name() string { return s.table }

type keyAttrs struct {
	PK     string `dynamodbav:"PK"`
	SK     string `dynamodbav:"SK"`
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
	GSI2PK string `dynamodbav:"GSI2PK,omitempty"`
	GSI2SK string `dynamodbav:"GSI2SK,omitempty"`
	GSI3PK string `dynamodbav:"GSI3PK,omitempty"`
	GSI3SK string `dynamodbav:"GSI3SK,omitempty"`
	Entity string `dynamodbav:"entity"`
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: avStr(pk),
		AttrSK: avStr(sk),
	}
}

// item marshals v and adds the key attributes; it refuses items over
// DynamoDB's 400 KB limit, which local servers do not enforce.
func item(k keyAttrs, v any) (map[string]types.AttributeValue, error) {
	m, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", k.Entity, err)
	}
	km, err := attributevalue.MarshalMap(k)
	if err != nil {
		return nil, fmt.Errorf("marshal %s key: %w", k.Entity, err)
	}
	for a, val := range km {
		m[a] = val
	}
	dropEmpty(m)
	if err := ddb.CheckItem(m); err != nil {
		return nil, tooLarge(k.Entity, ddb.ItemSize(m), fmt.Errorf("%s %s/%s: %w", k.Entity, k.PK, k.SK, err))
	}
	return m, nil
}

// tooLarge is the 400 of a write whose item (of entity) would not fit.
func tooLarge(entity string, size int, err error) *domain.Error {
	return domain.ItemTooLarge(strings.ReplaceAll(entity, "_", " "), size, ddb.MaxItemBytes, err)
}

// wrap adds context to a DynamoDB error and gives the client an answer it
// can act on where there is one: contention that outlasted the client's
// retries (ddb.IsContention) or the deadline is a 429, an item over the
// size limit a 400.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := domain.AsError(err); ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	// A call the request's deadline cut short: the service was too busy
	// to answer in time (contention, a starved host), which a later
	// request may not be.
	if ddb.IsContention(err) || errors.Is(err, context.DeadlineExceeded) {
		return domain.Throttle(fmt.Errorf("%s: %w", op, err))
	}
	if ddb.IsItemTooLarge(err) {
		return tooLarge("resource", 0, fmt.Errorf("%s: %w", op, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (s *Table) put(k keyAttrs, v any) (types.TransactWriteItem, error) {
	m, err := item(k, v)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String(s.table),
		Item:                m,
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	}}, nil
}

// getItem reads one item, strongly consistent: every read of the base
// table is (docs/data-model.md, "Consistency"), so an answer, negative or
// not, and a write based on it never miss a write that was acknowledged
// before it. It costs twice an eventually consistent read's capacity.
func (s *Table) getItem(ctx context.Context, op, pk, sk string, out any) error {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return wrap(op, err)
	}
	if res.Item == nil {
		return domain.ErrNotFound
	}
	if err := attributevalue.UnmarshalMap(res.Item, out); err != nil {
		return fmt.Errorf("%s: unmarshal: %w", op, err)
	}
	return nil
}

func (s *Table) transact(ctx context.Context, op string, items []types.TransactWriteItem) error {
	return wrap(op, ddb.TransactWrite(ctx, s.db, &dynamodb.TransactWriteItemsInput{TransactItems: items}))
}

// query reads every page of in (up to max items), strongly consistent on
// the base table; a query of an index cannot be, so its caller must say in
// docs/data-model.md why a stale answer is safe.
func (s *Table) query(ctx context.Context, op string, in *dynamodb.QueryInput, max int) ([]map[string]types.AttributeValue, error) {
	in.TableName = aws.String(s.table)
	if in.IndexName == nil {
		in.ConsistentRead = aws.Bool(true)
	}
	items, err := ddb.QueryAll(ctx, s.db, in, max)
	return items, wrap(op, err)
}

func unmarshalAll[T any](items []map[string]types.AttributeValue) ([]T, error) {
	out := make([]T, 0, len(items))
	for _, it := range items {
		var v T
		if err := attributevalue.UnmarshalMap(it, &v); err != nil {
			return nil, fmt.Errorf("unmarshal: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// dropEmpty removes empty lists, maps and sets: DynamoDB refuses empty sets,
// and a missing attribute unmarshals to the same nil slice or map anyway.
func dropEmpty(m map[string]types.AttributeValue) {
	for a, v := range m {
		empty := false
		switch v := v.(type) {
		case *types.AttributeValueMemberL:
			empty = len(v.Value) == 0
		case *types.AttributeValueMemberM:
			empty = len(v.Value) == 0
		case *types.AttributeValueMemberSS:
			empty = len(v.Value) == 0
		case *types.AttributeValueMemberNS:
			empty = len(v.Value) == 0
		case *types.AttributeValueMemberBS:
			empty = len(v.Value) == 0
		}
		if empty {
			delete(m, a)
		}
	}
}

// maxFanOut bounds the queries one call has in flight when it fans out over
// a list whose length the caller does not bound (accounts, roles, groups,
// principals).
const maxFanOut = 16
