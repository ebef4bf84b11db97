package ad

import "sync/atomic"

// VmapLoops returns, by primitive name, how many applications Vmap has
// vectorised by the loop fallback so far: the tests assert that the
// primitives with batching rules never reach it.
func VmapLoops() map[string]int64 {
	m := map[string]int64{}
	vmapLoops.Range(func(k, v any) bool {
		m[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return m
}
