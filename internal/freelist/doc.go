// Package freelist recycles scratch objects between calls of a kernel.
//
// A List is what the kernels use instead of a sync.Pool. A sync.Pool
// keeps one object per P in a slot other Ps cannot take from, and a
// garbage collection empties it: a kernel whose helpers run on whichever
// thread is free, or a plan replayed after a collection, then finds the
// pool empty and allocates, and a compiled step that should allocate
// nothing allocates on a loaded machine. A List is one locked stack: an
// object put back is found by the next Get, from any goroutine, and
// nothing is ever dropped. It holds at most as many objects as were in
// use at once.
//
//	var scratch freelist.List[[]float32]
//	buf := scratch.Get()
//	defer scratch.Put(buf)
package freelist
