package compile

import (
	"container/heap"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/core"
)

// Schedule reorders the graph so that asynchronous work overlaps
// computation: an op placed early (core.PlaceEarly: the start of a
// non-blocking all-reduce), together with the work only it needs (packing
// gradients into a bucket), runs as soon as its inputs are computed; an op
// placed late (core.PlaceLate: the wait for it) runs only when nothing else
// can run before its first user. Every other op keeps its relative order.
// The plan runs values in graph order, so in a data-parallel training step
// each gradient bucket is issued while the backward pass still has the
// next to compute.
//
// It is a list schedule: a topological sort that always takes, among the
// values whose arguments are done, the one of lowest priority — minus
// infinity for early ops, plus infinity for late ones, else the position
// in the program. Ties (between early or between late ops) keep program
// order, so every process that traced the same program issues its
// collectives in the same order, as MPI requires; other impure ops (random
// draws, prints, blocking collectives) keep their order among themselves,
// so random draws are made in the order PyNative mode makes them. A graph
// without placed ops is left as it is.
func Schedule(g *graph.Graph) {
	placed := false
	for _, v := range g.Values {
		if v.Kind == graph.KindOp && v.Prim.Traits.Placement != core.PlaceInOrder {
			placed = true
			break
		}
	}
	if !placed {
		return
	}
	n := g.NumIDs()
	users := make([][]*graph.Value, n)
	pending := make([]int, n) // arguments not yet scheduled
	// Impure ops other than the placed ones (random draws, prints,
	// blocking collectives) keep their order among themselves: each waits
	// for the one before it, as if it were an argument.
	var prevImpure *graph.Value
	for _, v := range g.Values {
		seen := map[*graph.Value]bool{}
		deps := v.Args
		if v.Kind == graph.KindOp && v.Prim.Traits.Impure && v.Prim.Traits.Placement == core.PlaceInOrder {
			if prevImpure != nil {
				deps = append(deps[:len(deps):len(deps)], prevImpure)
			}
			prevImpure = v
		}
		for _, a := range deps {
			if !seen[a] {
				seen[a] = true
				users[a.ID] = append(users[a.ID], v)
				pending[v.ID]++
			}
		}
	}
	// A value is early when it is a PlaceEarly op, or an op that only
	// moves data (a view, or Cost 0: reshapes, concatenation) all of whose
	// users are early: a bucket's packing then runs with its start rather
	// than at the end of the backward pass. Arithmetic stays where it was —
	// pulling it forward would move the whole backward pass, which feeds
	// nothing but the gradients. Outputs and assigned values are needed
	// for themselves, and impure ops keep their order.
	needed := make([]bool, n)
	for _, o := range g.Outputs {
		needed[o.ID] = true
	}
	for _, a := range g.Assigns {
		needed[a.Val.ID] = true
	}
	const (
		early = -1 << 62
		late  = 1 << 62
	)
	prio := make([]int, n)
	for i := len(g.Values) - 1; i >= 0; i-- {
		v := g.Values[i]
		prio[v.ID] = i
		if v.Kind != graph.KindOp {
			continue
		}
		switch v.Prim.Traits.Placement {
		case core.PlaceEarly:
			prio[v.ID] = early + i
			continue
		case core.PlaceLate:
			prio[v.ID] = late + i
			continue
		}
		tr := v.Prim.Traits
		moves := tr.View || tr.Cost == 0 && !tr.Elementwise && !tr.Reduction
		if !moves || tr.Impure || needed[v.ID] || len(users[v.ID]) == 0 || v.IsMulti() {
			continue
		}
		all := true
		for _, u := range users[v.ID] {
			if prio[u.ID] >= 0 { // neither early nor a user placed early
				all = false
				break
			}
		}
		if all {
			prio[v.ID] = early + i
		}
	}
	ready := &valueHeap{prio: prio}
	for _, v := range g.Values {
		if pending[v.ID] == 0 {
			heap.Push(ready, v)
		}
	}
	order := make([]*graph.Value, 0, len(g.Values))
	for ready.Len() > 0 {
		v := heap.Pop(ready).(*graph.Value)
		order = append(order, v)
		for _, u := range users[v.ID] {
			if pending[u.ID]--; pending[u.ID] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	if len(order) != len(g.Values) {
		panic("compile: Schedule: the graph is not a DAG in topological order")
	}
	copy(g.Values, order)
}

// valueHeap is a min-heap of values by priority.
type valueHeap struct {
	vs   []*graph.Value
	prio []int
}

func (h *valueHeap) Len() int           { return len(h.vs) }
func (h *valueHeap) Less(i, j int) bool { return h.prio[h.vs[i].ID] < h.prio[h.vs[j].ID] }
func (h *valueHeap) Swap(i, j int)      { h.vs[i], h.vs[j] = h.vs[j], h.vs[i] }
func (h *valueHeap) Push(x any)         { h.vs = append(h.vs, x.(*graph.Value)) }
func (h *valueHeap) Pop() any {
	v := h.vs[len(h.vs)-1]
	h.vs = h.vs[:len(h.vs)-1]
	return v
}
