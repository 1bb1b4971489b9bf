package metrics

import (
	"slices"
	"strings"
	"time"
)

// Scopes: whose metrics a bucket holds. Ids never contain '#'.
func ScopeApp(id string) string         { return "app#" + id }
func ScopeSet(id string) string         { return "set#" + id }
func ScopeSetsOf(account string) string { return "sets#" + account }

// maxFuture is how far ahead of the aggregator's clock a record may be;
// later ones come from a broken clock and are dropped.
const maxFuture = time.Hour

type bucketKey struct {
	scope string
	sec   int64 // start of the finest bucket
}

// Fold accumulates records and changes into finest-tier buckets in memory.
// Coarser tiers are derived from them once per batch (Updates), so a record
// costs one bucket update however many tiers are stored.
type Fold struct {
	now     time.Time
	buckets map[bucketKey]*Bucket
	lastKey bucketKey
	last    *Bucket
	// Folded and Skipped count records (Skipped: invalid, or too far in
	// the future); Addresses are the address records, applied separately.
	Folded, Skipped int
	Addresses       []AddressRecord
}

// NewFold starts an empty fold; now bounds how far ahead a record may be.
func NewFold(now time.Time) *Fold {
	return &Fold{now: now, buckets: make(map[bucketKey]*Bucket, 4)}
}

// bucketFor is bucket for an application id still in the parser's
// buffer: consecutive records of one application (the common case) reuse
// the last bucket without building the scope string.
func (f *Fold) bucketFor(app []byte, t time.Time) *Bucket {
	sec := floorTo(t.Unix(), FinestBucket)
	if f.last != nil && f.lastKey.sec == sec && len(f.lastKey.scope) == len(app)+4 && f.lastKey.scope[4:] == string(app) && f.lastKey.scope[:4] == "app#" {
		return f.last
	}
	return f.bucket(ScopeApp(string(app)), t)
}

// validID is ids.Valid for bytes.
func validID(b []byte) bool {
	if len(b) == 0 || len(b) > 64 {
		return false
	}
	for _, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (f *Fold) bucket(scope string, t time.Time) *Bucket {
	k := bucketKey{scope: scope, sec: floorTo(t.Unix(), FinestBucket)}
	if f.last != nil && k == f.lastKey {
		return f.last
	}
	b := f.buckets[k]
	if b == nil {
		b = &Bucket{}
		f.buckets[k] = b
	}
	f.lastKey, f.last = k, b
	return b
}

// Empty reports whether nothing was folded.
func (f *Fold) Empty() bool { return len(f.buckets) == 0 }

// Count adds n to a counter of scope at time t (address-set events).
func (f *Fold) Count(scope string, c Counter, t time.Time, n int64) {
	if n == 0 {
		return
	}
	f.bucket(scope, t).C[c] += n
}

// record folds one decoded record.
func (f *Fold) record(r *inRecord) {
	typ := string(r.Type) // a switch on a converted slice does not allocate
	if typ == "" {
		typ = TypeAccess
	}
	if typ == TypeAddress {
		f.address(r)
		return
	}
	if !validID(r.App) {
		f.Skipped++
		return
	}
	ts := r.Arrival
	if typ == TypeSessions {
		ts = r.Time
	}
	t, ok := parseTime(ts)
	if !ok || t.After(f.now.Add(maxFuture)) {
		f.Skipped++
		return
	}
	b := f.bucketFor(r.App, t)
	switch typ {
	case TypeAccess:
		elapsed := num(r.Elapsed)
		b.C[CRequests]++
		b.C[CBytesIn] += num(r.BytesIn)
		b.C[CBytesOut] += num(r.BytesOut)
		b.C[CElapsedMs] += elapsed
		b.C[CServerMs] += num(r.ServerLatency)
		b.C[CQueueMs] += num(r.QueueLatency)
		if len(r.Threat) > 0 {
			b.C[CWAFHits]++
		}
		b.add(DStatus, statusKey(r.StatusCode), 1)
		b.add(DCountry, country(r.Country), 1)
		b.add(DDeliveryStatus, inVocab(deliveryStatuses, r.DeliveryStatus), 1)
		b.add(DCacheSource, inVocab(cacheSources, r.CacheSource), 1)
		b.add(DUADevice, inVocab(devices, r.UADevice), 1)
		b.addBytes(DUAName, token(r.UAName), 1)
		b.addBytes(DUAOS, token(r.UAOS), 1)
		b.add(DResponseTimeBin, responseBin(elapsed), 1)
		for _, w := range r.Webcontrols {
			b.addBytes(DWebControl, token(w), 1)
		}
	case TypeCDN:
		b.C[CCDNRequests]++
		b.C[CCDNBytesIn] += num(r.BytesIn)
		b.C[CCDNBytesOut] += num(r.BytesOut)
		b.C[CCDNElapsedMs] += num(r.Elapsed)
		b.C[CCDNTTFBMs] += num(r.TTFB)
		b.add(DEdgeStatus, statusKey(r.StatusCode), 1)
		b.add(DCDNStatusClass, statusClass(r.StatusCode), 1)
		b.addBytes(DEdgeLocation, token(r.Location), 1)
		b.add(DEdgeResponseType, inVocab(cacheSources, r.CacheSource), 1)
		b.add(DEdgeUADevice, inVocab(devices, r.UADevice), 1)
		b.addBytes(DEdgeUAName, token(r.UAName), 1)
		b.addBytes(DEdgeUAOS, token(r.UAOS), 1)
	case TypePageview:
		ms := num(r.PageLoadTime)
		b.C[CPageViews]++
		b.C[CPageLoadMs] += ms
		b.add(DPageLoadBin, pageLoadBin(ms), 1)
	case TypeSessions:
		b.C[CSessionSeconds] += num(r.Active * r.Interval)
		b.C[CSessionsEnded] += num(r.Ended)
		b.C[CSessionEndedSeconds] += num(r.EndedSecs)
	default:
		f.Skipped++
		return
	}
	f.Folded++
}

func (f *Fold) address(r *inRecord) {
	t, ok := parseTime(r.Time)
	if !ok || !validID(r.Set) || len(r.Address) == 0 {
		f.Skipped++
		return
	}
	a := AddressRecord{Set: string(r.Set), Address: string(r.Address), Description: string(r.Description), Time: t}
	if len(r.Expiry) > 0 {
		e, ok := parseTime(r.Expiry)
		if !ok {
			f.Skipped++
			return
		}
		a.Expiry = &e
	}
	f.Addresses = append(f.Addresses, a)
	f.Folded++
}

// ChunkKey names one stored item: the buckets of a scope in one chunk of a
// tier.
type ChunkKey struct {
	Scope string
	Tier  string
	Start int64 // unix seconds
}

// Attr is one accumulator of a chunk and the amount to add to it.
type Attr struct {
	Name  string
	Value int64
}

// Update is what a batch adds to one stored chunk.
type Update struct {
	Key     ChunkKey
	Attrs   []Attr // sorted by name
	Expires int64  // TTL, unix seconds; 0 = none
}

// Updates derives every tier's chunk updates from the fold, in a
// deterministic order (a redelivered message is split into the same steps).
func (f *Fold) Updates() []Update {
	type tierBucket struct {
		scope string
		tier  int
		sec   int64 // bucket start
	}
	merged := make(map[tierBucket]*Bucket, len(f.buckets)*len(Tiers))
	for k, b := range f.buckets {
		if b.Empty() {
			continue
		}
		for ti, t := range Tiers {
			tb := tierBucket{scope: k.scope, tier: ti, sec: floorTo(k.sec, t.Bucket)}
			if ti == 0 {
				merged[tb] = b
				continue
			}
			m := merged[tb]
			if m == nil {
				m = &Bucket{}
				merged[tb] = m
			}
			m.Merge(b)
		}
	}
	chunks := map[ChunkKey]*Update{}
	for tb, b := range merged {
		t := Tiers[tb.tier]
		ck := ChunkKey{Scope: tb.scope, Tier: t.Name, Start: t.Chunk(tb.sec)}
		u := chunks[ck]
		if u == nil {
			u = &Update{Key: ck, Expires: t.Expires(ck.Start)}
			chunks[ck] = u
		}
		b.attrs(t.Offset(tb.sec), func(name string, v int64) { u.Attrs = append(u.Attrs, Attr{name, v}) })
	}
	out := make([]Update, 0, len(chunks))
	for _, u := range chunks {
		slices.SortFunc(u.Attrs, func(a, b Attr) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Update) int { return compareChunk(a.Key, b.Key) })
	return out
}

func compareChunk(a, b ChunkKey) int {
	if c := strings.Compare(a.Scope, b.Scope); c != 0 {
		return c
	}
	if c := strings.Compare(a.Tier, b.Tier); c != 0 {
		return c
	}
	switch {
	case a.Start < b.Start:
		return -1
	case a.Start > b.Start:
		return 1
	}
	return 0
}
