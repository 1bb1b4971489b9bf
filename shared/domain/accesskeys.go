package domain

import "time"

// Descendants returns the keys among keys that were minted under one of
// roots: whose parent is one of them or such a key (at any depth), or
// whose origin is one of them.
func Descendants(keys []AccessKey, roots []KeyRef) []AccessKey {
	gone := make(map[KeyRef]bool, len(roots))
	for _, r := range roots {
		gone[r] = true
	}
	children := map[KeyRef][]int{}
	var queue []KeyRef
	for i, k := range keys {
		if k.Parent != nil {
			children[*k.Parent] = append(children[*k.Parent], i)
		}
		if k.Origin != nil && gone[*k.Origin] && !gone[k.Ref()] {
			gone[k.Ref()] = true
			queue = append(queue, k.Ref())
		}
	}
	queue = append(queue, roots...)
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		for _, i := range children[r] {
			if ref := keys[i].Ref(); !gone[ref] {
				gone[ref] = true
				queue = append(queue, ref)
			}
		}
	}
	rootSet := make(map[KeyRef]bool, len(roots))
	for _, r := range roots {
		rootSet[r] = true
	}
	var out []AccessKey
	for _, k := range keys {
		if gone[k.Ref()] && !rootSet[k.Ref()] {
			out = append(out, k)
		}
	}
	return out
}

// KeyStanding is what a key's validity depends on besides its own item:
// the account it is bound to and the keys of its lineage.
type KeyStanding struct {
	// Account is the key's account, nil when it was not asked for or is
	// gone.
	Account *Account
	// Keys holds the lineage keys that exist, by name.
	Keys map[KeyRef]AccessKey
}

// UseIsStale says whether a use at now should be recorded: the key (as
// read) has no last_used within KeyUseGranularity. Callers skip TouchKey
// otherwise: a write whose condition fails is billed all the same.
func (k AccessKey) UseIsStale(now time.Time) bool {
	return k.LastUsed == nil || !k.LastUsed.After(now.Add(-KeyUseGranularity))
}

// KeyUseGranularity bounds how often a key's last_used is written: at most
// once a minute per key, so a busy key costs no write per request.
const KeyUseGranularity = time.Minute
