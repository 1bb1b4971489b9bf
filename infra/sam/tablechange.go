package sam

import (
	"errors"
	"fmt"
	"slices"
)

// CheckTableChange tells whether CloudFormation can take a deployed table
// from released to next in one stack update, the way DynamoDB applies it:
// one UpdateTable creates or deletes at most one global secondary index; an
// index's key schema and projection, the table's key schema, a key
// attribute's type and the local secondary indexes cannot change in
// place (each would need the index or the table deleted and created
// again). Every violation is in the error.
func CheckTableChange(released, next Table) error {
	var errs []error
	if !slices.Equal(released.KeySchema, next.KeySchema) {
		errs = append(errs, fmt.Errorf("table %s: the key schema changes from %v to %v: that replaces the table (a new, empty one)",
			next.LogicalID, released.KeySchema, next.KeySchema))
	}
	types := map[string]string{}
	for _, d := range released.AttributeDefinitions {
		types[d.AttributeName] = d.AttributeType
	}
	for _, d := range next.AttributeDefinitions {
		if was, ok := types[d.AttributeName]; ok && was != d.AttributeType {
			errs = append(errs, fmt.Errorf("table %s: attribute %s changes type from %s to %s: every index keyed on it would have to be deleted and created again",
				next.LogicalID, d.AttributeName, was, d.AttributeType))
		}
	}
	if !indexesEqual(released.LocalSecondaryIndexes, next.LocalSecondaryIndexes) {
		errs = append(errs, fmt.Errorf("table %s: the local secondary indexes change: they exist only as the table was created", next.LogicalID))
	}
	before := map[string]Index{}
	for _, g := range released.GlobalSecondaryIndexes {
		before[g.IndexName] = g
	}
	var added, removed []string
	for _, g := range next.GlobalSecondaryIndexes {
		was, ok := before[g.IndexName]
		delete(before, g.IndexName)
		switch {
		case !ok:
			added = append(added, g.IndexName)
		case !slices.Equal(was.KeySchema, g.KeySchema):
			errs = append(errs, fmt.Errorf("table %s: index %s changes its key schema from %v to %v: that is a delete and a create; remove it in one deployment and add the new one under a new name in the next",
				next.LogicalID, g.IndexName, was.KeySchema, g.KeySchema))
		case !projectionsEqual(was.Projection, g.Projection):
			errs = append(errs, fmt.Errorf("table %s: index %s changes its projection from %+v to %+v: that is a delete and a create; remove it in one deployment and add the new one under a new name in the next",
				next.LogicalID, g.IndexName, was.Projection, g.Projection))
		}
	}
	for name := range before {
		removed = append(removed, name)
	}
	slices.Sort(removed)
	if len(added)+len(removed) > 1 {
		errs = append(errs, fmt.Errorf("table %s: one deployment adds indexes %v and removes %v: DynamoDB creates or deletes one global secondary index per table update, so ship them one deployment each (docs/deploy.md)",
			next.LogicalID, added, removed))
	}
	return errors.Join(errs...)
}

func indexesEqual(a, b []Index) bool {
	return slices.EqualFunc(a, b, func(x, y Index) bool {
		return x.IndexName == y.IndexName && slices.Equal(x.KeySchema, y.KeySchema) && projectionsEqual(x.Projection, y.Projection)
	})
}

// projectionsEqual compares projections as DynamoDB does: the non-key
// attributes of INCLUDE as a set.
func projectionsEqual(a, b Projection) bool {
	if a.ProjectionType != b.ProjectionType {
		return false
	}
	x, y := slices.Clone(a.NonKeyAttributes), slices.Clone(b.NonKeyAttributes)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
