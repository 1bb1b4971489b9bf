package localaws

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// Realism makes the embedded DynamoDB behave as DynamoDB does where
// applications get it wrong: late visibility, transaction conflicts,
// throttling, partly unprocessed batches, 1 MB pages. Every random choice
// comes from one source seeded with Seed, so a sequential run replays
// exactly; concurrent requests draw in the order they arrive.
// docs/local-platform.md, "Realistic mode", says how it works.
type Realism struct {
	Seed int64
	// ReadLag bounds the random delay before a write is seen by base-table
	// reads without ConsistentRead (GetItem, BatchGetItem, Query, Scan);
	// 0: at once.
	ReadLag time.Duration
	// IndexLag is the same for every Query and Scan of a global secondary
	// index.
	IndexLag time.Duration
	// TxHold bounds the random time a TransactWriteItems holds its items
	// before it is applied: other transactions on them are cancelled with
	// TransactionConflict meanwhile, single-item writes refused with
	// TransactionConflictException.
	TxHold time.Duration
	// ConflictRate is the fraction of TransactWriteItems cancelled with
	// TransactionConflict on one of their items, whatever else runs.
	ConflictRate float64
	// ThrottleRate is the fraction of data-plane requests refused with
	// ProvisionedThroughputExceededException.
	ThrottleRate float64
	// UnprocessedRate is the fraction of BatchGetItem and BatchWriteItem
	// requests of two or more keys that leave some (never all) unprocessed.
	UnprocessedRate float64
	// PageBytes is where a Query or Scan page ends (read size before the
	// filter); 0: DynamoDB's 1 MB.
	PageBytes int
}

// Realistic is the preset: reads and indexes up to 1 s behind, 10 % of
// transactions cancelled, 30 % of batches partly unprocessed, 2 % of
// requests throttled, transactions holding their items up to 20 ms.
func Realistic(seed int64) Realism {
	return Realism{
		Seed:            seed,
		ReadLag:         time.Second,
		IndexLag:        time.Second,
		TxHold:          20 * time.Millisecond,
		ConflictRate:    0.10,
		ThrottleRate:    0.02,
		UnprocessedRate: 0.30,
	}
}

func (r Realism) String() string {
	return fmt.Sprintf("seed=%d read-lag=%s index-lag=%s tx-hold=%s conflicts=%g throttles=%g unprocessed=%g page-bytes=%d",
		r.Seed, r.ReadLag, r.IndexLag, r.TxHold, r.ConflictRate, r.ThrottleRate, r.UnprocessedRate, r.pageBytes())
}

func (r Realism) pageBytes() int {
	if r.PageBytes > 0 {
		return r.PageBytes
	}
	return 1 << 20
}

// StartRealisticDynamo is StartDynamoServer in realistic mode (Realism).
// parts meters the primary's requests and the replicas' reads, as
// StartDynamoMetered does.
func StartRealisticDynamo(ctx context.Context, addr string, parts *PartitionMeter, cfg Realism) (*Dynamo, error) {
	rl := newRealistic(cfg, parts)
	endpoint, stop, err := serve(ctx, "dynamodb", addr, rl, nil)
	if err != nil {
		rl.close()
		return nil, err
	}
	return &Dynamo{
		Endpoint: endpoint,
		Stop: func(ctx context.Context) error {
			err := stop(ctx)
			rl.close()
			return err
		},
		srv:     rl.primary,
		realism: rl,
	}, nil
}

// realistic is the layer in front of the primary minidyn server. The
// primary takes every write and every consistent read. A replica (one per
// distinct lag) receives, after a random delay, the images of the items
// each successful write left on the primary; eventual reads and index
// reads go to it.
//
// Images rather than requests are replayed: a write's effect is then
// copied, not re-evaluated, so the replica converges to the primary
// whatever the write's expressions and conditions were (the server refuses
// an expression left with unused values, which stripping a condition
// would leave, and a transaction's condition checks would need dropping).
type realistic struct {
	cfg     Realism
	primary *server.Server
	front   *serialised // the primary as served
	// base and index serve eventual base-table reads and index reads (nil:
	// the primary); they may be one replica.
	base, index *replica
	replicas    []*replica

	rmu sync.Mutex
	rng *rand.Rand

	// wmu orders writes: a write, the capture of its images and their
	// enqueueing happen under it, so each replica applies them in the
	// primary's commit order.
	wmu sync.Mutex

	hmu    sync.Mutex
	held   map[string]uint64 // item id → transaction holding it
	nextTx uint64

	// lsis are each table's local secondary indexes, which (unlike
	// global ones) can be read consistently.
	lmu  sync.Mutex
	lsis map[string][]string
}

func newRealistic(cfg Realism, parts *PartitionMeter) *realistic {
	newServer := func() *server.Server {
		s := server.NewServer()
		s.SetPageReadLimit(cfg.pageBytes())
		if parts != nil {
			s.ObserveCapacity(parts.add)
		}
		return s
	}
	rl := &realistic{
		cfg:     cfg,
		primary: newServer(),
		rng:     rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)),
		held:    map[string]uint64{},
		lsis:    map[string][]string{},
	}
	rl.front = &serialised{next: rl.primary}
	byLag := map[time.Duration]*replica{}
	for _, lag := range []time.Duration{cfg.ReadLag, cfg.IndexLag} {
		if lag <= 0 || byLag[lag] != nil {
			continue
		}
		rep := newReplica(lag, newServer())
		byLag[lag] = rep
		rl.replicas = append(rl.replicas, rep)
	}
	rl.base, rl.index = byLag[cfg.ReadLag], byLag[cfg.IndexLag]
	return rl
}

func (rl *realistic) close() {
	for _, rep := range rl.replicas {
		rep.close()
	}
}

// chance draws whether an event of probability p happens.
func (rl *realistic) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	rl.rmu.Lock()
	defer rl.rmu.Unlock()
	return rl.rng.Float64() < p
}

// upTo draws a duration in [0, d).
func (rl *realistic) upTo(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	rl.rmu.Lock()
	defer rl.rmu.Unlock()
	return time.Duration(rl.rng.Int64N(int64(d)))
}

// intN draws an int in [0, n).
func (rl *realistic) intN(n int) int {
	rl.rmu.Lock()
	defer rl.rmu.Unlock()
	return rl.rng.IntN(n)
}

// subset draws k distinct indexes of [0, n), 1 ≤ k < n.
func (rl *realistic) subset(n int) map[int]bool {
	rl.rmu.Lock()
	defer rl.rmu.Unlock()
	k := 1 + rl.rng.IntN(n-1)
	out := map[int]bool{}
	for _, i := range rl.rng.Perm(n)[:k] {
		out[i] = true
	}
	return out
}

var dataPlane = map[string]bool{
	"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"Query": true, "Scan": true, "BatchGetItem": true, "BatchWriteItem": true,
	"TransactGetItems": true, "TransactWriteItems": true,
}

func (rl *realistic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if dataPlane[op] && rl.chance(rl.cfg.ThrottleRate) {
		writeAWSError(w, "ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.")
		return
	}
	switch op {
	case "CreateTable", "UpdateTable", "DeleteTable":
		rl.tableOp(w, r, op, body)
	case "PutItem", "UpdateItem", "DeleteItem":
		rl.singleWrite(w, r, op, body)
	case "BatchWriteItem":
		rl.batchWrite(w, r, body)
	case "TransactWriteItems":
		rl.transactWrite(w, r, body)
	case "TransactGetItems":
		rl.transactGet(w, r, body)
	case "GetItem":
		var in struct{ ConsistentRead bool }
		_ = json.Unmarshal(body, &in)
		rl.read(w, r, body, rl.eventual(in.ConsistentRead, rl.base))
	case "Query", "Scan":
		rl.search(w, r, body)
	case "BatchGetItem":
		rl.batchGet(w, r, body)
	default:
		forward(rl.front, r, body).copyTo(w)
	}
}

// eventual is where a read goes: the primary when consistent or when rep
// is nil (no lag).
func (rl *realistic) eventual(consistent bool, rep *replica) http.Handler {
	if consistent || rep == nil {
		return rl.front
	}
	return rep.front
}

func (rl *realistic) read(w http.ResponseWriter, r *http.Request, body []byte, h http.Handler) {
	forward(h, r, body).copyTo(w)
}

func (rl *realistic) search(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		TableName, IndexName string
		ConsistentRead       bool
	}
	_ = json.Unmarshal(body, &in)
	if in.IndexName == "" || rl.isLSI(in.TableName, in.IndexName) {
		rl.read(w, r, body, rl.eventual(in.ConsistentRead, rl.base))
		return
	}
	if in.ConsistentRead {
		writeAWSError(w, "ValidationException", "Consistent reads are not supported on global secondary indexes")
		return
	}
	rl.read(w, r, body, rl.eventual(false, rl.index))
}

func (rl *realistic) isLSI(table, index string) bool {
	rl.lmu.Lock()
	defer rl.lmu.Unlock()
	return slices.Contains(rl.lsis[table], index)
}

// tableOp applies a table's creation, change or deletion to the primary
// and, once it succeeded there, to every replica.
func (rl *realistic) tableOp(w http.ResponseWriter, r *http.Request, op string, body []byte) {
	rl.wmu.Lock()
	defer rl.wmu.Unlock()
	res := forward(rl.front, r, body)
	if res.code == http.StatusOK {
		for _, rep := range rl.replicas {
			// Images of the table's items still queued must land before
			// the table changes (or goes).
			rep.drain()
			if rr := forward(rep.front, r, body); rr.code != http.StatusOK {
				slog.Warn("realistic DynamoDB: replica refused a table change", "op", op, "status", rr.code, "body", string(rr.body))
			}
		}
		if op == "DeleteTable" {
			var in struct{ TableName string }
			if json.Unmarshal(body, &in) == nil {
				rl.lmu.Lock()
				delete(rl.lsis, in.TableName)
				rl.lmu.Unlock()
			}
		}
		if op == "CreateTable" {
			var in struct {
				TableName             string
				LocalSecondaryIndexes []struct{ IndexName string }
			}
			if json.Unmarshal(body, &in) == nil {
				rl.lmu.Lock()
				for _, l := range in.LocalSecondaryIndexes {
					rl.lsis[in.TableName] = append(rl.lsis[in.TableName], l.IndexName)
				}
				rl.lmu.Unlock()
			}
		}
	}
	res.copyTo(w)
}

// itemRef names one item a request writes or reads: its table and its key
// (or whole item, whose key attributes name it).
type itemRef struct {
	table string
	attrs map[string]*server.AttributeValue
}

// id is the item's identity for holds ("" when its key is not valid: the
// primary refuses the request).
func (rl *realistic) id(ref itemRef) string {
	// Under the primary's request lock: minidyn changes its map of
	// tables without its own.
	rl.front.mu.Lock()
	k, err := rl.primary.KeyOf(ref.table, ref.attrs)
	rl.front.mu.Unlock()
	if err != nil {
		return ""
	}
	return ref.table + "\x00" + k
}

// commit sends a write to the primary under wmu and, when it succeeded,
// queues the images of the items it names on every replica.
func (rl *realistic) commit(r *http.Request, body []byte, refs []itemRef) result {
	rl.wmu.Lock()
	defer rl.wmu.Unlock()
	res := forward(rl.front, r, body)
	if res.code != http.StatusOK || len(rl.replicas) == 0 {
		return res
	}
	imgs := make([]server.Image, 0, len(refs))
	rl.front.mu.Lock()
	for _, ref := range refs {
		img, err := rl.primary.Snapshot(ref.table, ref.attrs)
		if err != nil {
			slog.Warn("realistic DynamoDB: no image of a written item", "table", ref.table, "error", err.Error())
			continue
		}
		imgs = append(imgs, img)
	}
	rl.front.mu.Unlock()
	for _, rep := range rl.replicas {
		rep.enqueue(imgs, rl.upTo(rep.lag))
	}
	return res
}

func (rl *realistic) singleWrite(w http.ResponseWriter, r *http.Request, op string, body []byte) {
	var in struct {
		TableName string
		Item, Key map[string]*server.AttributeValue
	}
	if err := json.Unmarshal(body, &in); err != nil {
		forward(rl.front, r, body).copyTo(w)
		return
	}
	ref := itemRef{table: in.TableName, attrs: in.Key}
	if op == "PutItem" {
		ref.attrs = in.Item
	}
	if id := rl.id(ref); id != "" {
		rl.hmu.Lock()
		_, busy := rl.held[id]
		rl.hmu.Unlock()
		if busy {
			writeAWSError(w, "TransactionConflictException", "Transaction is ongoing for the item")
			return
		}
	}
	rl.commit(r, body, []itemRef{ref}).copyTo(w)
}

type writeRequest struct {
	PutRequest *struct {
		Item map[string]*server.AttributeValue
	} `json:",omitempty"`
	DeleteRequest *struct {
		Key map[string]*server.AttributeValue
	} `json:",omitempty"`
}

func (rl *realistic) batchWrite(w http.ResponseWriter, r *http.Request, body []byte) {
	var in map[string]json.RawMessage
	var items map[string][]json.RawMessage
	if json.Unmarshal(body, &in) != nil || json.Unmarshal(in["RequestItems"], &items) != nil {
		forward(rl.front, r, body).copyTo(w)
		return
	}
	tables := sortedKeys(items)
	n := 0
	for _, t := range tables {
		n += len(items[t])
	}
	left := map[string][]json.RawMessage{}
	if n >= 2 && rl.chance(rl.cfg.UnprocessedRate) {
		skip := rl.subset(n)
		i := 0
		kept := map[string][]json.RawMessage{}
		for _, t := range tables {
			for _, wr := range items[t] {
				if skip[i] {
					left[t] = append(left[t], wr)
				} else {
					kept[t] = append(kept[t], wr)
				}
				i++
			}
		}
		items = kept
		in["RequestItems"], _ = json.Marshal(kept)
		body, _ = json.Marshal(in)
	}
	var refs []itemRef
	for t, wrs := range items {
		for _, raw := range wrs {
			var wr writeRequest
			if json.Unmarshal(raw, &wr) != nil {
				continue
			}
			switch {
			case wr.PutRequest != nil:
				refs = append(refs, itemRef{table: t, attrs: wr.PutRequest.Item})
			case wr.DeleteRequest != nil:
				refs = append(refs, itemRef{table: t, attrs: wr.DeleteRequest.Key})
			}
		}
	}
	res := rl.commit(r, body, refs)
	if len(left) > 0 && res.code == http.StatusOK {
		res.body = mergeUnprocessed(res.body, "UnprocessedItems", left)
	}
	res.copyTo(w)
}

// mergeUnprocessed adds left to the response's unprocessed entries
// (UnprocessedItems or UnprocessedKeys), table by table.
func mergeUnprocessed[T any](resp []byte, field string, left map[string]T) []byte {
	var out map[string]json.RawMessage
	if json.Unmarshal(resp, &out) != nil {
		return resp
	}
	merged := map[string]json.RawMessage{}
	_ = json.Unmarshal(out[field], &merged)
	for t, v := range left {
		if prev, ok := merged[t]; ok && string(prev) != "null" {
			// Two lists (of write requests) or two key sets: join them.
			var a, b []json.RawMessage
			var ka, kb map[string]json.RawMessage
			nb, _ := json.Marshal(v)
			if json.Unmarshal(prev, &a) == nil && json.Unmarshal(nb, &b) == nil {
				merged[t], _ = json.Marshal(append(a, b...))
				continue
			}
			if json.Unmarshal(prev, &ka) == nil && json.Unmarshal(nb, &kb) == nil {
				_ = json.Unmarshal(ka["Keys"], &a)
				_ = json.Unmarshal(kb["Keys"], &b)
				kb["Keys"], _ = json.Marshal(append(a, b...))
				merged[t], _ = json.Marshal(kb)
				continue
			}
		}
		merged[t], _ = json.Marshal(v)
	}
	out[field], _ = json.Marshal(merged)
	b, err := json.Marshal(out)
	if err != nil {
		return resp
	}
	return b
}

type transactItem struct {
	ConditionCheck, Delete, Update *struct {
		TableName string
		Key       map[string]*server.AttributeValue
	} `json:",omitempty"`
	Put *struct {
		TableName string
		Item      map[string]*server.AttributeValue
	} `json:",omitempty"`
	Get *struct {
		TableName string
		Key       map[string]*server.AttributeValue
	} `json:",omitempty"`
}

// ref is the item a transaction's action names, and whether the action
// writes it.
func (ti transactItem) ref() (itemRef, bool) {
	switch {
	case ti.Put != nil:
		return itemRef{table: ti.Put.TableName, attrs: ti.Put.Item}, true
	case ti.Update != nil:
		return itemRef{table: ti.Update.TableName, attrs: ti.Update.Key}, true
	case ti.Delete != nil:
		return itemRef{table: ti.Delete.TableName, attrs: ti.Delete.Key}, true
	case ti.ConditionCheck != nil:
		return itemRef{table: ti.ConditionCheck.TableName, attrs: ti.ConditionCheck.Key}, false
	case ti.Get != nil:
		return itemRef{table: ti.Get.TableName, attrs: ti.Get.Key}, false
	}
	return itemRef{}, false
}

// conflicts returns, for each of ids, whether a transaction holds it.
func (rl *realistic) conflicts(ids []string) []bool {
	rl.hmu.Lock()
	defer rl.hmu.Unlock()
	out := make([]bool, len(ids))
	for i, id := range ids {
		_, out[i] = rl.held[id]
	}
	return out
}

func (rl *realistic) transactWrite(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct{ TransactItems []transactItem }
	if json.Unmarshal(body, &in) != nil || len(in.TransactItems) == 0 {
		forward(rl.front, r, body).copyTo(w)
		return
	}
	ids := make([]string, len(in.TransactItems))
	var refs []itemRef
	for i, ti := range in.TransactItems {
		ref, writes := ti.ref()
		ids[i] = rl.id(ref)
		if writes {
			refs = append(refs, ref)
		}
	}
	// The check and the hold are one step, so that of two transactions
	// on one item exactly one goes ahead.
	rl.hmu.Lock()
	conflict := make([]bool, len(ids))
	found := false
	for i, id := range ids {
		if _, busy := rl.held[id]; busy && id != "" {
			conflict[i], found = true, true
		}
	}
	if !found && rl.chance(rl.cfg.ConflictRate) {
		conflict[rl.intN(len(ids))], found = true, true
	}
	if found {
		rl.hmu.Unlock()
		writeCancelled(w, conflict)
		return
	}
	rl.nextTx++
	tx := rl.nextTx
	for _, id := range ids {
		if id != "" {
			rl.held[id] = tx
		}
	}
	rl.hmu.Unlock()
	defer func() {
		rl.hmu.Lock()
		for _, id := range ids {
			if rl.held[id] == tx {
				delete(rl.held, id)
			}
		}
		rl.hmu.Unlock()
	}()
	if d := rl.upTo(rl.cfg.TxHold); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	rl.commit(r, body, refs).copyTo(w)
}

func (rl *realistic) transactGet(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct{ TransactItems []transactItem }
	if json.Unmarshal(body, &in) == nil {
		ids := make([]string, len(in.TransactItems))
		for i, ti := range in.TransactItems {
			ref, _ := ti.ref()
			ids[i] = rl.id(ref)
		}
		if c := rl.conflicts(ids); slices.Contains(c, true) {
			writeCancelled(w, c)
			return
		}
	}
	forward(rl.front, r, body).copyTo(w)
}

// batchGet answers each table's keys from the primary (ConsistentRead) or
// the base replica, leaving some unprocessed at UnprocessedRate.
func (rl *realistic) batchGet(w http.ResponseWriter, r *http.Request, body []byte) {
	var in map[string]json.RawMessage
	var items map[string]map[string]json.RawMessage
	if json.Unmarshal(body, &in) != nil || json.Unmarshal(in["RequestItems"], &items) != nil {
		forward(rl.front, r, body).copyTo(w)
		return
	}
	tables := sortedKeys(items)
	keys := map[string][]json.RawMessage{}
	n := 0
	for _, t := range tables {
		var ks []json.RawMessage
		_ = json.Unmarshal(items[t]["Keys"], &ks)
		keys[t] = ks
		n += len(ks)
	}
	left := map[string]map[string]json.RawMessage{}
	if n >= 2 && rl.chance(rl.cfg.UnprocessedRate) {
		skip := rl.subset(n)
		i := 0
		for _, t := range tables {
			var kept, gone []json.RawMessage
			for _, k := range keys[t] {
				if skip[i] {
					gone = append(gone, k)
				} else {
					kept = append(kept, k)
				}
				i++
			}
			if len(gone) > 0 {
				rest := maps.Clone(items[t])
				rest["Keys"], _ = json.Marshal(gone)
				left[t] = rest
			}
			if len(kept) == 0 {
				delete(items, t)
				continue
			}
			items[t]["Keys"], _ = json.Marshal(kept)
		}
	}
	// Consistent tables to the primary, the others to the base replica.
	groups := map[http.Handler]map[string]map[string]json.RawMessage{}
	var order []http.Handler
	for _, t := range sortedKeys(items) {
		var c struct{ ConsistentRead bool }
		_ = json.Unmarshal(mustJSON(items[t]), &c)
		h := rl.eventual(c.ConsistentRead, rl.base)
		if groups[h] == nil {
			groups[h] = map[string]map[string]json.RawMessage{}
			order = append(order, h)
		}
		groups[h][t] = items[t]
	}
	if len(order) == 0 {
		// No tables: the primary says what is wrong with that.
		forward(rl.front, r, body).copyTo(w)
		return
	}
	var res result
	for i, h := range order {
		in["RequestItems"] = mustJSON(groups[h])
		part := forward(h, r, mustJSON(in))
		if part.code != http.StatusOK || i == 0 {
			res = part
			if part.code != http.StatusOK {
				break
			}
			continue
		}
		res.body = mergeBatchGet(res.body, part.body)
	}
	if len(left) > 0 && res.code == http.StatusOK {
		res.body = mergeUnprocessed(res.body, "UnprocessedKeys", left)
	}
	res.copyTo(w)
}

// mergeBatchGet joins two BatchGetItem responses over disjoint tables.
func mergeBatchGet(a, b []byte) []byte {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return a
	}
	for _, field := range []string{"Responses", "UnprocessedKeys"} {
		x := map[string]json.RawMessage{}
		_ = json.Unmarshal(ma[field], &x)
		y := map[string]json.RawMessage{}
		_ = json.Unmarshal(mb[field], &y)
		for k, v := range y {
			x[k] = v
		}
		ma[field] = mustJSON(x)
	}
	var ca, cb []json.RawMessage
	_ = json.Unmarshal(ma["ConsumedCapacity"], &ca)
	_ = json.Unmarshal(mb["ConsumedCapacity"], &cb)
	if len(ca)+len(cb) > 0 {
		ma["ConsumedCapacity"] = mustJSON(append(ca, cb...))
	}
	return mustJSON(ma)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("realistic DynamoDB: encode %T: %v", v, err))
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// result is a response captured from an in-process handler.
type result struct {
	code   int
	header http.Header
	body   []byte
}

func forward(h http.Handler, r *http.Request, body []byte) result {
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return result{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func (res result) copyTo(w http.ResponseWriter) {
	for k, v := range res.header {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(res.code)
	_, _ = w.Write(res.body)
}

const awsErrorPrefix = "com.amazonaws.dynamodb.v20120810#"

// writeAWSError answers as DynamoDB does for a client error.
func writeAWSError(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(mustJSON(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{awsErrorPrefix + typ, msg}))
}

// writeCancelled answers a transaction cancelled for conflicts on the
// items marked, as DynamoDB words it.
func writeCancelled(w http.ResponseWriter, conflict []bool) {
	type reason struct {
		Code    string
		Message string `json:",omitempty"`
	}
	reasons := make([]reason, len(conflict))
	codes := make([]string, len(conflict))
	for i, c := range conflict {
		reasons[i] = reason{Code: "None"}
		if c {
			reasons[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
		}
		codes[i] = reasons[i].Code
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(mustJSON(struct {
		Type                string `json:"__type"`
		Message             string
		CancellationReasons []reason
	}{
		awsErrorPrefix + "TransactionCanceledException",
		"Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		reasons,
	}))
}

// replica is a minidyn server that applies the primary's writes after a
// delay, in the primary's order.
type replica struct {
	lag   time.Duration
	srv   *server.Server
	front *serialised

	mu    sync.Mutex
	queue []pending
	last  time.Time // visible-at of the last write queued
	seq   uint64
	wake  chan struct{}
	idle  *sync.Cond // signalled when the queue empties
	stop  chan struct{}
	done  chan struct{}
}

type pending struct {
	seq  uint64
	at   time.Time
	imgs []server.Image
}

func newReplica(lag time.Duration, srv *server.Server) *replica {
	rep := &replica{lag: lag, srv: srv, front: &serialised{next: srv}, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	rep.idle = sync.NewCond(&rep.mu)
	go rep.run()
	return rep
}

// enqueue queues a write's images, visible after delay but never before
// the write queued before it.
func (rep *replica) enqueue(imgs []server.Image, delay time.Duration) {
	rep.mu.Lock()
	at := time.Now().Add(delay)
	if at.Before(rep.last) {
		at = rep.last
	}
	rep.last = at
	rep.seq++
	rep.queue = append(rep.queue, pending{seq: rep.seq, at: at, imgs: imgs})
	rep.mu.Unlock()
	select {
	case rep.wake <- struct{}{}:
	default:
	}
}

func (rep *replica) run() {
	defer close(rep.done)
	for {
		rep.mu.Lock()
		if len(rep.queue) == 0 {
			rep.mu.Unlock()
			select {
			case <-rep.wake:
				continue
			case <-rep.stop:
				return
			}
		}
		head := rep.queue[0]
		rep.mu.Unlock()
		if d := time.Until(head.at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-rep.stop:
				t.Stop()
				return
			}
		}
		rep.mu.Lock()
		// drain may have applied it meanwhile.
		if len(rep.queue) > 0 && rep.queue[0].seq == head.seq {
			rep.apply(head.imgs)
			rep.queue = rep.queue[1:]
		}
		if len(rep.queue) == 0 {
			rep.idle.Broadcast()
		}
		rep.mu.Unlock()
	}
}

// apply writes images into the replica; rep.mu is held.
func (rep *replica) apply(imgs []server.Image) {
	rep.front.mu.Lock()
	defer rep.front.mu.Unlock()
	for _, img := range imgs {
		if err := rep.srv.Apply(context.Background(), img); err != nil {
			// The table went meanwhile: nothing to keep in step.
			slog.Debug("realistic DynamoDB: replica skipped an image", "table", img.Table, "error", err.Error())
		}
	}
}

// drain applies every queued write now.
func (rep *replica) drain() {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	for _, p := range rep.queue {
		rep.apply(p.imgs)
	}
	rep.queue = nil
	rep.idle.Broadcast()
}

// settle waits until every write queued so far is visible.
func (rep *replica) settle() {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	for len(rep.queue) > 0 {
		select {
		case <-rep.done:
			return
		default:
		}
		rep.idle.Wait()
	}
}

func (rep *replica) close() {
	select {
	case <-rep.stop:
	default:
		close(rep.stop)
	}
	<-rep.done
	rep.mu.Lock()
	rep.idle.Broadcast()
	rep.mu.Unlock()
}

// load puts items into the primary and every replica at once, after the
// writes queued before them.
func (rl *realistic) load(ctx context.Context, table string, items []map[string]types.AttributeValue) error {
	rl.wmu.Lock()
	defer rl.wmu.Unlock()
	if err := rl.primary.PutItems(ctx, table, items); err != nil {
		return err
	}
	for _, rep := range rl.replicas {
		rep.drain()
		if err := rep.srv.PutItems(ctx, table, items); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
	}
	return nil
}
