package localaws

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// meter adds ConsumedCapacity to the responses of a DynamoDB server that
// does not report it (minidyn), for requests that ask for it
// (ReturnConsumedCapacity TOTAL or INDEXES). Others pass through untouched.
//
// The units follow DynamoDB's documented rules (item sizes from attribute
// names and values; reads in 4 KB steps, halved when eventually consistent,
// Query summing its items before rounding; writes in 1 KB steps of the
// larger of the old and new item; transactions twice; a global secondary
// index write for every index entry put, changed or removed). To know the
// old item, the full item behind a projection, and what a Query read before
// its filter, the meter reads through the same server around the request,
// so it serialises requests. It is a measuring instrument for tests and the
// local platform: on AWS the service reports these numbers itself.
//
// Not reported, as on AWS: the capacity of a request that fails (a failed
// condition is billed, but the error carries no ConsumedCapacity).
type meter struct {
	next http.Handler
	// parts, when set, also receives every request's capacity per
	// partition key, whether or not the request asked for it.
	parts *PartitionMeter

	mu     sync.Mutex
	tables map[string]*tableSchema
}

func newMeter(next http.Handler, parts *PartitionMeter) *meter {
	return &meter{next: next, parts: parts, tables: map[string]*tableSchema{}}
}

const targetPrefix = "DynamoDB_20120810."

// schemaChange are the operations after which the meter's cached table
// schemas are stale.
var schemaChange = map[string]bool{"CreateTable": true, "DeleteTable": true, "UpdateTable": true}

type (
	item = map[string]any // an item in DynamoDB's JSON wire form
	obj  = map[string]json.RawMessage
)

type tableSchema struct {
	keys    []string
	hash    string // the partition key attribute
	indexes []indexSchema
}

type indexSchema struct {
	name       string
	keys       []string
	hash       string
	projection string   // ALL, KEYS_ONLY or INCLUDE
	include    []string // INCLUDE's non-key attributes
}

func (m *meter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if !ok || r.Method != http.MethodPost {
		m.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts == nil && !schemaChange[op] && !bytes.Contains(body, []byte(`"ReturnConsumedCapacity"`)) {
		// Nothing to count (most of the local platform's traffic):
		// spare the request a second JSON parse.
		m.next.ServeHTTP(w, r)
		return
	}
	var req obj
	var mode string
	if json.Unmarshal(body, &req) == nil {
		_ = json.Unmarshal(req["ReturnConsumedCapacity"], &mode)
	}
	if schemaChange[op] {
		clear(m.tables)
	}
	asked := mode == "TOTAL" || mode == "INDEXES"
	if !asked && m.parts == nil {
		m.next.ServeHTTP(w, r)
		return
	}
	meterOp, known := meters[op]
	if !known {
		m.next.ServeHTTP(w, r)
		return
	}
	// Errors reading what the request touches are not the client's
	// problem: the response goes out unmetered.
	done, err := meterOp(m, req)
	rec := httptest.NewRecorder()
	m.next.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	if err == nil && rec.Code == http.StatusOK {
		var cc []consumed
		if cc, err = done(out); err == nil {
			if m.parts != nil {
				m.parts.add(cc)
			}
			if asked {
				out, err = withCapacity(out, op, mode, cc)
			}
		}
	}
	for k, v := range rec.Header() {
		if k != "Content-Length" && k != "X-Amz-Crc32" {
			w.Header()[k] = v
		}
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(out)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// consumed is one table's (or index's) share of a request, in one
// partition: key is the value of the table's (or index's) partition key
// attribute ("" when unknown, as for a Scan).
type consumed struct {
	table, index string
	key          string
	read         bool
	units        float64
}

// A meterFunc runs before the request is served and returns what to run
// after it with the response body.
type meterFunc func(m *meter, req obj) (func(resp []byte) ([]consumed, error), error)

var meters = map[string]meterFunc{
	"GetItem":            meterGet,
	"BatchGetItem":       meterBatchGet,
	"TransactGetItems":   meterTransactGet,
	"Query":              meterQuery,
	"Scan":               meterQuery,
	"PutItem":            meterWrite,
	"UpdateItem":         meterWrite,
	"DeleteItem":         meterWrite,
	"BatchWriteItem":     meterBatchWrite,
	"TransactWriteItems": meterTransactWrite,
}

func readUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		return u / 2
	}
	return u
}

func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

func meterGet(m *meter, req obj) (func([]byte) ([]consumed, error), error) {
	var in struct {
		TableName      string
		Key            item
		ConsistentRead bool
	}
	if err := json.Unmarshal(mustJSON(req), &in); err != nil {
		return nil, err
	}
	it, err := m.getItem(in.TableName, in.Key)
	if err != nil {
		return nil, err
	}
	pk, err := m.partitionOf(in.TableName, in.Key)
	if err != nil {
		return nil, err
	}
	return func([]byte) ([]consumed, error) {
		return []consumed{{table: in.TableName, key: pk, read: true, units: readUnits(itemSize(it), in.ConsistentRead)}}, nil
	}, nil
}

func meterBatchGet(m *meter, req obj) (func([]byte) ([]consumed, error), error) {
	var in struct {
		RequestItems map[string]struct {
			Keys           []item
			ConsistentRead bool
		}
	}
	if err := json.Unmarshal(mustJSON(req), &in); err != nil {
		return nil, err
	}
	type read struct {
		pk    string
		units float64
	}
	units := map[string]map[string]read{} // table → key → units
	for table, ka := range in.RequestItems {
		units[table] = map[string]read{}
		for _, k := range ka.Keys {
			it, err := m.getItem(table, k)
			if err != nil {
				return nil, err
			}
			pk, err := m.partitionOf(table, k)
			if err != nil {
				return nil, err
			}
			units[table][canonical(k)] = read{pk, readUnits(itemSize(it), ka.ConsistentRead)}
		}
	}
	return func(resp []byte) ([]consumed, error) {
		var out struct {
			UnprocessedKeys map[string]struct{ Keys []item }
		}
		if err := json.Unmarshal(resp, &out); err != nil {
			return nil, err
		}
		for table, ka := range out.UnprocessedKeys {
			for _, k := range ka.Keys {
				delete(units[table], canonical(k))
			}
		}
		var cc []consumed
		for table, byKey := range units {
			for _, r := range byKey {
				cc = append(cc, consumed{table: table, key: r.pk, read: true, units: r.units})
			}
		}
		return cc, nil
	}, nil
}

func meterTransactGet(m *meter, req obj) (func([]byte) ([]consumed, error), error) {
	var in struct {
		TransactItems []struct {
			Get struct {
				TableName string
				Key       item
			}
		}
	}
	if err := json.Unmarshal(mustJSON(req), &in); err != nil {
		return nil, err
	}
	var cc []consumed
	for _, ti := range in.TransactItems {
		it, err := m.getItem(ti.Get.TableName, ti.Get.Key)
		if err != nil {
			return nil, err
		}
		pk, err := m.partitionOf(ti.Get.TableName, ti.Get.Key)
		if err != nil {
			return nil, err
		}
		cc = append(cc, consumed{table: ti.Get.TableName, key: pk, read: true, units: 2 * readUnits(itemSize(it), true)})
	}
	return func([]byte) ([]consumed, error) { return cc, nil }, nil
}

// exprRefs finds the #name and :value placeholders an expression uses.
var exprRefs = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// meterQuery reruns a Query or Scan without its filter and projection, so
// that it sees what DynamoDB reads (and bills) rather than what it returns.
// Limit and ExclusiveStartKey are kept: they bound the read itself.
func meterQuery(m *meter, req obj) (func([]byte) ([]consumed, error), error) {
	var table, index string
	var consistent bool
	_ = json.Unmarshal(req["TableName"], &table)
	_ = json.Unmarshal(req["IndexName"], &index)
	_ = json.Unmarshal(req["ConsistentRead"], &consistent)
	op := "Query"
	if _, ok := req["KeyConditionExpression"]; !ok {
		op = "Scan"
	}
	shadow := obj{}
	for _, k := range []string{"TableName", "IndexName", "KeyConditionExpression", "ExclusiveStartKey", "Limit", "ScanIndexForward", "ConsistentRead", "Segment", "TotalSegments"} {
		if v, ok := req[k]; ok {
			shadow[k] = v
		}
	}
	// Placeholders only the filter or projection used would be refused
	// as unused.
	var kce string
	_ = json.Unmarshal(req["KeyConditionExpression"], &kce)
	used := map[string]bool{}
	for _, ref := range exprRefs.FindAllString(kce, -1) {
		used[ref] = true
	}
	for _, f := range []string{"ExpressionAttributeNames", "ExpressionAttributeValues"} {
		var all obj
		if json.Unmarshal(req[f], &all) != nil || all == nil {
			continue
		}
		keep := obj{}
		for k, v := range all {
			if used[k] {
				keep[k] = v
			}
		}
		if len(keep) > 0 {
			shadow[f] = mustJSON(keep)
		}
	}
	resp, err := m.call(op, shadow)
	if err != nil {
		return nil, err
	}
	var out struct{ Items []item }
	if err := json.Unmarshal(resp, &out); err != nil {
		return nil, err
	}
	size := 0
	for _, it := range out.Items {
		size += itemSize(it)
	}
	pk := ""
	if op == "Query" {
		if pk, err = m.queryPartition(table, index, req); err != nil {
			return nil, err
		}
	}
	return func([]byte) ([]consumed, error) {
		return []consumed{{table: table, index: index, key: pk, read: true, units: readUnits(size, consistent)}}, nil
	}, nil
}

// write is one item a write request changes.
type write struct {
	table     string
	key       item
	put       item // the new item of a Put, known before the request
	check     bool // a transaction's ConditionCheck
	old, new_ item
}

func meterWrite(m *meter, req obj) (func([]byte) ([]consumed, error), error) {
	var in struct {
		TableName string
		Key       item
		Item      item
	}
	if err := json.Unmarshal(mustJSON(req), &in); err != nil {
		return nil, err
	}
	return m.writes([]write{{table: in.TableName, key: in.Key, put: in.Item}}, 1)
}

func meterBatchWrite(m *meter, req obj) (func([]byte) ([]consumed, error), error) {
	var in struct {
		RequestItems map[string][]struct {
			PutRequest    *struct{ Item item }
			DeleteRequest *struct{ Key item }
		}
	}
	if err := json.Unmarshal(mustJSON(req), &in); err != nil {
		return nil, err
	}
	var ws []write
	for table, reqs := range in.RequestItems {
		for _, r := range reqs {
			switch {
			case r.PutRequest != nil:
				ws = append(ws, write{table: table, put: r.PutRequest.Item})
			case r.DeleteRequest != nil:
				ws = append(ws, write{table: table, key: r.DeleteRequest.Key})
			}
		}
	}
	// BatchWriteItem is not atomic: a write left unprocessed costs nothing.
	after, err := m.writes(ws, 1)
	if err != nil {
		return nil, err
	}
	return func(resp []byte) ([]consumed, error) {
		var out struct {
			UnprocessedItems map[string][]json.RawMessage
		}
		if err := json.Unmarshal(resp, &out); err != nil {
			return nil, err
		}
		for _, v := range out.UnprocessedItems {
			if len(v) > 0 {
				return nil, fmt.Errorf("unprocessed items are not metered")
			}
		}
		return after(resp)
	}, nil
}

func meterTransactWrite(m *meter, req obj) (func([]byte) ([]consumed, error), error) {
	type keyed struct {
		TableName string
		Key       item
		Item      item
	}
	var in struct {
		TransactItems []struct{ Put, Update, Delete, ConditionCheck *keyed }
	}
	if err := json.Unmarshal(mustJSON(req), &in); err != nil {
		return nil, err
	}
	var ws []write
	for _, ti := range in.TransactItems {
		switch {
		case ti.Put != nil:
			ws = append(ws, write{table: ti.Put.TableName, put: ti.Put.Item})
		case ti.Update != nil:
			ws = append(ws, write{table: ti.Update.TableName, key: ti.Update.Key})
		case ti.Delete != nil:
			ws = append(ws, write{table: ti.Delete.TableName, key: ti.Delete.Key})
		case ti.ConditionCheck != nil:
			ws = append(ws, write{table: ti.ConditionCheck.TableName, key: ti.ConditionCheck.Key, check: true})
		}
	}
	return m.writes(ws, 2)
}

// writes reads each item before the request and again after it, and bills
// the larger of the two in 1 KB steps (factor 2 in a transaction) plus the
// index entries that changed.
func (m *meter) writes(ws []write, factor float64) (func([]byte) ([]consumed, error), error) {
	for i := range ws {
		w := &ws[i]
		s, err := m.schema(w.table)
		if err != nil {
			return nil, err
		}
		if w.put != nil {
			w.key = project(w.put, s.keys)
		}
		if w.old, err = m.getItem(w.table, w.key); err != nil {
			return nil, err
		}
	}
	return func([]byte) ([]consumed, error) {
		var cc []consumed
		for i := range ws {
			w := &ws[i]
			s, err := m.schema(w.table)
			if err != nil {
				return nil, err
			}
			if w.new_, err = m.getItem(w.table, w.key); err != nil {
				return nil, err
			}
			size := max(itemSize(w.old), itemSize(w.new_))
			cc = append(cc, consumed{table: w.table, key: attrString(w.key[s.hash]), units: factor * writeUnits(size)})
			if w.check {
				continue
			}
			for _, ix := range s.indexes {
				if u := ix.writeUnits(s, w.old, w.new_); u > 0 {
					// An entry that moves between index partitions is
					// billed to the new one; one that leaves, to the old.
					pk := attrString(w.new_[ix.hash])
					if pk == "" {
						pk = attrString(w.old[ix.hash])
					}
					cc = append(cc, consumed{table: w.table, index: ix.name, key: pk, units: u})
				}
			}
		}
		return cc, nil
	}, nil
}

// writeUnits is what one table write costs an index: nothing when the
// item is in the index neither before nor after or its entry is unchanged,
// a put or a delete when it enters or leaves, and both when its index key
// changes.
func (ix indexSchema) writeUnits(s *tableSchema, old, new_ item) float64 {
	in := func(it item) bool {
		if it == nil {
			return false
		}
		for _, k := range ix.keys {
			if _, ok := it[k]; !ok {
				return false
			}
		}
		return true
	}
	entry := func(it item) item {
		switch ix.projection {
		case "ALL":
			return it
		case "INCLUDE":
			return project(it, append(append(append([]string{}, s.keys...), ix.keys...), ix.include...))
		default:
			return project(it, append(append([]string{}, s.keys...), ix.keys...))
		}
	}
	was, is := in(old), in(new_)
	switch {
	case !was && !is:
		return 0
	case was && !is:
		return writeUnits(itemSize(entry(old)))
	case !was && is:
		return writeUnits(itemSize(entry(new_)))
	case canonical(project(old, ix.keys)) != canonical(project(new_, ix.keys)):
		return writeUnits(itemSize(entry(old))) + writeUnits(itemSize(entry(new_)))
	case canonical(entry(old)) == canonical(entry(new_)):
		return 0
	default:
		return writeUnits(max(itemSize(entry(old)), itemSize(entry(new_))))
	}
}

// withCapacity adds ConsumedCapacity to a response body in the shape
// DynamoDB uses: one object for single-table operations, a list of
// per-table objects for batches and transactions.
func withCapacity(body []byte, op, mode string, cc []consumed) ([]byte, error) {
	var resp obj
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, err
	}
	type units struct {
		CapacityUnits      float64
		ReadCapacityUnits  *float64 `json:",omitempty"`
		WriteCapacityUnits *float64 `json:",omitempty"`
	}
	type entry struct {
		TableName              string
		CapacityUnits          float64
		ReadCapacityUnits      *float64         `json:",omitempty"`
		WriteCapacityUnits     *float64         `json:",omitempty"`
		Table                  *units           `json:",omitempty"`
		GlobalSecondaryIndexes map[string]units `json:",omitempty"`
	}
	rw := func(read bool, u float64) (r, w *float64) {
		if read {
			return &u, nil
		}
		return nil, &u
	}
	byTable := map[string]*entry{}
	var order []string
	for _, c := range cc {
		e := byTable[c.table]
		if e == nil {
			e = &entry{TableName: c.table}
			byTable[c.table] = e
			order = append(order, c.table)
		}
		e.CapacityUnits += c.units
		if mode != "INDEXES" {
			continue
		}
		if c.index == "" {
			if e.Table == nil {
				e.Table = &units{}
			}
			e.Table.CapacityUnits += c.units
			e.Table.ReadCapacityUnits, e.Table.WriteCapacityUnits = rw(c.read, e.Table.CapacityUnits)
			continue
		}
		if e.GlobalSecondaryIndexes == nil {
			e.GlobalSecondaryIndexes = map[string]units{}
		}
		u := e.GlobalSecondaryIndexes[c.index]
		u.CapacityUnits += c.units
		u.ReadCapacityUnits, u.WriteCapacityUnits = rw(c.read, u.CapacityUnits)
		e.GlobalSecondaryIndexes[c.index] = u
	}
	read := len(cc) > 0 && cc[0].read
	var list []entry
	for _, t := range order {
		e := byTable[t]
		e.ReadCapacityUnits, e.WriteCapacityUnits = rw(read, e.CapacityUnits)
		list = append(list, *e)
	}
	switch op {
	case "BatchGetItem", "BatchWriteItem", "TransactGetItems", "TransactWriteItems":
		if list == nil {
			list = []entry{}
		}
		resp["ConsumedCapacity"] = mustJSON(list)
	default:
		if len(list) != 1 {
			return nil, fmt.Errorf("%s touched %d tables", op, len(list))
		}
		resp["ConsumedCapacity"] = mustJSON(list[0])
	}
	return json.Marshal(resp)
}

// schema returns a table's key and index attributes, from DescribeTable.
func (m *meter) schema(table string) (*tableSchema, error) {
	if s := m.tables[table]; s != nil {
		return s, nil
	}
	resp, err := m.call("DescribeTable", obj{"TableName": mustJSON(table)})
	if err != nil {
		return nil, err
	}
	type keySchema []struct{ AttributeName, KeyType string }
	var out struct {
		Table struct {
			KeySchema              keySchema
			GlobalSecondaryIndexes []struct {
				IndexName  string
				KeySchema  keySchema
				Projection struct {
					ProjectionType   string
					NonKeyAttributes []string
				}
			}
		}
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return nil, err
	}
	names := func(ks keySchema) []string {
		var n []string
		for _, k := range ks {
			n = append(n, k.AttributeName)
		}
		return n
	}
	hash := func(ks keySchema) string {
		for _, k := range ks {
			if k.KeyType == "HASH" {
				return k.AttributeName
			}
		}
		return ""
	}
	s := &tableSchema{keys: names(out.Table.KeySchema), hash: hash(out.Table.KeySchema)}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		s.indexes = append(s.indexes, indexSchema{name: g.IndexName, keys: names(g.KeySchema), hash: hash(g.KeySchema),
			projection: g.Projection.ProjectionType, include: g.Projection.NonKeyAttributes})
	}
	m.tables[table] = s
	return s, nil
}

// partitionOf is the partition key value of a table key.
func (m *meter) partitionOf(table string, key item) (string, error) {
	s, err := m.schema(table)
	if err != nil {
		return "", err
	}
	return attrString(key[s.hash]), nil
}

// keyEquals finds "name = :value" (either way round) in a key condition.
var keyEquals = regexp.MustCompile(`([#:]?[A-Za-z0-9_]+)\s*=\s*([#:]?[A-Za-z0-9_]+)`)

// queryPartition is the partition a Query reads: the value its key
// condition compares the table's (or index's) partition key with.
func (m *meter) queryPartition(table, index string, req obj) (string, error) {
	s, err := m.schema(table)
	if err != nil {
		return "", err
	}
	hash := s.hash
	if index != "" {
		hash = ""
		for _, ix := range s.indexes {
			if ix.name == index {
				hash = ix.hash
			}
		}
	}
	var kce string
	var names map[string]string
	var values map[string]any
	_ = json.Unmarshal(req["KeyConditionExpression"], &kce)
	_ = json.Unmarshal(req["ExpressionAttributeNames"], &names)
	_ = json.Unmarshal(req["ExpressionAttributeValues"], &values)
	name := func(ref string) string {
		if n, ok := names[ref]; ok {
			return n
		}
		return ref
	}
	for _, eq := range keyEquals.FindAllStringSubmatch(kce, -1) {
		a, b := eq[1], eq[2]
		if strings.HasPrefix(a, ":") {
			a, b = b, a
		}
		if name(a) == hash && strings.HasPrefix(b, ":") {
			return attrString(values[b]), nil
		}
	}
	return "", nil
}

// attrString is a key attribute's value as text (S, N or B as sent).
func attrString(v any) string {
	av, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, x := range av {
		if s, ok := x.(string); ok {
			return s
		}
	}
	return ""
}

// getItem reads the whole item (nil when there is none).
func (m *meter) getItem(table string, key item) (item, error) {
	resp, err := m.call("GetItem", obj{"TableName": mustJSON(table), "Key": mustJSON(key), "ConsistentRead": mustJSON(true)})
	if err != nil {
		return nil, err
	}
	var out struct{ Item item }
	if err := json.Unmarshal(resp, &out); err != nil {
		return nil, err
	}
	return out.Item, nil
}

// call serves one request of the meter's own on the wrapped server.
func (m *meter) call(op string, in obj) ([]byte, error) {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(mustJSON(in)))
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", targetPrefix+op)
	rec := httptest.NewRecorder()
	m.next.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("meter %s: %d %s", op, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes(), nil
}

func project(it item, names []string) item {
	out := item{}
	for _, n := range names {
		if v, ok := it[n]; ok {
			out[n] = v
		}
	}
	return out
}

// canonical is a comparable form of an item or key: encoding/json sorts
// map keys.
func canonical(it item) string { return string(mustJSON(it)) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("meter: encode %T: %v", v, err))
	}
	return b
}

// itemSize is an item's size by DynamoDB's rules: each attribute's name
// plus its value (0 for no item).
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is one attribute value's size: UTF-8 bytes of a string, raw
// bytes of a binary, about one byte per two significant digits plus one
// of a number, one byte of a boolean or null, and three bytes plus one per
// element (and each map key's length) of a list or map.
func valueSize(v any) int {
	av, ok := v.(map[string]any)
	if !ok || len(av) != 1 {
		return 0
	}
	for typ, x := range av {
		switch typ {
		case "S":
			s, _ := x.(string)
			return len(s)
		case "N":
			s, _ := x.(string)
			return numberSize(s)
		case "B":
			return binarySize(x)
		case "BOOL", "NULL":
			return 1
		case "SS", "NS", "BS":
			l, _ := x.([]any)
			n := 0
			for _, e := range l {
				switch typ {
				case "SS":
					s, _ := e.(string)
					n += len(s)
				case "NS":
					s, _ := e.(string)
					n += numberSize(s)
				default:
					n += binarySize(e)
				}
			}
			return n
		case "L":
			l, _ := x.([]any)
			n := 3
			for _, e := range l {
				n += 1 + valueSize(e)
			}
			return n
		case "M":
			mm, _ := x.(map[string]any)
			n := 3
			for k, e := range mm {
				n += 1 + len(k) + valueSize(e)
			}
			return n
		}
	}
	return 0
}

func binarySize(x any) int {
	s, _ := x.(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return len(s)
	}
	return len(b)
}

// numberSize counts significant digits: leading and trailing zeros are
// not stored.
func numberSize(s string) int {
	if e := strings.IndexAny(s, "eE"); e >= 0 {
		s = s[:e]
	}
	s = strings.TrimLeft(s, "+-")
	s = strings.ReplaceAll(s, ".", "")
	s = strings.Trim(s, "0")
	digits := utf8.RuneCountInString(s)
	return (digits+1)/2 + 1
}
