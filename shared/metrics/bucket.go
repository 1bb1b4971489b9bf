package metrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Counter is a summed accumulator of a bucket.
type Counter int

// Counters. Their codes name the stored attributes and must never change
// (stored data would be misread); new ones are appended.
const (
	CRequests Counter = iota
	CBytesIn
	CBytesOut
	CElapsedMs
	CServerMs
	CQueueMs
	CWAFHits
	CCDNRequests
	CCDNBytesIn
	CCDNBytesOut
	CCDNElapsedMs
	CCDNTTFBMs
	CPageViews
	CPageLoadMs
	CSessionSeconds
	CSessionsEnded
	CSessionEndedSeconds
	CEntriesAdded
	CEntriesExtended
	CEntriesExpired
	CEntriesDeleted
	numCounters
)

var counterCodes = [numCounters]string{
	CRequests: "n", CBytesIn: "bi", CBytesOut: "bo", CElapsedMs: "el", CServerMs: "sl", CQueueMs: "ql",
	CWAFHits: "waf", CCDNRequests: "cn", CCDNBytesIn: "cbi", CCDNBytesOut: "cbo", CCDNElapsedMs: "cel",
	CCDNTTFBMs: "ctt", CPageViews: "pv", CPageLoadMs: "plt", CSessionSeconds: "sa", CSessionsEnded: "se",
	CSessionEndedSeconds: "ses", CEntriesAdded: "ea", CEntriesExtended: "ex", CEntriesExpired: "ee",
	CEntriesDeleted: "ed",
}

// Dist is a distribution accumulator: counts per key.
type Dist int

// Distributions; the same rule as for counters applies to their codes.
const (
	DStatus Dist = iota
	DCountry
	DDeliveryStatus
	DCacheSource
	DUADevice
	DUAName
	DUAOS
	DWebControl
	DResponseTimeBin
	DEdgeStatus
	DEdgeLocation
	DEdgeResponseType
	DCDNStatusClass
	DEdgeUADevice
	DEdgeUAName
	DEdgeUAOS
	DPageLoadBin
	numDists
)

var distCodes = [numDists]string{
	DStatus: "sc", DCountry: "co", DDeliveryStatus: "ds", DCacheSource: "cs", DUADevice: "ud", DUAName: "un",
	DUAOS: "uo", DWebControl: "wc", DResponseTimeBin: "rt", DEdgeStatus: "esc", DEdgeLocation: "loc",
	DEdgeResponseType: "ert", DCDNStatusClass: "crs", DEdgeUADevice: "eud", DEdgeUAName: "eun", DEdgeUAOS: "euo",
	DPageLoadBin: "plb",
}

var (
	counterByCode = map[string]Counter{}
	distByCode    = map[string]Dist{}
)

func init() {
	for c, code := range counterCodes {
		counterByCode[code] = Counter(c)
	}
	for d, code := range distCodes {
		distByCode[code] = Dist(d)
	}
}

// maxDistKeys bounds the keys one distribution of one bucket takes from a
// batch: further keys are counted under "other", so no batch can bloat a
// stored item (DynamoDB items hold at most 400 KB).
const maxDistKeys = 64

// Bucket is the accumulators of one time bucket of one scope.
type Bucket struct {
	C [numCounters]int64
	D [numDists]map[string]int64
}

func (b *Bucket) add(d Dist, key string, n int64) {
	m := b.D[d]
	if m == nil {
		m = make(map[string]int64, 8)
		b.D[d] = m
	}
	if _, ok := m[key]; !ok && len(m) >= maxDistKeys {
		key = "other"
	}
	m[key] += n
}

// addBytes is add for a key still in the parser's buffer: it is copied
// only when it is new to the bucket.
func (b *Bucket) addBytes(d Dist, key []byte, n int64) {
	m := b.D[d]
	if m == nil {
		m = make(map[string]int64, 8)
		b.D[d] = m
	}
	if _, ok := m[string(key)]; ok {
		m[string(key)] += n
		return
	}
	if len(m) >= maxDistKeys {
		m["other"] += n
		return
	}
	m[string(key)] = n
}

// Merge adds o into b.
func (b *Bucket) Merge(o *Bucket) {
	for i, v := range o.C {
		b.C[i] += v
	}
	for d, m := range o.D {
		for k, v := range m {
			if b.D[d] == nil {
				b.D[d] = make(map[string]int64, len(m))
			}
			b.D[d][k] += v
		}
	}
}

// Empty reports whether the bucket holds nothing.
func (b *Bucket) Empty() bool {
	for _, v := range b.C {
		if v != 0 {
			return false
		}
	}
	for _, m := range b.D {
		if len(m) > 0 {
			return false
		}
	}
	return true
}

// attrs appends the bucket's non-zero accumulators as stored attribute
// names ("<offset>.<code>" and "<offset>.<code>.<key>") and values.
func (b *Bucket) attrs(offset int, add func(name string, v int64)) {
	prefix := strconv.Itoa(offset) + "."
	for c, v := range b.C {
		if v != 0 {
			add(prefix+counterCodes[c], v)
		}
	}
	for d, m := range b.D {
		for k, v := range m {
			if v != 0 {
				add(prefix+distCodes[d]+"."+k, v)
			}
		}
	}
}

// parseAttr reads a stored attribute name back: its bucket offset and the
// accumulator it belongs to. ok is false for attributes that are not
// accumulators (keys, ttl) or that this version does not know.
func parseAttr(name string) (offset int, c Counter, d Dist, key string, isDist, ok bool) {
	off, rest, found := strings.Cut(name, ".")
	if !found {
		return 0, 0, 0, "", false, false
	}
	n, err := strconv.Atoi(off)
	if err != nil || n < 0 {
		return 0, 0, 0, "", false, false
	}
	code, key, hasKey := strings.Cut(rest, ".")
	if hasKey {
		dd, known := distByCode[code]
		return n, 0, dd, key, true, known
	}
	cc, known := counterByCode[code]
	return n, cc, 0, "", false, known
}

// Value computes a metric over an interval of seconds from the merged
// bucket of that interval: a number, or a map for distributions.
func (def *Definition) Value(b *Bucket, seconds int64) any {
	scale := def.Scale
	if scale == 0 {
		scale = 1
	}
	switch def.Kind {
	case KindCount:
		if def.Keys != nil {
			var n int64
			for _, k := range def.Keys {
				n += b.D[def.Dist][k]
			}
			return n
		}
		return b.C[def.Num]
	case KindRate, KindLevel:
		if seconds <= 0 {
			return 0.0
		}
		return round(float64(b.C[def.Num]) / scale / float64(seconds))
	case KindAvg:
		den := b.C[def.Den]
		if den == 0 {
			return 0.0
		}
		return round(float64(b.C[def.Num]) / scale / float64(den))
	case KindDist:
		out := make(map[string]int64, len(b.D[def.Dist]))
		for k, v := range b.D[def.Dist] {
			if v != 0 {
				out[k] = v
			}
		}
		return out
	case KindQuantile:
		return round(histogramQuantile(b.D[def.Dist], def.Q))
	}
	panic(fmt.Sprintf("metric %s: unknown kind %d", def.Name, def.Kind))
}

func round(f float64) float64 { return math.Round(f*1000) / 1000 }

// Response-time histogram: bin i holds elapsed milliseconds in
// [responseBins[i-1], responseBins[i]) (bin 0 from 0); the last bin is
// open-ended. Roughly logarithmic, so quantiles are within one bin's width.
var responseBins = []int64{5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

var binKeys = func() []string {
	out := make([]string, len(responseBins)+1)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func responseBin(ms int64) string {
	i := sort.Search(len(responseBins), func(i int) bool { return ms < responseBins[i] })
	return binKeys[i]
}

// histogramQuantile estimates quantile q of the histogram by linear
// interpolation inside the bin where the cumulative count crosses it (the
// open last bin reports its lower edge).
func histogramQuantile(h map[string]int64, q float64) float64 {
	counts := make([]int64, len(responseBins)+1)
	var total int64
	for k, v := range h {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(counts) || v <= 0 {
			continue
		}
		counts[i] += v
		total += v
	}
	if total == 0 {
		return 0
	}
	target := q * float64(total)
	var cum float64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if cum+float64(c) >= target {
			lo := 0.0
			if i > 0 {
				lo = float64(responseBins[i-1])
			}
			if i == len(responseBins) {
				return lo
			}
			hi := float64(responseBins[i])
			return lo + (hi-lo)*(target-cum)/float64(c)
		}
		cum += float64(c)
	}
	return float64(responseBins[len(responseBins)-1])
}
