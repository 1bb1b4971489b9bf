package metrics

import (
	"math/rand/v2"
	"strings"
)

// AppShards is how many write shards an application's chunks are spread
// over. Each aggregator invocation writes all of its updates of
// application scopes to one shard, drawn at random, so concurrent batches
// of one busy application update different items (no transaction
// conflicts between them) in different partitions (each under DynamoDB's
// 1,000 WCU per second per partition, docs/scale.md); a query reads every
// shard of a chunk and Evaluate sums them, which ADD's commutativity makes
// exact. Address-set scopes are written by events, a few per change, and
// stay in one shard.
//
// Stored data is read by this number: it may grow (new shards start
// empty), never shrink.
const AppShards = 4

// shardsOf is the number of write shards of a scope.
func shardsOf(scope string) int {
	if strings.HasPrefix(scope, "app#") {
		return AppShards
	}
	return 1
}

// randomShard draws an invocation's shard.
func randomShard(n int) int { return rand.N(n) }
