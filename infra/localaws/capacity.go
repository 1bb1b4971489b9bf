package localaws

import (
	"net/http"
	"sync"

	"github.com/truora/minidyn/server"
)

// The embedded DynamoDB (minidyn, patched: minidyn/PATCHES.md, 7) reports
// ConsumedCapacity to requests that ask for it (ReturnConsumedCapacity
// TOTAL or INDEXES), computed where it reads and writes the items.
//
// The units follow DynamoDB's documented rules (item sizes from attribute
// names and values; reads in 4 KB steps, halved when eventually consistent,
// Query summing its items before rounding; writes in 1 KB steps of the
// larger of the old and new item; transactions twice; a global secondary
// index write for every index entry put, changed or removed). They are a
// measuring instrument for tests and the local platform: on AWS the service
// reports these numbers itself. minidyn/core/capacity.go and
// minidyn/server/capacity.go hold the rules; TestMeterReportsCapacity
// states them.
//
// Not reported, as on AWS: the capacity of a request that fails (a failed
// condition is billed, but the error carries no ConsumedCapacity).

// serialised serves one request at a time: minidyn reads and changes its
// map of tables (CreateTable, DescribeTable, DeleteTable) without a lock.
type serialised struct {
	mu   sync.Mutex
	next http.Handler
}

func (s *serialised) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next.ServeHTTP(w, r)
}

// newDynamoHandler is minidyn's server as the local platform serves it,
// with every request's capacity counted in parts (nil: not counted).
func newDynamoHandler(srv *server.Server, parts *PartitionMeter) http.Handler {
	if parts != nil {
		srv.ObserveCapacity(parts.add)
	}
	return &serialised{next: srv}
}
