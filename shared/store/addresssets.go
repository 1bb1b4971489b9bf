package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// Address sets live in one partition each: the set item, one item per
// entry and one per set that includes it. Entries with an expiry are also
// indexed by expiry time in GSI1 (spread over addrExpiryShards partitions)
// for the expiry sweep. Every change to a set's entries or inclusions is a
// transaction conditioned on the set's version, so concurrent writers (the
// API, the edge's dynamic additions, the sweep) never lose each other's
// changes. docs/data-model.md lists the keys and access patterns.
func addrSetPK(id string) string        { return "ADDRSET#" + id }
func addrEntrySK(prefix string) string  { return prefixAddrEntry + prefix }
func addrIncludedBySK(id string) string { return prefixAddrIncludedBy + id }
func addrExpiryGSI(shard uint32) string { return fmt.Sprintf("ADDREXP#%d", shard) }
func addrEntriesGSI(set string) string  { return "ADDRENTRIES#" + set }
func addrExpiryGSISK(e domain.AddressEntry) string {
	return e.Expiry.UTC().Format(timeLayout) + "#" + e.Set + "#" + e.Prefix
}

const (
	skAddrSet = "ADDRSET"
	// addrSetsGSISKPrefix starts the GSI1 sort key of a set in its
	// account's collection, which is listed page by page in creation order
	// (see page.go).
	addrSetsGSISKPrefix  = "ADDRSET#"
	prefixAddrEntry      = "ENTRY#"
	prefixAddrIncludedBy = "INCLUDEDBY#"
	pkAddrSweep          = "ADDREXPIRY"
	skAddrSweep          = "SWEEP"
	// addrExpiryShards spreads the expiry index over GSI partitions, so
	// that many entries expiring together do not make one hot partition.
	addrExpiryShards = 8
)

func addrExpiryShard(set, prefix string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(set + "#" + prefix))
	return h.Sum32() % addrExpiryShards
}

// AddressSetState is a set's partition: the set, its entries (expired ones
// too, until the sweep removes them) and the ids of the sets including it.
type AddressSetState struct {
	Set        domain.AddressSet
	Entries    []domain.AddressEntry
	IncludedBy []string
}

func addrSetKey(s domain.AddressSet) keyAttrs {
	return keyAttrs{PK: addrSetPK(s.ID), SK: skAddrSet, GSI1PK: addressSetsGSI(s.Account), GSI1SK: addrSetsGSISKPrefix + createdPosition(s.Created, s.ID), Entity: "address_set"}
}

func addrEntryKey(e domain.AddressEntry) (keyAttrs, error) {
	k := keyAttrs{PK: addrSetPK(e.Set), SK: addrEntrySK(e.Prefix), Entity: "address_entry"}
	// The table's sort key orders networks as strings ("10.0.0.0/8"
	// before "9.0.0.0/8"); GSI2 keeps the set's entries in address order,
	// the order /addresses pages in.
	pos, err := AddressPosition(e.Prefix)
	if err != nil {
		return k, fmt.Errorf("address entry %s/%s: %w", e.Set, e.Prefix, err)
	}
	k.GSI2PK, k.GSI2SK = addrEntriesGSI(e.Set), pos
	if e.Expiry != nil {
		k.GSI1PK, k.GSI1SK = addrExpiryGSI(addrExpiryShard(e.Set, e.Prefix)), addrExpiryGSISK(e)
	}
	return k, nil
}

func addrEntryItem(e domain.AddressEntry) (map[string]types.AttributeValue, error) {
	k, err := addrEntryKey(e)
	if err != nil {
		return nil, err
	}
	return item(k, e)
}

// GetAddressSet reads a set's partition. A set of another account is
// domain.ErrNotFound, like a missing one. Consistent, as every base-table
// read.
func (s *AddressSets) GetAddressSet(ctx context.Context, account, id string) (AddressSetState, error) {
	st, err := s.AddressSetByID(ctx, id)
	if err != nil {
		return AddressSetState{}, err
	}
	if st.Set.Account != account {
		return AddressSetState{}, domain.ErrNotFound
	}
	return st, nil
}

// AddressSetByID reads a set's partition whatever its account (the
// aggregator's dynamic additions and the sweep, which act for the edge).
func (s *AddressSets) AddressSetByID(ctx context.Context, id string) (AddressSetState, error) {
	items, err := s.query(ctx, "read address set", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(addrSetPK(id))},
	}, 0)
	if err != nil {
		return AddressSetState{}, err
	}
	var st AddressSetState
	found := false
	for _, it := range items {
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		if sk == nil {
			continue
		}
		switch {
		case sk.Value == skAddrSet:
			if err := attributevalue.UnmarshalMap(it, &st.Set); err != nil {
				return AddressSetState{}, fmt.Errorf("read address set %s: %w", id, err)
			}
			found = true
		case strings.HasPrefix(sk.Value, prefixAddrEntry):
			var e domain.AddressEntry
			if err := attributevalue.UnmarshalMap(it, &e); err != nil {
				return AddressSetState{}, fmt.Errorf("read address set %s: %w", id, err)
			}
			st.Entries = append(st.Entries, e)
		case strings.HasPrefix(sk.Value, prefixAddrIncludedBy):
			st.IncludedBy = append(st.IncludedBy, strings.TrimPrefix(sk.Value, prefixAddrIncludedBy))
		}
	}
	if !found {
		return AddressSetState{}, domain.ErrNotFound
	}
	return st, nil
}

// GetAddressSetItem reads only the set item (no entries).
func (s *AddressSets) GetAddressSetItem(ctx context.Context, account, id string) (domain.AddressSet, error) {
	var a domain.AddressSet
	if err := s.getItem(ctx, "get address set", addrSetPK(id), skAddrSet, &a); err != nil {
		return domain.AddressSet{}, err
	}
	if a.Account != account {
		return domain.AddressSet{}, domain.ErrNotFound
	}
	return a, nil
}

// GetAddressSetItems reads set items by id with strongly consistent reads
// (the inclusion-cycle check walks them); missing ids are absent.
func (s *AddressSets) GetAddressSetItems(ctx context.Context, ids []string) ([]domain.AddressSet, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = key(addrSetPK(id), skAddrSet)
	}
	items, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys)
	if err != nil {
		return nil, wrap("get address sets", err)
	}
	return unmarshalAll[domain.AddressSet](items)
}

// PageAddressSets reads at most n address sets of account after position
// after in creation order (desc: newest first), with their positions and
// whether more may follow: one Query of n items.
func (s *AddressSets) PageAddressSets(ctx context.Context, account, after string, desc bool, n int) ([]domain.AddressSet, []string, bool, error) {
	return pageOf[domain.AddressSet](ctx, s.Table, collection{op: "list address sets", index: IndexGSI1, pk: addressSetsGSI(account), skPrefix: addrSetsGSISKPrefix,
		tableKey: func(pos string) (string, string) { return addrSetPK(idOf(pos)), skAddrSet }}, after, desc, n)
}

// AddressPosition is an entry's position in its set's address order (the
// sort key of GSI2 ADDRENTRIES#<set>): the family (4 or 6), the address
// in fixed-width hex and the prefix length in three digits, so that byte
// order is address order (IPv4 first), then shorter prefix first. prefix
// is a network as entries are kept ("10.0.0.0/8", "192.0.2.1/32").
func AddressPosition(prefix string) (string, error) {
	p, err := netip.ParsePrefix(prefix)
	if err != nil || p.Addr().Zone() != "" || p.Masked() != p {
		return "", fmt.Errorf("%q is not a network in canonical form", prefix)
	}
	fam := "6"
	if p.Addr().Is4() {
		fam = "4"
	}
	return fmt.Sprintf("%s%x/%03d", fam, p.Addr().AsSlice(), p.Bits()), nil
}

// addressPrefix is the network at an AddressPosition, as the entry's
// table sort key holds it; ok is false for anything AddressPosition does
// not make.
func addressPrefix(pos string) (string, bool) {
	fam, rest, ok := strings.Cut(pos, "/")
	if !ok || len(fam) < 1 || len(rest) != 3 {
		return "", false
	}
	raw, err := hex.DecodeString(fam[1:])
	if err != nil {
		return "", false
	}
	var a netip.Addr
	switch {
	case fam[0] == '4' && len(raw) == 4:
		a = netip.AddrFrom4([4]byte(raw))
	case fam[0] == '6' && len(raw) == 16:
		a = netip.AddrFrom16([16]byte(raw))
	default:
		return "", false
	}
	bits, err := strconv.Atoi(rest)
	if err != nil {
		return "", false
	}
	p := netip.PrefixFrom(a, bits)
	if !p.IsValid() {
		return "", false
	}
	if again, err := AddressPosition(p.String()); err != nil || again != pos {
		return "", false
	}
	return p.String(), true
}

// ValidAddressPosition reports whether p is an AddressPosition (it comes
// back from clients inside cursors).
func ValidAddressPosition(p string) bool {
	_, ok := addressPrefix(p)
	return ok
}

// PageAddressEntries reads at most n entries of set after position after
// (AddressPosition; "" from the first) in address order (desc: reversed),
// expired ones included, with their positions and whether more may
// follow: one Query of GSI2 ADDRENTRIES#<set> (eventually consistent, as
// every index read). It does not check the set's account: the caller
// reads the set item for that.
func (s *AddressSets) PageAddressEntries(ctx context.Context, set, after string, desc bool, n int) ([]domain.AddressEntry, []string, bool, error) {
	return pageOf[domain.AddressEntry](ctx, s.Table, collection{op: "list address entries", index: IndexGSI2, pk: addrEntriesGSI(set),
		tableKey: func(pos string) (string, string) {
			p, _ := addressPrefix(pos)
			return addrSetPK(set), addrEntrySK(p)
		}}, after, desc, n)
}

// AddressSetRef is a set and the version a write saw it at.
type AddressSetRef struct {
	ID      string
	Version int
}

// AddressSetWrite is one atomic change of a set: its new state (Version
// already incremented; Create for a new set), the entry items to write and
// delete, inclusions added and removed (AddInclusions carry the version the
// cycle check saw), other sets the cycle check walked (Checked: their
// inclusions must not have changed), and the metrics event of the change.
type AddressSetWrite struct {
	Set              domain.AddressSet
	Create           bool
	PutEntries       []domain.AddressEntry
	DeleteEntries    []string // prefixes
	AddInclusions    []AddressSetRef
	RemoveInclusions []string
	Checked          []AddressSetRef
	Event            *MetricEvent
	// Quota is the account's allowance of address sets (CheckAllowance),
	// enforced by a create.
	Quota domain.Quota
}

// Items is the number of transaction actions the write takes.
func (w AddressSetWrite) Items() int {
	n := 1 + len(w.PutEntries) + len(w.DeleteEntries) + 2*len(w.AddInclusions) + 2*len(w.RemoveInclusions) + len(w.Checked)
	if w.Event != nil {
		n++
	}
	if w.Create {
		n++ // the account's usage count
	}
	return n
}

// ErrAddressSetTooLarge: a write needs more than one transaction holds.
var ErrAddressSetTooLarge = errors.New("the change needs more than one transaction")

// WriteAddressSet applies a write in one transaction. A concurrent change
// of the set or of a set it checked is domain.ErrChanged: re-read and
// redo.
func (s *AddressSets) WriteAddressSet(ctx context.Context, w AddressSetWrite) error {
	ctx = withLists(ctx, addrSetPK(w.Set.ID), skAddrSet, addressSetsGSI(w.Set.Account))
	if w.Items() > ddb.MaxTransactItems {
		return fmt.Errorf("address set %s: %d actions: %w", w.Set.ID, w.Items(), ErrAddressSetTooLarge)
	}
	var ops []types.TransactWriteItem
	if w.Create {
		p, err := s.put(addrSetKey(w.Set), w.Set)
		if err != nil {
			return err
		}
		ops = append(ops, p)
	} else {
		ops = append(ops, types.TransactWriteItem{Update: s.addrSetUpdate(w.Set)})
	}
	entryOps, err := s.addrEntryOps(w.Set.ID, w.PutEntries, w.DeleteEntries)
	if err != nil {
		return err
	}
	ops = append(ops, entryOps...)
	now := w.Set.Updated
	// The sets whose includers count changes are members of the same
	// account's list (an inclusion is refused across accounts).
	for _, inc := range w.AddInclusions {
		ctx = withLists(ctx, addrSetPK(inc.ID), skAddrSet, addressSetsGSI(w.Set.Account))
	}
	for _, id := range w.RemoveInclusions {
		ctx = withLists(ctx, addrSetPK(id), skAddrSet, addressSetsGSI(w.Set.Account))
	}
	for _, inc := range w.AddInclusions {
		ops = append(ops, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(s.table), Key: key(addrSetPK(inc.ID), skAddrSet),
			UpdateExpression:         aws.String("ADD #inc :one"),
			ConditionExpression:      aws.String("attribute_exists(PK) AND #acct = :acct AND #ver = :v"),
			ExpressionAttributeNames: addrNames(),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":one": avNum(1), ":acct": avStr(w.Set.Account), ":v": avNum(int64(inc.Version)),
			},
		}})
		m, err := item(keyAttrs{PK: addrSetPK(inc.ID), SK: addrIncludedBySK(w.Set.ID), Entity: "address_set_includer"},
			struct {
				Includer string    `dynamodbav:"includer"`
				Created  time.Time `dynamodbav:"created"`
			}{w.Set.ID, now})
		if err != nil {
			return err
		}
		ops = append(ops, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: m}})
	}
	ops = append(ops, s.addrUninclude(w.Set.ID, w.RemoveInclusions)...)
	for _, c := range w.Checked {
		ops = append(ops, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(s.table), Key: key(addrSetPK(c.ID), skAddrSet),
			ConditionExpression:       aws.String("#ver = :v"),
			ExpressionAttributeNames:  map[string]string{"#ver": "version"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(int64(c.Version))},
		}})
	}
	if w.Event != nil {
		p, err := s.repos.Metrics.metricEventPut(*w.Event)
		if err != nil {
			return err
		}
		ops = append(ops, p)
	}
	if w.Create {
		q := w.Quota
		q.Kind = domain.ResourceAddressSets
		ops = append(ops, s.usageOp(w.Set.Account, q, 1))
		err := s.transact(ctx, "create address set", ops)
		if txConditionFailedAt(err, len(ops)-1) {
			return domain.QuotaReached(w.Set.Account, q, "as many")
		}
		return addrTxError(err)
	}
	return addrTxError(s.transact(ctx, "write address set", ops))
}

func addrTxError(err error) error {
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) && tx.HasReason(ddb.ReasonConditionalCheckFailed) {
		return domain.ErrChanged
	}
	return err
}

// addrSetUpdate rewrites the set's own attributes (never includers) if
// the set is still at the version the write started from.
func (s *AddressSets) addrSetUpdate(a domain.AddressSet) *types.Update {
	names := map[string]string{"#n": "name", "#t": "type", "#d": "description", "#i": "inclusions", "#dom": "domains",
		"#ver": "version", "#cnt": "entry_count", "#upd": "updated", "#acct": "account"}
	values := map[string]types.AttributeValue{
		":n": avStr(a.Name), ":t": avStr(a.Type), ":v": avNum(int64(a.Version)), ":prev": avNum(int64(a.Version - 1)),
		":c": avNum(int64(a.EntryCount)), ":u": avStr(a.Updated.UTC().Format(time.RFC3339Nano)), ":acct": avStr(a.Account),
	}
	set := []string{"#n = :n", "#t = :t", "#ver = :v", "#cnt = :c", "#upd = :u"}
	var remove []string
	if a.Description != "" {
		set = append(set, "#d = :d")
		values[":d"] = avStr(a.Description)
	} else {
		remove = append(remove, "#d")
	}
	if len(a.Inclusions) > 0 {
		l := make([]types.AttributeValue, len(a.Inclusions))
		for i, id := range a.Inclusions {
			l[i] = avStr(id)
		}
		set = append(set, "#i = :i")
		values[":i"] = &types.AttributeValueMemberL{Value: l}
	} else {
		remove = append(remove, "#i")
	}
	if len(a.Domains) > 0 {
		l := make([]types.AttributeValue, len(a.Domains))
		for i, d := range a.Domains {
			l[i] = avStr(d)
		}
		set = append(set, "#dom = :dom")
		values[":dom"] = &types.AttributeValueMemberL{Value: l}
	} else {
		remove = append(remove, "#dom")
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return &types.Update{
		TableName: aws.String(s.table), Key: key(addrSetPK(a.ID), skAddrSet),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("#ver = :prev AND #acct = :acct"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

func (s *AddressSets) addrEntryOps(set string, puts []domain.AddressEntry, deletes []string) ([]types.TransactWriteItem, error) {
	ops := make([]types.TransactWriteItem, 0, len(puts)+len(deletes))
	for _, e := range puts {
		m, err := addrEntryItem(e)
		if err != nil {
			return nil, err
		}
		ops = append(ops, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: m}})
	}
	for _, p := range deletes {
		ops = append(ops, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(addrSetPK(set), addrEntrySK(p))}})
	}
	return ops, nil
}

func (s *AddressSets) addrUninclude(set string, from []string) []types.TransactWriteItem {
	var ops []types.TransactWriteItem
	for _, id := range from {
		ops = append(ops,
			types.TransactWriteItem{Update: &types.Update{
				TableName: aws.String(s.table), Key: key(addrSetPK(id), skAddrSet),
				UpdateExpression:          aws.String("ADD #inc :minus"),
				ConditionExpression:       aws.String("attribute_exists(PK)"),
				ExpressionAttributeNames:  map[string]string{"#inc": "includers"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":minus": avNum(-1)},
			}},
			types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(addrSetPK(id), addrIncludedBySK(set))}},
		)
	}
	return ops
}

// ErrAddressSetIncluded: the set is included by another set.
var ErrAddressSetIncluded = errors.New("the address set is included by another set")

// DeleteAddressSet deletes a set seen at version a.Version, if no set
// includes it, with its inclusion records and the metrics event, in one
// transaction; its entries go in the same transaction when they fit, and
// otherwise right after it (what a failure leaves behind is removed when
// the aggregator processes the event, which has Purge set); a failure
// there is a *CleanupError: the set is deleted all the same.
func (s *AddressSets) DeleteAddressSet(ctx context.Context, a domain.AddressSet, entries []string, ev *MetricEvent) error {
	ctx = withLists(ctx, addrSetPK(a.ID), skAddrSet, addressSetsGSI(a.Account))
	for _, id := range a.Inclusions {
		ctx = withLists(ctx, addrSetPK(id), skAddrSet, addressSetsGSI(a.Account))
	}
	ops := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName: aws.String(s.table), Key: key(addrSetPK(a.ID), skAddrSet),
		ConditionExpression:       aws.String("#ver = :v AND (attribute_not_exists(#inc) OR #inc <= :zero)"),
		ExpressionAttributeNames:  map[string]string{"#ver": "version", "#inc": "includers"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(int64(a.Version)), ":zero": avNum(0)},
	}}}
	ops = append(ops, s.addrUninclude(a.ID, a.Inclusions)...)
	ops = append(ops, s.usageOp(a.Account, domain.Quota{Kind: domain.ResourceAddressSets}, -1))
	if ev != nil {
		p, err := s.repos.Metrics.metricEventPut(*ev)
		if err != nil {
			return err
		}
		ops = append(ops, p)
	}
	inline := len(ops)+len(entries) <= ddb.MaxTransactItems
	if inline {
		e, _ := s.addrEntryOps(a.ID, nil, entries)
		ops = append(ops, e...)
	}
	// A failed condition means the set changed or became included since
	// it was read: the caller re-reads and decides.
	if err := addrTxError(s.transact(ctx, "delete address set", ops)); err != nil {
		return err
	}
	if !inline {
		if err := s.deleteAddrItems(ctx, a.ID, entries); err != nil {
			return &CleanupError{Err: err} // the set is deleted; the purge removes the rest
		}
	}
	return nil
}

func (s *AddressSets) deleteAddrItems(ctx context.Context, set string, prefixes []string) error {
	reqs := make([]types.WriteRequest, len(prefixes))
	for i, p := range prefixes {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(addrSetPK(set), addrEntrySK(p))}}
	}
	return wrap("delete address entries", ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// PurgeAddressSet removes every item left in the partition of a deleted
// set; a set that exists is left alone.
func (s *AddressSets) PurgeAddressSet(ctx context.Context, id string) error {
	items, err := s.query(ctx, "purge address set", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(addrSetPK(id))},
		ProjectionExpression:      aws.String("PK, SK"),
		ConsistentRead:            aws.Bool(true),
	}, 0)
	if err != nil {
		return err
	}
	reqs := make([]types.WriteRequest, 0, len(items))
	for _, it := range items {
		if sk, _ := it[AttrSK].(*types.AttributeValueMemberS); sk != nil && sk.Value == skAddrSet {
			return nil
		}
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK]}}})
	}
	return wrap("purge address set", ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// DueAddressEntries lists entries whose expiry is at or before now, from
// every shard of the expiry index in parallel (up to max per shard, oldest
// first). The index is eventually consistent: callers re-read the set.
func (s *AddressSets) DueAddressEntries(ctx context.Context, now time.Time, max int) ([]domain.AddressEntry, error) {
	var (
		mu  sync.Mutex
		out []domain.AddressEntry
	)
	g, gctx := errgroup.WithContext(ctx)
	for shard := uint32(0); shard < addrExpiryShards; shard++ {
		g.Go(func() error {
			items, err := s.query(gctx, "due address entries", &dynamodb.QueryInput{
				IndexName:              aws.String(IndexGSI1),
				KeyConditionExpression: aws.String("GSI1PK = :pk AND GSI1SK <= :now"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": avStr(addrExpiryGSI(shard)), ":now": avStr(now.UTC().Format(timeLayout) + "#~"),
				},
			}, max)
			var es []domain.AddressEntry
			if err == nil {
				es, err = unmarshalAll[domain.AddressEntry](items)
			}
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			out = append(out, es...)
			return nil
		})
	}
	err := g.Wait()
	return out, err
}

// DeleteOrphanEntries removes entries of a set whose set item is gone.
func (s *AddressSets) DeleteOrphanEntries(ctx context.Context, set string, prefixes []string) error {
	return s.deleteAddrItems(ctx, set, prefixes)
}

// ClaimAddressSweep takes the sweep's lease until now+lease, if no sweep
// holds it and (unless force) the last one ended at least gap ago; ok is
// false otherwise. Sweeps are safe to overlap (every change is
// conditional); the lease only avoids doing the work twice.
func (s *AddressSets) ClaimAddressSweep(ctx context.Context, now time.Time, lease, gap time.Duration, force bool) (bool, error) {
	cond := "(attribute_not_exists(#lease) OR #lease <= :now)"
	values := map[string]types.AttributeValue{":now": avNum(now.UnixMilli()), ":until": avNum(now.Add(lease).UnixMilli()), ":ent": avStr("address_sweep")}
	if !force {
		cond += " AND (attribute_not_exists(#next) OR #next <= :now)"
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(pkAddrSweep, skAddrSweep),
		UpdateExpression:          aws.String("SET #lease = :until, #ent = :ent"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  sweepNames(force),
		ExpressionAttributeValues: values,
	})
	if ddb.IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("claim address sweep", err)
	}
	return true, nil
}

// ReleaseAddressSweep ends the lease; opportunistic sweeps wait until next.
func (s *AddressSets) ReleaseAddressSweep(ctx context.Context, next time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(pkAddrSweep, skAddrSweep),
		UpdateExpression:          aws.String("SET #lease = :zero, #next = :next"),
		ExpressionAttributeNames:  map[string]string{"#lease": "lease_until", "#next": "next_after"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": avNum(0), ":next": avNum(next.UnixMilli())},
	})
	return wrap("release address sweep", err)
}

func sweepNames(force bool) map[string]string {
	n := map[string]string{"#lease": "lease_until", "#ent": "entity"}
	if !force {
		n["#next"] = "next_after"
	}
	return n
}

// addrNames are the attribute names of inclusion updates (placeholders,
// so that no attribute name can clash with a DynamoDB reserved word).
func addrNames() map[string]string {
	return map[string]string{"#inc": "includers", "#acct": "account", "#ver": "version"}
}

// ArmAddressWake records that a wake-up for the expiry sweep will be sent
// for time at, unless one is already pending at or before it; ok says the
// caller must send it. A pending wake-up whose time has passed counts as
// spent (it ran, or its message was lost), so it is replaced.
func (s *AddressSets) ArmAddressWake(ctx context.Context, at, now time.Time) (bool, error) {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(pkAddrSweep, skAddrSweep),
		UpdateExpression:          aws.String("SET #wake = :at, #ent = :ent"),
		ConditionExpression:       aws.String("attribute_not_exists(#wake) OR #wake > :at OR #wake <= :now"),
		ExpressionAttributeNames:  map[string]string{"#wake": "wake_at", "#ent": "entity"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": avNum(at.UnixMilli()), ":now": avNum(now.UnixMilli()), ":ent": avStr("address_sweep")},
	})
	if ddb.IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("arm address expiry wake-up", err)
	}
	return true, nil
}

// NextAddressExpiry is the earliest expiry after now in the expiry index
// (one Limit-1 query per shard, in parallel); ok is false when none is.
func (s *AddressSets) NextAddressExpiry(ctx context.Context, now time.Time) (next time.Time, ok bool, err error) {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for shard := uint32(0); shard < addrExpiryShards; shard++ {
		g.Go(func() error {
			items, qerr := s.query(gctx, "next address expiry", &dynamodb.QueryInput{
				IndexName:              aws.String(IndexGSI1),
				KeyConditionExpression: aws.String("GSI1PK = :pk AND GSI1SK > :now"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": avStr(addrExpiryGSI(shard)), ":now": avStr(now.UTC().Format(timeLayout) + "#~"),
				},
			}, 1)
			var es []domain.AddressEntry
			if qerr == nil {
				es, qerr = unmarshalAll[domain.AddressEntry](items)
			}
			if qerr != nil {
				return qerr
			}
			mu.Lock()
			defer mu.Unlock()
			for _, e := range es {
				if e.Expiry != nil && (!ok || e.Expiry.Before(next)) {
					next, ok = *e.Expiry, true
				}
			}
			return nil
		})
	}
	err = g.Wait()
	return next, ok, err
}
