package core

import (
	"cmp"
	"maps"
	"time"

	"github.com/truora/minidyn/types"
)

type indexType string

const (
	indexTypeGlobal indexType = "global"
	indexTypeLocal  indexType = "local"
)

type index struct {
	keySchema keySchema
	// entries is every indexed item, kept sorted (compareEntries) as items
	// are written, so that a Query finds its partition by binary search
	// instead of sorting the whole index.
	entries    sortedSeq[indexEntry]
	typ        indexType
	projection *types.Projection
	Table      *Table
	refs       map[string]string // primary key -> index key
	createdAt  time.Time
}

func newIndex(t *Table, typ indexType, ks keySchema) *index {
	ks.Secondary = true

	return &index{
		keySchema: ks,
		typ:       typ,
		Table:     t,
		entries:   newSortedSeq(compareEntries),
		refs:      map[string]string{},
	}
}

func (i *index) Clear() {
	i.entries.Clear()
	i.refs = map[string]string{}
}

type indexSnapshot struct {
	entries sortedSeq[indexEntry]
	refs    map[string]string
}

func (i *index) snapshot() indexSnapshot {
	refs := make(map[string]string, len(i.refs))
	maps.Copy(refs, i.refs)

	return indexSnapshot{entries: i.entries.Clone(), refs: refs}
}

func (i *index) restore(s indexSnapshot) {
	i.entries = s.entries
	i.refs = s.refs
}

// ProjectItem returns the attributes visible through this index's projection (ALL, KEYS_ONLY, INCLUDE).
// For ALL or unknown types, it returns a full shallow copy of the item.
func (i *index) ProjectItem(item map[string]*types.Item) map[string]*types.Item {
	if i == nil || i.projection == nil {
		return copyItem(item)
	}

	pt := ""
	if i.projection.ProjectionType != nil {
		pt = *i.projection.ProjectionType
	}

	switch pt {
	case "", "ALL":
		return copyItem(item)
	case "KEYS_ONLY":
		return i.projectKeysOnly(item)
	case "INCLUDE":
		return i.projectInclude(item)
	default:
		return copyItem(item)
	}
}

func (i *index) projectKeysOnly(item map[string]*types.Item) map[string]*types.Item {
	out := make(map[string]*types.Item)
	maps.Copy(out, i.Table.KeySchema.getKeyItem(item))
	maps.Copy(out, i.keySchema.getKeyItem(item))

	return out
}

func (i *index) projectInclude(item map[string]*types.Item) map[string]*types.Item {
	out := i.projectKeysOnly(item)

	for _, namePtr := range i.projection.NonKeyAttributes {
		if namePtr == nil {
			continue
		}

		name := *namePtr
		if v, ok := item[name]; ok {
			out[name] = v
		}
	}

	return out
}

// indexEntry is one indexed item: its index key and its table key.
type indexEntry struct {
	key string // index key (hash, or hash "." range)
	pk  string // the item's primary key in the table
}

// compareEntries orders entries as a Query walks them: by index key, then
// by primary key.
func compareEntries(a, b indexEntry) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}

	return cmp.Compare(a.pk, b.pk)
}

// set indexes the item stored under pk with indexKey ("" = the item has no
// key attributes for this sparse index), replacing its previous entry.
func (i *index) set(pk, indexKey string) {
	if old, ok := i.refs[pk]; ok {
		if old == indexKey {
			return
		}

		i.unset(pk)
	}

	if indexKey == "" {
		return
	}

	i.refs[pk] = indexKey
	i.entries.Insert(indexEntry{key: indexKey, pk: pk})
}

// unset removes the item stored under pk from the index.
func (i *index) unset(pk string) {
	old, ok := i.refs[pk]
	if !ok {
		return
	}

	delete(i.refs, pk)

	i.entries.Delete(indexEntry{key: old, pk: pk})
}

func (i *index) putData(key string, item map[string]*types.Item) error {
	indexKey, err := i.keySchema.GetKey(i.Table.AttributesDef, item)
	if err != nil {
		return err
	}

	i.set(key, indexKey)

	return nil
}

func (i *index) updateData(key string, item, oldItem map[string]*types.Item) error {
	return i.putData(key, item)
}

func (i *index) delete(key string, item map[string]*types.Item) error {
	i.unset(key)

	return nil
}

func (i *index) count() int64 {
	return int64(i.entries.Len())
}
