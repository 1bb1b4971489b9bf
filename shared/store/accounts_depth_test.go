package store

import (
	"strings"
	"testing"
	"time"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// The depth limit is what one item holds: at MaxAccountDepth the largest
// account item and the largest access key bound to it fit (with the
// headroom), one level deeper they would not. Field values are the
// store's own bounds (it does not know the accounts function's tighter
// limits on days).
func TestMaxAccountDepthIsTheItemLimit(t *testing.T) {
	d := MaxAccountDepth()
	if d < 20000 || d > 25000 {
		t.Fatalf("MaxAccountDepth = %d, expected a little over 21,000 for 16-character ids", d)
	}
	id := strings.Repeat("z", generatedIDLen)
	ts := time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC)
	worst := func(n int) int {
		anc := make([]string, n)
		for i := range anc {
			anc[i] = id
		}
		a := domain.AccountRecord{Account: domain.Account{ID: id, Name: strings.Repeat("\U0010FFFF", domain.AccountNameMaxRunes), Keyword: strings.Repeat("k", domain.AccountKeywordMaxBytes),
			NameKey: strings.Repeat("k", domain.NameKeyMaxBytes), NameSkeleton: strings.Repeat("k", domain.NameKeyMaxBytes), Parent: id, Ancestors: anc, Owner: id, Created: ts, Updated: ts},
			LogRetention: []domain.LogRetention{{Type: "events", OnlineDays: 1 << 30, ArchiveDays: 1 << 30, OnlineSpaceAllowance: 1<<31 - 1, ArchiveSpaceAllowance: 1<<31 - 1}},
			Deleting:     &ts}
		k := domain.AccessKey{ID: id, PrincipalID: id, Type: "bearer", Durability: domain.DurabilitySession, Account: id, AccountAncestors: anc,
			SecretHash: strings.Repeat("f", 64), Expiry: &ts, LastUsed: &ts, Created: ts, TTL: ts.Unix()}
		am, err := item(accountKey(a.Account), a)
		if err != nil {
			return ddb.MaxItemBytes + 1
		}
		km, err := item(accessKeyKey(k), k)
		if err != nil {
			return ddb.MaxItemBytes + 1
		}
		return max(ddb.ItemSize(am), ddb.ItemSize(km))
	}
	if got := worst(d); got > ddb.MaxItemBytes-accountItemHeadroom {
		t.Errorf("at depth %d the largest item is %d bytes, over %d", d, got, ddb.MaxItemBytes-accountItemHeadroom)
	}
	if got := worst(d + 1); got <= ddb.MaxItemBytes-accountItemHeadroom {
		t.Errorf("at depth %d the largest item is %d bytes: the limit could be higher", d+1, got)
	}
}
