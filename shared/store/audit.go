package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/audit"
	"cads/shared/ddb"
)

// Audit events (docs/data-model.md, Audit events). An event is listed in
// the partition of the account the change was made in and in that of each
// of its ancestors (AUDIT#<account>, sort key <time>#<id>), so that one
// Query of one partition pages an account's events and its sub-accounts'
// newest first, whatever the history's size.
//
// The record of a write request rides in the request's context (package
// audit). The table client (journaled) adds the event's items to the
// first write that commits under it: to its transaction, or, for a
// single-item write, by making it a transaction of that write and the
// event. So the event exists exactly when the change does, and a crash
// after the commit leaves it (without the answer's status and the change's
// patch, which apigw adds once the handler answered: FinishAudit).

const (
	prefixAudit = "AUDIT#"
	attrAudit   = "e"
	// maxAuditChange bounds the patch or resource an event keeps: larger
	// changes are recorded as truncated (an item holds 400 KB, and an
	// event is stored once per level of the account tree).
	maxAuditChange = 64 << 10
)

func auditPK(account string) string { return prefixAudit + account }

// auditAccount is the account a record's event is in: the installation's
// root account for a request made with a key in no account.
func (c journaled) auditAccount(ctx context.Context, rec *audit.Record) (string, error) {
	if rec.AccountID != "" || c.root == nil {
		return rec.AccountID, nil
	}
	return c.root(ctx)
}

// auditItems are the items of rec's event: one in the partition of its
// account and one in each ancestor's, the account's first.
func (c journaled) auditItems(ctx context.Context, rec *audit.Record) ([]map[string]types.AttributeValue, error) {
	acct, err := c.auditAccount(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	ev := rec.Event
	ev.Account = "/v2/accounts/" + acct
	if len(ev.Patch)+len(ev.Resource) > maxAuditChange {
		ev.Patch, ev.Resource, ev.Truncated = nil, nil, true
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	sk := createdPosition(ev.Time, ev.ID)
	viewers := append([]string{acct}, rec.Ancestors...)
	out := make([]map[string]types.AttributeValue, 0, len(viewers))
	for _, v := range viewers {
		if v == "" || (v == acct && len(out) > 0) {
			continue
		}
		out = append(out, map[string]types.AttributeValue{
			AttrPK: avStr(auditPK(v)), AttrSK: avStr(sk), "entity": avStr("audit_event"),
			"account": avStr(acct), "ancestors": avStr(strings.Join(rec.Ancestors, ",")), attrAudit: avStr(string(body)),
			AttrTTL: avNum(rec.Expires.Unix()),
		})
	}
	return out, nil
}

// pendingAudit is the record whose event the writes made with ctx must
// carry: none once a write committed it.
func pendingAudit(ctx context.Context) *audit.Record {
	rec := audit.From(ctx)
	if rec == nil || rec.Written() {
		return nil
	}
	return rec
}

// audited makes one single-item write (a Put, Update or Delete) a
// transaction with the event of rec, so that neither commits without the
// other. A transaction returns no item, so a write that asked for one
// reads it consistently: the old item before (ALL_OLD), the new one after
// (ALL_NEW: the item as it is right after, which a concurrent write may
// already have changed again: the answer then shows that newer state).
func (c journaled) audited(ctx context.Context, key map[string]types.AttributeValue, rv types.ReturnValue, w types.TransactWriteItem) (map[string]types.AttributeValue, error) {
	get := func() (map[string]types.AttributeValue, error) {
		out, err := c.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		return out.Item, nil
	}
	var attrs map[string]types.AttributeValue
	var err error
	if rv == types.ReturnValueAllOld {
		if attrs, err = get(); err != nil {
			return nil, err
		}
	}
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{w}}); err != nil {
		return nil, err
	}
	switch rv {
	case types.ReturnValueAllNew:
		return get()
	case types.ReturnValueAllOld:
		return attrs, nil
	}
	return nil, nil
}

// withAudit adds the event of rec to a transaction, as far as it has
// room; it returns the transaction and how many of the event's items it
// holds.
func (c journaled) withAudit(ctx context.Context, rec *audit.Record, in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsInput, int, error) {
	items, err := c.auditItems(ctx, rec)
	if err != nil {
		return nil, 0, err
	}
	n := min(len(items), ddb.MaxTransactItems-len(in.TransactItems))
	if n <= 0 {
		return in, 0, nil
	}
	tx := *in
	tx.TransactItems = append(append([]types.TransactWriteItem(nil), in.TransactItems...), journalPuts(c.table, items[:n])...)
	return &tx, n, nil
}

// auditAfter writes the event of rec after a write that could not hold
// it (a full transaction, a batch): the one case where a crash between
// the two loses the event (docs/data-model.md, Audit events).
func (c journaled) auditAfter(ctx context.Context, rec *audit.Record) error {
	items, err := c.auditItems(ctx, rec)
	if err != nil {
		return err
	}
	if err := c.put(ctx, items); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	rec.MarkWritten()
	return nil
}

// FinishAudit completes the event of a request whose writes committed it,
// once the handler answered: the status, the target and the change. The
// items are written whole (the same keys), so a retry or a second call
// changes nothing.
func (s *Audit) FinishAudit(ctx context.Context, rec *audit.Record) error {
	c, ok := s.db.(journaled)
	if !ok {
		return nil
	}
	items, err := c.auditItems(ctx, rec)
	if err != nil {
		return err
	}
	if err := c.put(audit.Without(ctx), items); err != nil {
		return wrap("record audit event", err)
	}
	return nil
}

// DropAudit deletes the event of a request that answered a refusal
// (4xx) after one of its writes committed it: what a refused request
// wrote is bookkeeping it undid or that changes nothing the API shows (a
// deletion mark taken back, a recounted quota), not a change.
func (s *Audit) DropAudit(ctx context.Context, rec *audit.Record) error {
	c, ok := s.db.(journaled)
	if !ok {
		return nil
	}
	items, err := c.auditItems(ctx, rec)
	if err != nil {
		return err
	}
	c.unput(audit.Without(ctx), items)
	return nil
}

// PageAuditEvents reads up to n events listed under account (its own and
// its sub-accounts') from position after, in time order (desc: newest
// first), within [from, to) when set: one consistent Query.
func (s *Audit) PageAuditEvents(ctx context.Context, account string, from, to time.Time, after string, desc bool, n int) ([]audit.Event, []string, bool, error) {
	g := collection{op: "list audit events", pk: auditPK(account)}
	if !from.IsZero() {
		g.lo = from.UTC().Format(timeLayout)
	}
	if !to.IsZero() {
		g.hi = to.UTC().Format(timeLayout)
	}
	items, pos, more, err := s.page(ctx, g, after, desc, n)
	if err != nil {
		return nil, nil, false, err
	}
	out := make([]audit.Event, len(items))
	for i, it := range items {
		if err := json.Unmarshal([]byte(strAttr(it, attrAudit)), &out[i]); err != nil {
			return nil, nil, false, fmt.Errorf("list audit events: %w", err)
		}
		out[i].AccountID = strAttr(it, "account")
		if a := strAttr(it, "ancestors"); a != "" {
			out[i].Ancestors = strings.Split(a, ",")
		}
	}
	return out, pos, more, nil
}
