package core

// This file is not in upstream minidyn v0.8.2 (see PATCHES.md).

import (
	"github.com/truora/minidyn/types"
)

// ItemsSnapshot holds the items stored under some keys of a table (nil for
// a key with no item), to put them back if a transaction fails. Upstream
// snapshots the whole table (every item deep-copied) for each
// TransactWriteItems call, which made every transactional write cost
// O(table size).
type ItemsSnapshot struct {
	items map[string]map[string]*types.Item
}

// SnapshotItems captures the items stored under keys (primary key strings,
// as KeySchema.GetKey returns them).
func (t *Table) SnapshotItems(keys []string) ItemsSnapshot {
	s := ItemsSnapshot{items: make(map[string]map[string]*types.Item, len(keys))}

	for _, k := range keys {
		if item, ok := t.Data[k]; ok {
			s.items[k] = deepCopyItemMap(item)
		} else {
			s.items[k] = nil
		}
	}

	return s
}

// RestoreItems puts back what SnapshotItems captured, in the table and in
// its indexes.
func (t *Table) RestoreItems(s ItemsSnapshot) {
	for k, item := range s.items {
		if item == nil {
			t.removeItem(k)

			continue
		}

		t.setItem(k, item)

		for _, idx := range t.Indexes {
			// The item was indexed with these keys before, so they are valid.
			_ = idx.putData(k, item)
		}
	}
}

// removeItem deletes the item stored under key from the table and its
// indexes.
func (t *Table) removeItem(key string) {
	if _, ok := t.Data[key]; !ok {
		return
	}

	delete(t.Data, key)

	t.SortedKeys.Delete(key)

	for _, idx := range t.Indexes {
		idx.unset(key)
	}
}
