package server

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md, 7): the
// server reports the capacity DynamoDB would bill, which upstream did not.

import (
	"context"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/core"
	"github.com/truora/minidyn/types"
)

// Consumed is one table's (or global secondary index's) share of a
// request's capacity, in one partition: Key is the value of the table's
// (or index's) partition key attribute as text ("" when the request names
// none, as a Scan).
type Consumed struct {
	Table, Index, Key string
	Read              bool
	Units             float64
}

// ObserveCapacity makes the server pass every successful request's
// consumed capacity to fn, whether or not the request asked for it. Set it
// before serving; fn must be safe for concurrent use.
func (s *Server) ObserveCapacity(fn func([]Consumed)) {
	s.observe = fn
}

// SetPageReadLimit makes every Query and Scan page end once the items it
// has read reach n bytes (by the sizes capacity is billed on, before the
// filter), with a LastEvaluatedKey when more remain, as DynamoDB ends a
// page at 1 MB. 0 (the default) leaves pages unbounded but for Limit.
// Set it before serving.
func (s *Server) SetPageReadLimit(n int) {
	s.client.pageBytes = n
}

// ItemSize is an item's size by DynamoDB's rules (the one capacity is
// billed on).
func ItemSize(item map[string]*AttributeValue) int {
	return core.ItemSize(mapAttributeValueMapToTypes(item))
}

// capacity collects what one request consumes, through the operations it
// is made of (a batch's puts, a transaction's gets).
type capacity struct {
	cc []Consumed
	// unmetered is set when the request's capacity cannot be told: it is
	// then neither reported nor observed.
	unmetered bool
	// seen are the items a batch get has billed: a key asked twice is
	// billed once.
	seen map[string]bool
}

type capacityKey struct{}

func capacityFrom(ctx context.Context) *capacity {
	c, _ := ctx.Value(capacityKey{}).(*capacity)

	return c
}

func (c *capacity) add(cc ...Consumed) {
	if c != nil {
		c.cc = append(c.cc, cc...)
	}
}

// capacityContext returns the context a request is served with: one that
// collects its capacity when the request asks for it (mode) or the server
// observes every request.
func (s *Server) capacityContext(mode ddbtypes.ReturnConsumedCapacity, rec **capacity, asked *bool) context.Context {
	*asked = mode == ddbtypes.ReturnConsumedCapacityTotal || mode == ddbtypes.ReturnConsumedCapacityIndexes
	if !*asked && s.observe == nil {
		return context.Background()
	}

	*rec = &capacity{}

	return context.WithValue(context.Background(), capacityKey{}, *rec)
}

// consumedUnits is the wire form of a table's or index's units.
type consumedUnits struct {
	CapacityUnits      float64
	ReadCapacityUnits  *float64 `json:",omitempty"`
	WriteCapacityUnits *float64 `json:",omitempty"`
}

// ConsumedCapacity is the wire form of one table's consumed capacity.
type ConsumedCapacity struct {
	TableName              string
	CapacityUnits          float64
	ReadCapacityUnits      *float64                 `json:",omitempty"`
	WriteCapacityUnits     *float64                 `json:",omitempty"`
	Table                  *consumedUnits           `json:",omitempty"`
	GlobalSecondaryIndexes map[string]consumedUnits `json:",omitempty"`
}

// consumedByTable sums a request's capacity per table in the shape
// DynamoDB reports it, with the table's and each index's share when mode
// is INDEXES. A request's units are all reads or all writes.
func consumedByTable(cc []Consumed, mode ddbtypes.ReturnConsumedCapacity) []ConsumedCapacity {
	rw := func(read bool, u float64) (r, w *float64) {
		if read {
			return &u, nil
		}

		return nil, &u
	}

	list := []ConsumedCapacity{}
	at := map[string]int{}

	for _, c := range cc {
		i, ok := at[c.Table]
		if !ok {
			i = len(list)
			at[c.Table] = i
			list = append(list, ConsumedCapacity{TableName: c.Table})
		}

		e := &list[i]
		e.CapacityUnits += c.Units

		if mode != ddbtypes.ReturnConsumedCapacityIndexes {
			continue
		}

		if c.Index == "" {
			if e.Table == nil {
				e.Table = &consumedUnits{}
			}

			e.Table.CapacityUnits += c.Units
			e.Table.ReadCapacityUnits, e.Table.WriteCapacityUnits = rw(c.Read, e.Table.CapacityUnits)

			continue
		}

		if e.GlobalSecondaryIndexes == nil {
			e.GlobalSecondaryIndexes = map[string]consumedUnits{}
		}

		u := e.GlobalSecondaryIndexes[c.Index]
		u.CapacityUnits += c.Units
		u.ReadCapacityUnits, u.WriteCapacityUnits = rw(c.Read, u.CapacityUnits)
		e.GlobalSecondaryIndexes[c.Index] = u
	}

	read := len(cc) > 0 && cc[0].Read
	for i := range list {
		list[i].ReadCapacityUnits, list[i].WriteCapacityUnits = rw(read, list[i].CapacityUnits)
	}

	return list
}

// withConsumed sets the ConsumedCapacity of a response: one object for
// single-table operations (none unless list has exactly one), a list for
// batches and transactions.
func withConsumed(resp any, list []ConsumedCapacity) {
	var one *ConsumedCapacity
	if len(list) == 1 {
		one = &list[0]
	}

	switch o := resp.(type) {
	case *GetItemOutput:
		o.ConsumedCapacity = one
	case *QueryOutput:
		o.ConsumedCapacity = one
	case *ScanOutput:
		o.ConsumedCapacity = one
	case *PutItemOutput:
		o.ConsumedCapacity = one
	case *UpdateItemOutput:
		o.ConsumedCapacity = one
	case *DeleteItemOutput:
		o.ConsumedCapacity = one
	case *BatchGetItemOutput:
		o.ConsumedCapacity = list
	case *BatchWriteItemOutput:
		o.ConsumedCapacity = list
	case *TransactGetItemsOutput:
		o.ConsumedCapacity = list
	case *TransactWriteItemsOutput:
		o.ConsumedCapacity = list
	}
}

// transactFactor is what a transaction's writes and reads cost the table
// against single ones.
const transactFactor = 2

// billWrite runs write, one write of the item keyMap names in table, and
// adds what it costs to the request's capacity: the larger of the item
// before and after in 1 KB steps, times factor (2 in a transaction), and
// the global index entries it put, changed or removed (once, whatever the
// factor).
func billWrite(ctx context.Context, table *core.Table, keyMap map[string]*types.Item, factor float64, write func() error) error {
	rec := capacityFrom(ctx)
	if rec == nil {
		return write()
	}

	key, err := table.KeySchema.GetKey(table.AttributesDef, keyMap)
	if err != nil {
		// The write refuses the key itself.
		return write()
	}

	pk := core.KeyText(keyMap[table.KeySchema.HashKey])
	before := table.State(table.Data[key])

	if err := write(); err != nil {
		return err
	}

	after := table.State(table.Data[key])
	rec.add(Consumed{Table: table.Name, Key: pk, Units: factor * core.WriteUnits(max(before.Size, after.Size))})

	for _, w := range core.IndexWrites(before, after) {
		rec.add(Consumed{Table: table.Name, Index: w.Index, Key: w.Key, Units: w.Units})
	}

	return nil
}

// readSizeFor is where a search adds the sizes of the items it reads: n
// when the request's capacity is collected, nowhere otherwise.
func readSizeFor(rec *capacity, n *int) *int {
	if rec == nil {
		return nil
	}

	return n
}

// billRead adds reading stored (nil: no item) under key to the request's
// capacity.
func billRead(ctx context.Context, table *core.Table, key string, keyMap, stored map[string]*types.Item, consistent, transact bool) {
	rec := capacityFrom(ctx)
	if rec == nil {
		return
	}

	if rec.seen != nil {
		id := table.Name + "\x00" + key
		if rec.seen[id] {
			return
		}

		rec.seen[id] = true
	}

	size := core.ItemSize(stored)

	units := core.ReadUnits(size, consistent)
	if transact {
		units = transactFactor * core.ReadUnits(size, true)
	}

	rec.add(Consumed{Table: table.Name, Key: core.KeyText(keyMap[table.KeySchema.HashKey]), Read: true, Units: units})
}
