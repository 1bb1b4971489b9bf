package store

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
func (s *Store) page(ctx context.Context, g collection, after string, desc bool, n int) ([]map[string]types.AttributeValue, []string, bool, error) {
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
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, nil, false, wrap(g.op, err)
	}
	pos := make([]string, len(out.Items))
	for i, it := range out.Items {
		if sk, ok := it[skName].(*types.AttributeValueMemberS); ok {
			pos[i] = strings.TrimPrefix(sk.Value, g.skPrefix)
		}
	}
	return out.Items, pos, len(out.LastEvaluatedKey) > 0, nil
}

// pageOf is page with the items unmarshalled.
func pageOf[T any](ctx context.Context, s *Store, g collection, after string, desc bool, n int) ([]T, []string, bool, error) {
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
