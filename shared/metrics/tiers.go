package metrics

import (
	"time"
)

// Tier is one bucket size at which every scope's metrics are stored. Each
// stored item (a chunk) holds PerChunk consecutive buckets of one scope,
// so that reading a long range takes few items (see docs/metrics.md).
type Tier struct {
	Name     string
	Bucket   int64         // seconds
	PerChunk int64         // buckets per item
	Keep     time.Duration // how long items live after their chunk ends (TTL); 0 = forever
}

// Tiers, finest first. Each bucket size divides the next, so any range
// aligned to a coarse tier is also aligned to the finer ones.
var Tiers = []Tier{
	{Name: "s10", Bucket: 10, PerChunk: 12, Keep: 2 * 24 * time.Hour},    // 2-minute items, kept 2 days
	{Name: "m1", Bucket: 60, PerChunk: 15, Keep: 35 * 24 * time.Hour},    // 15-minute items, kept 35 days
	{Name: "h1", Bucket: 3600, PerChunk: 12, Keep: 400 * 24 * time.Hour}, // 12-hour items, kept 400 days
	{Name: "d1", Bucket: 86400, PerChunk: 8},                             // 8-day items, kept forever
}

// FinestBucket is the stored bucket every resolution must be a multiple of.
var FinestBucket = Tiers[0].Bucket

// Chunk is the start (unix seconds) of the chunk holding second t.
func (t Tier) Chunk(sec int64) int64 {
	span := t.Bucket * t.PerChunk
	return floorDiv(sec, span) * span
}

// Offset is the bucket index of second sec inside its chunk.
func (t Tier) Offset(sec int64) int {
	return int((sec - t.Chunk(sec)) / t.Bucket)
}

// Expires is the TTL (unix seconds) of the chunk starting at start, or 0.
func (t Tier) Expires(start int64) int64 {
	if t.Keep == 0 {
		return 0
	}
	return start + t.Bucket*t.PerChunk + int64(t.Keep/time.Second)
}

// Retains reports whether data for second sec is still kept at now. A
// margin of one chunk keeps a query from reading an item that TTL is about
// to delete.
func (t Tier) Retains(sec int64, now time.Time) bool {
	if t.Keep == 0 {
		return true
	}
	return sec >= now.Unix()-int64(t.Keep/time.Second)+t.Bucket*t.PerChunk
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorTo(sec, b int64) int64 { return floorDiv(sec, b) * b }
func ceilTo(sec, b int64) int64 {
	f := floorTo(sec, b)
	if f == sec {
		return sec
	}
	return f + b
}
