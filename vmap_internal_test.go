package spore

import "github.com/sporeml/spore/internal/ad"

// VmapLoops returns, by primitive name, how many applications Vmap has
// vectorised by the loop fallback so far: the tests assert that the
// primitives with batching rules never reach it.
func VmapLoops() map[string]int64 { return ad.VmapLoops() }
