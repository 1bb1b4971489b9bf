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

// Collections that are listed page by page keep their members in GSI1 in
// creation order: GSI1SK is a prefix, the creation time (timeLayout, fixed
// width, so string order is time order) and the id. A member's position
// in its collection is that key without the prefix.
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

// gsiPage describes one created-ordered GSI1 collection.
type gsiPage struct {
	op, pk, skPrefix string
	// tableKey is the table key of the member with the given id (the
	// base-table half of an index's ExclusiveStartKey).
	tableKey func(id string) (pk, sk string)
	// lo and hi bound the positions read, lo inclusive, hi exclusive ("":
	// unbounded); both are creation times (timeLayout), so a bound falls
	// before every member created at that time.
	lo, hi string
}

// page reads up to n members of the collection after position after (""
// from the beginning; desc reverses the order): the items, their
// positions, and whether DynamoDB stopped before the partition's end.
func (s *Store) page(ctx context.Context, g gsiPage, after string, desc bool, n int) ([]map[string]types.AttributeValue, []string, bool, error) {
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
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		IndexName:              aws.String(IndexGSI1),
		KeyConditionExpression: aws.String("GSI1PK = :pk AND begins_with(GSI1SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(g.pk), ":sk": str(g.skPrefix),
		},
		ScanIndexForward: aws.Bool(!desc),
		Limit:            aws.Int32(int32(max(n, 1))),
	}
	if g.lo != "" || g.hi != "" {
		// prefix+hi sorts before every key of a member created at hi;
		// prefix+"~" after every key of the collection.
		hi := g.skPrefix + "~"
		if g.hi != "" {
			hi = g.skPrefix + g.hi
		}
		in.KeyConditionExpression = aws.String("GSI1PK = :pk AND GSI1SK BETWEEN :lo AND :hi")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":pk": str(g.pk), ":lo": str(g.skPrefix + g.lo), ":hi": str(hi)}
	}
	if after != "" {
		_, id, _ := strings.Cut(after, "#")
		pk, sk := g.tableKey(id)
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			AttrPK: str(pk), AttrSK: str(sk), AttrGSI1PK: str(g.pk), AttrGSI1SK: str(g.skPrefix + after),
		}
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, nil, false, wrap(g.op, err)
	}
	pos := make([]string, len(out.Items))
	for i, it := range out.Items {
		if sk, ok := it[AttrGSI1SK].(*types.AttributeValueMemberS); ok {
			pos[i] = strings.TrimPrefix(sk.Value, g.skPrefix)
		}
	}
	return out.Items, pos, len(out.LastEvaluatedKey) > 0, nil
}
