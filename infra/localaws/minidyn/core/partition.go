package core

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md): it lets a
// Query read only the keys of the partition it names, as DynamoDB does,
// instead of walking (and evaluating) every key of the table or index.

import (
	"fmt"
	"sort"

	"github.com/truora/minidyn/interpreter/language"
	"github.com/truora/minidyn/types"
)

// queryPartition returns the key string of the partition a Query's key
// condition names with `hashKey = :value` (alone or ANDed with a range
// condition), formatted as keySchema.GetKey formats it. ok is false when no
// such equality is found or the partition cannot be told from the key
// strings alone (number keys: "1" and "1.0" are one partition to the
// interpreter but two key strings); the caller then walks every key, as
// upstream does.
func (t *Table) queryPartition(input QueryInput, schema keySchema) (string, bool) {
	if input.Scan || input.KeyConditionExpression == "" {
		return "", false
	}

	typ := t.AttributesDef[schema.HashKey]
	if typ != "S" && typ != "B" {
		return "", false
	}

	placeholder, ok := hashPlaceholder(input.KeyConditionExpression, input.Aliases, schema.HashKey)
	if !ok {
		return "", false
	}

	val, ok := input.ExpressionAttributeValues[placeholder]
	if !ok || val == nil {
		return "", false
	}

	goVal, err := getItemValue(map[string]*types.Item{schema.HashKey: val}, schema.HashKey, typ)
	if err != nil {
		return "", false
	}

	return fmt.Sprintf("%v", goVal), true
}

// PartitionKeyText is the partition a Query reads, as KeyText: the value
// its key condition compares the partition key of the table, or of the
// global index it reads, with ("" when it names none or reads a local
// index). It is the partition DynamoDB bills the read to.
func (t *Table) PartitionKeyText(input QueryInput) string {
	hash := t.KeySchema.HashKey
	if input.Index != "" {
		hash = ""
		if idx := t.Indexes[input.Index]; idx != nil && idx.typ == indexTypeGlobal {
			hash = idx.keySchema.HashKey
		}
	}

	if hash == "" || input.Scan || input.KeyConditionExpression == "" {
		return ""
	}

	placeholder, ok := hashPlaceholder(input.KeyConditionExpression, input.Aliases, hash)
	if !ok {
		return ""
	}

	return KeyText(input.ExpressionAttributeValues[placeholder])
}

// hashPlaceholder parses a key condition and finds in it
// `hashKey = :placeholder` (hashEquality).
func hashPlaceholder(keyCondition string, aliases map[string]string, hashKey string) (string, bool) {
	p := language.NewParser(language.NewLexer(keyCondition))

	cond := p.ParseConditionalExpression()
	if len(p.Errors()) != 0 || cond == nil || cond.Expression == nil {
		return "", false
	}

	return hashEquality(cond.Expression, aliases, hashKey)
}

// hashEquality finds `hashKey = :placeholder` (either way round) in a key
// condition: the whole condition or one side of a top-level AND.
func hashEquality(e language.Expression, aliases map[string]string, hashKey string) (string, bool) {
	infix, ok := e.(*language.InfixExpression)
	if !ok {
		return "", false
	}

	switch infix.Operator {
	case language.AND:
		if v, ok := hashEquality(infix.Left, aliases, hashKey); ok {
			return v, true
		}

		return hashEquality(infix.Right, aliases, hashKey)
	case language.EQ:
		l, lok := infix.Left.(*language.Identifier)
		r, rok := infix.Right.(*language.Identifier)

		if !lok || !rok {
			return "", false
		}

		if attributeName(l.Value, aliases) == hashKey && isPlaceholder(r.Value) {
			return r.Value, true
		}

		if attributeName(r.Value, aliases) == hashKey && isPlaceholder(l.Value) {
			return l.Value, true
		}
	}

	return "", false
}

func attributeName(name string, aliases map[string]string) string {
	if alias, ok := aliases[name]; ok {
		return alias
	}

	return name
}

func isPlaceholder(name string) bool {
	return len(name) > 1 && name[0] == ':'
}

// keySpan returns the positions [lo, hi) of the sorted key strings (n of
// them, the j-th being at(j)) that can belong to the partition hash: the
// key hash itself when the schema has no range key, otherwise every key
// that starts with hash + "." (GetKey joins hash and range with a dot).
// Other partitions whose hash value starts with hash + "." fall in the span
// too; the key condition, still evaluated on every item, leaves them out.
func keySpan(n int, at func(int) string, hash string, hasRange bool) (int, int) {
	if !hasRange {
		lo := sort.Search(n, func(j int) bool { return at(j) >= hash })

		return lo, sort.Search(n, func(j int) bool { return at(j) > hash })
	}

	// The keys that start with hash+"." are exactly those in
	// [hash+".", hash+"/"), '/' being the byte after '.'.
	first, end := hash+".", hash+"/"
	lo := sort.Search(n, func(j int) bool { return at(j) >= first })

	return lo, sort.Search(n, func(j int) bool { return at(j) >= end })
}

// searchPlan is the part of the sorted keys (table) or entries (index) a
// search walks, and how to read the j-th one's primary key.
type searchPlan struct {
	lo, hi int
	pkAt   func(int) string
}

// plan narrows the walk to the Query's partition and to the keys after
// ExclusiveStartKey, both by binary search. empty is true when the start
// key names an index entry that cannot be placed (no index key attributes
// in it and no such item indexed): upstream returns an empty page then.
func (t *Table) plan(input QueryInput, idx *index, startKey string) (p searchPlan, empty bool) {
	schema := t.KeySchema
	n := t.SortedKeys.Len()
	at := t.SortedKeys.At
	p.pkAt = at

	if idx != nil {
		schema = idx.keySchema
		n = idx.entries.Len()
		at = func(j int) string { return idx.entries.At(j).key }
		p.pkAt = func(j int) string { return idx.entries.At(j).pk }
	}

	p.lo, p.hi = 0, n

	if hash, ok := t.queryPartition(input, schema); ok {
		p.lo, p.hi = keySpan(n, at, hash, schema.RangeKey != "")
	}

	if startKey == "" {
		return p, false
	}

	// pos is where the start key is or would be; after is the first
	// position past it.
	var pos, after int

	if idx == nil {
		found := false
		pos, found = t.SortedKeys.Search(startKey)
		after = pos

		if found {
			after++
		}
	} else {
		indexKey, err := idx.keySchema.GetKey(t.AttributesDef, input.ExclusiveStartKey)
		if err != nil || indexKey == "" {
			var ok bool
			if indexKey, ok = idx.refs[startKey]; !ok {
				return p, true
			}
		}

		found := false
		pos, found = idx.entries.Search(indexEntry{key: indexKey, pk: startKey})
		after = pos

		if found {
			after++
		}
	}

	if input.ScanIndexForward {
		p.lo = max(p.lo, after)
	} else {
		p.hi = min(p.hi, pos)
	}

	if p.lo > p.hi {
		p.lo = p.hi
	}

	return p, false
}
