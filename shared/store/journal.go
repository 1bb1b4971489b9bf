package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
)

// The journal of recent writes. A listed collection kept in an index
// (GSI1/GSI2/GSI3) is read from a Query that DynamoDB cannot make
// consistent: an index is updated asynchronously, usually within a second.
// So every write that adds, changes or removes a member of such a
// collection also writes a journal item in the base table, in the
// collection's journal partition (RECENT#<the collection's index partition
// key>), naming the members it wrote. A list reads the journal's recent
// window with ConsistentRead beside the index page and merges the members
// it names from a consistent read of their items (page.go).
//
// The journal is written by the table client the store holds (journaled
// below), from what each write carries: a Put's item names its index keys;
// an Update or Delete names its base key, from which listsOfKey derives the
// collection when the key holds it, and a write of a member whose key does
// not (an application, a task, ...) names its collections in its context
// (withLists). No store method writes a member without passing here.

const (
	prefixJournal = "RECENT#"
	// JournalWindow is how far back a list looks in the journal. DynamoDB
	// propagates an index write "usually within a fraction of a second"
	// (its developer guide, Global secondary indexes); the local realistic
	// mode delays index visibility by up to 1 s. 5 s covers five times
	// that and the clock skew between two Lambda hosts (milliseconds,
	// NTP-synchronized), while keeping the Query of a busy collection's
	// journal short.
	JournalWindow = 5 * time.Second
	// journalTTL removes journal items long after the window (DynamoDB's
	// TTL deletes within days; the window bounds what is read, not TTL).
	journalTTL = time.Hour
	// journalReadLimit bounds the journal items one list reads (newest
	// first) and journalMembersLimit the members it then reads by key
	// (one BatchGetItem call). A collection written faster than that
	// within the window shows its newest writes consistently and older
	// ones as the index has them (docs/data-model.md, Paged collections).
	journalReadLimit    = 100
	journalMembersLimit = 100
	// journalMaxMembers is how many member keys one journal item holds:
	// a write of more (a BatchWriteItem of entries never exceeds 25, a
	// transaction 100) is split into several journal items.
	journalMaxMembers  = 100
	attrJournalMembers = "m"
)

func journalPK(list string) string { return prefixJournal + list }

// listedGSI1 are the GSI1 partitions (prefixes) that are listed
// collections: paged, or read for an answer that a missing member would
// make wrong (a role's holders and a group's members: who can,
// holders.go). GSI1's other partitions are lookups (children, keys of an
// account, the outbox, the expiry sweep, an invitee's invitation by id)
// that lists never read. Every GSI2 and GSI3 partition is a listed
// collection.
var listedGSI1 = []string{gsiUsers, "APPS#", "TASKS#", "ADDRSETS#", "METRICPROTOS#", "APPTESTS#", "SERVICEUSERS#", "HOLDERS#", "MEMBERS#"}

func isListedGSI1(pk string) bool {
	for _, p := range listedGSI1 {
		if pk == p || (strings.HasSuffix(p, "#") && strings.HasPrefix(pk, p)) {
			return true
		}
	}
	return false
}

// listsOfItem are the listed collections an item written whole belongs to.
func listsOfItem(it map[string]types.AttributeValue) []string {
	var out []string
	if pk := strAttr(it, AttrGSI1PK); pk != "" && isListedGSI1(pk) {
		out = append(out, pk)
	}
	for _, a := range []string{AttrGSI2PK, AttrGSI3PK} {
		if pk := strAttr(it, a); pk != "" {
			out = append(out, pk)
		}
	}
	return out
}

// listsOfKey are the listed collections an item with this base key belongs
// to, where the key alone tells (the item's other collections, such as
// an invitation's inbox, are named with withLists).
func listsOfKey(pk, sk string) []string {
	switch {
	case strings.HasPrefix(pk, "ACCOUNT#") && sk == skAccount:
		return []string{accountsList}
	case strings.HasPrefix(pk, "RBAC#") && strings.HasPrefix(sk, prefixRole):
		return []string{rolesList(strings.TrimPrefix(pk, "RBAC#"))}
	case strings.HasPrefix(pk, "RBAC#") && strings.HasPrefix(sk, "GROUP#"):
		return []string{groupsList(strings.TrimPrefix(pk, "RBAC#"))}
	case strings.HasPrefix(pk, "ACCOUNT#") && strings.HasPrefix(sk, prefixEntitlement):
		return []string{entitlementsList(strings.TrimPrefix(pk, "ACCOUNT#"))}
	case strings.HasPrefix(pk, "INVITATIONS#") && (strings.HasPrefix(sk, "INVITATION#") || strings.HasPrefix(sk, "GROUPINVITATION#")):
		return []string{pk}
	case strings.HasPrefix(pk, "PRINCIPAL#") && strings.HasPrefix(sk, prefixKey):
		return []string{keysList(strings.TrimPrefix(pk, "PRINCIPAL#"))}
	case strings.HasPrefix(pk, "PRINCIPAL#") && strings.HasPrefix(sk, prefixAnyGrant):
		return append([]string{heldList(strings.TrimPrefix(pk, "PRINCIPAL#"))}, holderLists(sk)...)
	case strings.HasPrefix(pk, "APPTEST#") && sk == skAppTest:
		acct, _, _ := strings.Cut(strings.TrimPrefix(pk, "APPTEST#"), "#")
		return []string{appTestsGSI(acct)}
	case strings.HasPrefix(pk, "ADDRSET#") && strings.HasPrefix(sk, prefixAddrEntry):
		return []string{addrEntriesGSI(strings.TrimPrefix(pk, "ADDRSET#"))}
	}
	return nil
}

type listsKey struct{}

type unjournaledKey struct{}

// unjournaled marks the writes made with the returned context as changing
// nothing a list shows read-your-writes: a key's last_used, which is kept
// at a minute's granularity and written by the authorizer, not by a
// client's request. Such a write must not cost a journal item on every
// authorized request. And the schema migration's backfill (migrate.go),
// which answers no client and adds index keys to items that no list
// showed before it.
func unjournaled(ctx context.Context) context.Context {
	return context.WithValue(ctx, unjournaledKey{}, true)
}

// withLists names the listed collections of the member pk/sk for the
// writes made with the returned context: for an Update or Delete of a
// member whose key does not hold its collection (an application's account,
// an invitation's invitee).
func withLists(ctx context.Context, pk, sk string, lists ...string) context.Context {
	old, _ := ctx.Value(listsKey{}).(map[string][]string)
	m := make(map[string][]string, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[pk+"\n"+sk] = append(append([]string(nil), m[pk+"\n"+sk]...), lists...)
	return context.WithValue(ctx, listsKey{}, m)
}

func hintedLists(ctx context.Context, pk, sk string) []string {
	m, _ := ctx.Value(listsKey{}).(map[string][]string)
	return m[pk+"\n"+sk]
}

// journalEntries collects, per collection, the member keys a write touches.
type journalEntries map[string]map[string]bool

func (j journalEntries) add(lists []string, pk, sk string) {
	for _, l := range lists {
		if j[l] == nil {
			j[l] = map[string]bool{}
		}
		j[l][pk+"\n"+sk] = true
	}
}

func (j journalEntries) item(ctx context.Context, it map[string]types.AttributeValue) {
	pk, sk := strAttr(it, AttrPK), strAttr(it, AttrSK)
	j.add(listsOfItem(it), pk, sk)
	j.add(hintedLists(ctx, pk, sk), pk, sk)
}

func (j journalEntries) key(ctx context.Context, k map[string]types.AttributeValue) {
	pk, sk := strAttr(k, AttrPK), strAttr(k, AttrSK)
	j.add(listsOfKey(pk, sk), pk, sk)
	j.add(hintedLists(ctx, pk, sk), pk, sk)
}

// items are the journal items of one write at time now.
func (j journalEntries) items(now time.Time) []map[string]types.AttributeValue {
	if len(j) == 0 {
		return nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	write := hex.EncodeToString(b[:])
	ttl := strconv.FormatInt(now.Add(journalTTL).Unix(), 10)
	lists := make([]string, 0, len(j))
	for l := range j {
		lists = append(lists, l)
	}
	sort.Strings(lists)
	var out []map[string]types.AttributeValue
	for _, l := range lists {
		members := make([]string, 0, len(j[l]))
		for m := range j[l] {
			members = append(members, m)
		}
		sort.Strings(members)
		for i := 0; i < len(members); i += journalMaxMembers {
			part := members[i:min(i+journalMaxMembers, len(members))]
			out = append(out, map[string]types.AttributeValue{
				AttrPK:             avStr(journalPK(l)),
				AttrSK:             avStr(fmt.Sprintf("%013d#%s#%d", now.UnixMilli(), write, i/journalMaxMembers)),
				attrJournalMembers: &types.AttributeValueMemberSS{Value: part},
				AttrTTL:            &types.AttributeValueMemberN{Value: ttl},
				"entity":           avStr("journal"),
			})
		}
	}
	return out
}

// tableAPI is what the store calls on the table.
type tableAPI interface {
	ddb.API
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	// Scan is for the schema migration alone (migrate.go).
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// journaled is the table client that journals every write of a listed
// collection's member: in the same transaction when it has room, otherwise
// (and for single-item and batch writes) with a write in parallel, both
// awaited. A journal item of a write that then fails only makes a list
// read that member again.
type journaled struct {
	*dynamodb.Client
	table string
	now   func() time.Time
	// root is the installation's root account (audit.go: where the events
	// of a key in no account go).
	root func(context.Context) (string, error)
}

func (c journaled) put(ctx context.Context, items []map[string]types.AttributeValue) error {
	if len(items) == 1 {
		_, err := c.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.table), Item: items[0]})
		return err
	}
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return ddb.BatchWrite(ctx, c.Client, c.table, reqs)
}

// beside runs write in parallel with the journal's write of j. Both run
// to their end (neither cancels the other); when a condition refused the
// write (a conflict, another account's member), the journal items are
// deleted again, so that a refused request leaves the table as it was
// (the isolation invariant). Any other failure (a timeout, a connection
// reset) may hide a write DynamoDB made, so its journal items stay: a
// leftover only makes a list read the member once more, and expires.
func beside[T any](ctx context.Context, c journaled, j journalEntries, write func(context.Context) (T, error)) (T, error) {
	items := j.items(c.now())
	if len(items) == 0 || ctx.Value(unjournaledKey{}) != nil {
		return write(ctx)
	}
	var (
		out        T
		werr, jerr error
		wg         sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		jerr = c.put(ctx, items)
	}()
	out, werr = write(ctx)
	wg.Wait()
	if werr != nil {
		if jerr == nil && ddb.IsConditionFailed(werr) {
			c.unput(context.WithoutCancel(ctx), items)
		}
		// The write's own error (a failed condition) is what the caller
		// acts on.
		return out, werr
	}
	if jerr != nil {
		return out, fmt.Errorf("journal: %w", jerr)
	}
	return out, nil
}

// unput deletes journal items of a write that failed; best effort.
func (c journaled) unput(ctx context.Context, items []map[string]types.AttributeValue) {
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}}}
	}
	_ = ddb.BatchWrite(ctx, c.Client, c.table, reqs)
}

func (c journaled) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pendingAudit(ctx) != nil {
		attrs, err := c.audited(ctx, map[string]types.AttributeValue{AttrPK: in.Item[AttrPK], AttrSK: in.Item[AttrSK]}, in.ReturnValues,
			types.TransactWriteItem{Put: &types.Put{TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
				ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}})
		if err != nil {
			return nil, err
		}
		return &dynamodb.PutItemOutput{Attributes: attrs}, nil
	}
	j := journalEntries{}
	j.item(ctx, in.Item)
	return beside(ctx, c, j, func(ctx context.Context) (*dynamodb.PutItemOutput, error) {
		return c.Client.PutItem(ctx, in, optFns...)
	})
}

func (c journaled) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	// A write that returns what it computed (UPDATED_NEW: a sequence
	// drawn) must return exactly that, which a read after a transaction
	// cannot: it is made as asked, and the record waits for the request's
	// next write (the page control the sequence numbers), or its
	// completion.
	if pendingAudit(ctx) != nil && in.ReturnValues != types.ReturnValueUpdatedNew {
		attrs, err := c.audited(ctx, in.Key, in.ReturnValues,
			types.TransactWriteItem{Update: &types.Update{TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
				ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
				ExpressionAttributeValues: in.ExpressionAttributeValues}})
		if err != nil {
			return nil, err
		}
		return &dynamodb.UpdateItemOutput{Attributes: attrs}, nil
	}
	j := journalEntries{}
	j.key(ctx, in.Key)
	out, err := beside(ctx, c, j, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return c.Client.UpdateItem(ctx, in, optFns...)
	})
	if rec := pendingAudit(ctx); rec != nil && err == nil {
		rec.MarkUnrecorded()
	}
	return out, err
}

func (c journaled) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if pendingAudit(ctx) != nil {
		attrs, err := c.audited(ctx, in.Key, in.ReturnValues,
			types.TransactWriteItem{Delete: &types.Delete{TableName: in.TableName, Key: in.Key, ConditionExpression: in.ConditionExpression,
				ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}})
		if err != nil {
			return nil, err
		}
		return &dynamodb.DeleteItemOutput{Attributes: attrs}, nil
	}
	j := journalEntries{}
	j.key(ctx, in.Key)
	return beside(ctx, c, j, func(ctx context.Context) (*dynamodb.DeleteItemOutput, error) {
		return c.Client.DeleteItem(ctx, in, optFns...)
	})
}

func (c journaled) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	j := journalEntries{}
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			switch {
			case r.PutRequest != nil:
				j.item(ctx, r.PutRequest.Item)
			case r.DeleteRequest != nil:
				j.key(ctx, r.DeleteRequest.Key)
			}
		}
	}
	out, err := beside(ctx, c, j, func(ctx context.Context) (*dynamodb.BatchWriteItemOutput, error) {
		return c.Client.BatchWriteItem(ctx, in, optFns...)
	})
	if rec := pendingAudit(ctx); rec != nil && err == nil {
		// A batch cannot hold the event: the request's next write or its
		// completion writes it.
		rec.MarkUnrecorded()
	}
	return out, err
}

func (c journaled) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	rec := pendingAudit(ctx)
	if rec == nil {
		return c.transact(ctx, in, optFns...)
	}
	tx, n, err := c.withAudit(ctx, rec, in)
	if err != nil {
		return nil, err
	}
	out, err := c.transact(ctx, tx, optFns...)
	if err != nil {
		return out, err
	}
	if n == 0 {
		// A transaction of 100 actions has no room for the event.
		return out, c.auditAfter(ctx, rec)
	}
	rec.MarkWritten()
	return out, nil
}

// transact journals a transaction's writes (in it when it has room).
func (c journaled) transact(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	j := journalEntries{}
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			j.item(ctx, it.Put.Item)
		case it.Update != nil:
			j.key(ctx, it.Update.Key)
		case it.Delete != nil:
			j.key(ctx, it.Delete.Key)
		}
	}
	items := j.items(c.now())
	if len(items) == 0 || ctx.Value(unjournaledKey{}) != nil {
		return c.Client.TransactWriteItems(ctx, in, optFns...)
	}
	// A transaction sent with a ClientRequestToken must be the same
	// request when retried; the journal's items (a new write id and time
	// each attempt) go beside it then.
	if len(in.TransactItems)+len(items) <= ddb.MaxTransactItems && in.ClientRequestToken == nil {
		// In the transaction: the journal is written exactly when the
		// change is. The caller's actions keep their indexes (a
		// cancellation's reasons are read by index).
		tx := *in
		tx.TransactItems = append(append([]types.TransactWriteItem(nil), in.TransactItems...), journalPuts(c.table, items)...)
		return c.Client.TransactWriteItems(ctx, &tx, optFns...)
	}
	return beside(ctx, c, j, func(ctx context.Context) (*dynamodb.TransactWriteItemsOutput, error) {
		return c.Client.TransactWriteItems(ctx, in, optFns...)
	})
}

// journalWritten journals, after the write, a member whose collections
// were not known before it: the item a write returned (ALL_NEW) names
// them. For a write made without the member's collection at hand (a task
// claimed by its id alone); the journal item follows the write by one
// round trip instead of going beside it.
func (s *Table) journalWritten(ctx context.Context, it map[string]types.AttributeValue) error {
	c, ok := s.db.(journaled)
	if !ok || ctx.Value(unjournaledKey{}) != nil {
		return nil
	}
	j := journalEntries{}
	j.add(listsOfItem(it), strAttr(it, AttrPK), strAttr(it, AttrSK))
	items := j.items(c.now())
	if len(items) == 0 {
		return nil
	}
	if err := c.put(ctx, items); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

func journalPuts(table string, items []map[string]types.AttributeValue) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, len(items))
	for i, it := range items {
		out[i] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: it}}
	}
	return out
}

func strAttr(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
