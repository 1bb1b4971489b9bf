package metrics

// PinShard makes the aggregator draw its write shard with f (tests).
func (a *Aggregator) PinShard(f func(n int) int) { a.shard = f }
