package store

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
)

// Every collection the API lists is kept in its stored order under one
// key of the table or of an index: a partition that holds the collection
// and nothing else of it (a sort-key prefix tells it from other items),
// and a sort key whose order is the collection's. Created-ordered
// collections use a sort key of the creation time (timeLayout, fixed
// width, so string order is time order) and the id. A member's position in
// its collection is its sort key without the prefix.
func createdPosition(created time.Time, id string) string {
	return created.UTC().Format(timeLayout) + "#" + id
}

var positionRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z#[a-z0-9]{1,64}$`)

// ValidPosition reports whether p has the shape of a position of a
// created-ordered collection. Positions come back from clients inside
// cursors; only the sort key is taken from them (the partition is always
// the caller's), so a changed cursor can only move within the caller's own
// collection.
func ValidPosition(p string) bool { return positionRE.MatchString(p) }

// collection describes where one collection is kept and in which order.
type collection struct {
	op string
	// index is "" for the table's own key, or IndexGSI1, IndexGSI2.
	index        string
	pk, skPrefix string
	// tableKey is the table key of the member at position pos (the
	// base-table half of an index's ExclusiveStartKey); nil for a
	// collection kept in the table's own key.
	tableKey func(pos string) (pk, sk string)
	// lo and hi bound the positions read, lo inclusive, hi exclusive ("":
	// unbounded); for created-ordered collections both are creation times
	// (timeLayout), so a bound falls before every member created at that
	// time.
	lo, hi string
}

// keyNames are the partition and sort key attributes of index ix.
func keyNames(ix string) (string, string) {
	switch ix {
	case "":
		return AttrPK, AttrSK
	case IndexGSI2:
		return AttrGSI2PK, AttrGSI2SK
	case IndexGSI3:
		return AttrGSI3PK, AttrGSI3SK
	}
	return AttrGSI1PK, AttrGSI1SK
}

// page reads up to n members of the collection after position after (""
// from the beginning; desc reverses the order): the items, their
// positions, and whether DynamoDB stopped before the partition's end.
// It is the only way the store reads a listed collection (docs/api.md,
// Collections): one Query of at most n items.
//
// A collection kept in an index also reads, in parallel, the collection's
// journal of recent writes (journal.go) and merges the members it names
// (mergeRecent): the index may not show a write of the last seconds yet.
func (s *Table) page(ctx context.Context, g collection, after string, desc bool, n int) ([]map[string]types.AttributeValue, []string, bool, error) {
	// A position outside the bounds (a cursor kept while the bounds
	// changed) is either before everything in them or past their end:
	// DynamoDB refuses a start key outside the key condition.
	if after != "" {
		before, past := g.lo != "" && after < g.lo, g.hi != "" && after >= g.hi
		switch {
		case desc && before, !desc && past:
			return nil, nil, false, nil
		case before, past:
			after = ""
		}
	}
	pkName, skName := keyNames(g.index)
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :sk)"),
		ExpressionAttributeNames: map[string]string{"#pk": pkName, "#sk": skName},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(g.pk), ":sk": avStr(g.skPrefix),
		},
		ScanIndexForward: aws.Bool(!desc),
		Limit:            aws.Int32(int32(max(n, 1))),
	}
	if g.index != "" {
		in.IndexName = aws.String(g.index)
	} else {
		// The table's own key can be read consistently (an index cannot):
		// a member written just before is listed.
		in.ConsistentRead = aws.Bool(true)
	}
	if g.skPrefix == "" {
		in.KeyConditionExpression = aws.String("#pk = :pk")
		delete(in.ExpressionAttributeValues, ":sk")
		delete(in.ExpressionAttributeNames, "#sk")
	}
	if g.lo != "" || g.hi != "" {
		// prefix+hi sorts before every key of a member created at hi;
		// prefix+"~" after every key of the collection.
		hi := g.skPrefix + "~"
		if g.hi != "" {
			hi = g.skPrefix + g.hi
		}
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi")
		in.ExpressionAttributeNames = map[string]string{"#pk": pkName, "#sk": skName}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":pk": avStr(g.pk), ":lo": avStr(g.skPrefix + g.lo), ":hi": avStr(hi)}
	}
	if after != "" {
		in.ExclusiveStartKey = map[string]types.AttributeValue{pkName: avStr(g.pk), skName: avStr(g.skPrefix + after)}
		if g.index != "" {
			pk, sk := g.tableKey(after)
			in.ExclusiveStartKey[AttrPK], in.ExclusiveStartKey[AttrSK] = avStr(pk), avStr(sk)
		}
	}
	if g.index == "" {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, nil, false, wrap(g.op, err)
		}
		return out.Items, positions(out.Items, skName, g.skPrefix), len(out.LastEvaluatedKey) > 0, nil
	}
	var out *dynamodb.QueryOutput
	var recent []map[string]types.AttributeValue
	eg, gctx := errgroup.WithContext(ctx)
	eg.Go(func() (err error) { out, err = s.db.Query(gctx, in); return err })
	eg.Go(func() (err error) { recent, err = s.recent(gctx, g.pk); return err })
	if err := eg.Wait(); err != nil {
		return nil, nil, false, wrap(g.op, err)
	}
	items, pos, more := out.Items, positions(out.Items, skName, g.skPrefix), len(out.LastEvaluatedKey) > 0
	if len(recent) == 0 {
		return items, pos, more, nil
	}
	fresh, err := ddb.BatchGetConsistent(ctx, s.db, s.table, recent)
	if err != nil {
		return nil, nil, false, wrap(g.op+": recent writes", err)
	}
	items, pos, more, emptied := mergeRecent(g, after, desc, n, items, pos, more, recent, fresh)
	if emptied != "" {
		// Every member the index returned is gone, and more follow: read
		// on from the last of them rather than answer an empty page that
		// claims more (rare: only deletes of the whole page within the
		// index's lag).
		return s.page(ctx, g, emptied, desc, n)
	}
	return items, pos, more, nil
}

func positions(items []map[string]types.AttributeValue, skName, prefix string) []string {
	pos := make([]string, len(items))
	for i, it := range items {
		pos[i] = strings.TrimPrefix(strAttr(it, skName), prefix)
	}
	return pos
}

// recent reads the keys of the members the journal of collection list
// names within JournalWindow, newest first, at most journalMembersLimit
// of them (from at most journalReadLimit journal items).
func (s *Table) recent(ctx context.Context, list string) ([]map[string]types.AttributeValue, error) {
	since := fmt.Sprintf("%013d", s.now().Add(-JournalWindow).UnixMilli())
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk > :since"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK, "#sk": AttrSK, "#m": attrJournalMembers},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(journalPK(list)), ":since": avStr(since),
		},
		ProjectionExpression: aws.String("#m"),
		ConsistentRead:       aws.Bool(true),
		ScanIndexForward:     aws.Bool(false),
		Limit:                aws.Int32(journalReadLimit),
	})
	if err != nil {
		return nil, fmt.Errorf("read recent writes: %w", err)
	}
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	for _, it := range out.Items {
		ss, _ := it[attrJournalMembers].(*types.AttributeValueMemberSS)
		if ss == nil {
			continue
		}
		for _, m := range ss.Value {
			if seen[m] || len(keys) == journalMembersLimit {
				continue
			}
			seen[m] = true
			pk, sk, _ := strings.Cut(m, "\n")
			keys = append(keys, key(pk, sk))
		}
	}
	return keys, nil
}

// mergeRecent brings an index page up to date with the fresh items of the
// members the journal named (recent: their keys; fresh: those that exist,
// read consistently). A named member is taken out of the page; its fresh
// item is put back at its position if it still belongs to the collection
// and the position falls within what the page covers: after the cursor's
// position and, when more follow, not past the page's last position (a
// later one is the next page's). The page keeps at most n members in its
// order; one it pushes out is the next page's. emptied is the position to
// read on from when the merge removed every member while more follow.
func mergeRecent(g collection, after string, desc bool, n int, items []map[string]types.AttributeValue, pos []string, more bool,
	recent, fresh []map[string]types.AttributeValue) (_ []map[string]types.AttributeValue, _ []string, _ bool, emptied string) {
	pkName, skName := keyNames(g.index)
	named := map[string]bool{}
	for _, k := range recent {
		named[strAttr(k, AttrPK)+"\n"+strAttr(k, AttrSK)] = true
	}
	last := ""
	if more && len(pos) > 0 {
		last = pos[len(pos)-1]
	}
	before := func(a, b string) bool { // a comes before b in the page's order
		if desc {
			return a > b
		}
		return a < b
	}
	type member struct {
		it  map[string]types.AttributeValue
		pos string
	}
	var merged []member
	for i, it := range items {
		if !named[strAttr(it, AttrPK)+"\n"+strAttr(it, AttrSK)] {
			merged = append(merged, member{it, pos[i]})
		}
	}
	for _, it := range fresh {
		sk := strAttr(it, skName)
		if strAttr(it, pkName) != g.pk || !strings.HasPrefix(sk, g.skPrefix) {
			continue // moved out of the collection (or never in it)
		}
		p := strings.TrimPrefix(sk, g.skPrefix)
		switch {
		case g.lo != "" && p < g.lo, g.hi != "" && p >= g.hi:
			continue
		case after != "" && !before(after, p):
			continue
		case more && (last == "" || before(last, p)):
			continue
		}
		merged = append(merged, member{it, p})
	}
	if len(merged) == 0 && more && last != "" {
		return nil, nil, false, last
	}
	sort.SliceStable(merged, func(i, j int) bool { return before(merged[i].pos, merged[j].pos) })
	if len(merged) > n {
		merged, more = merged[:n], true
	}
	items, pos = make([]map[string]types.AttributeValue, len(merged)), make([]string, len(merged))
	for i, m := range merged {
		items[i], pos[i] = m.it, m.pos
	}
	return items, pos, more, ""
}

// pageOf is page with the items unmarshalled.
func pageOf[T any](ctx context.Context, s *Table, g collection, after string, desc bool, n int) ([]T, []string, bool, error) {
	items, pos, more, err := s.page(ctx, g, after, desc, n)
	if err != nil {
		return nil, nil, false, err
	}
	out, err := unmarshalAll[T](items)
	if err != nil {
		return nil, nil, false, err
	}
	return out, pos, more, nil
}

// idOf is the id at the end of a created position.
func idOf(pos string) string {
	_, id, _ := strings.Cut(pos, "#")
	return id
}
