package onnx

import (
	"fmt"

	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/tensor"
)

// plan is what the walker needs of one graph (the main graph or a
// sub-graph), worked out once at load time: the nodes in an order where
// every value is computed before it is read, each with its op, and the
// sub-graph's own initializers.
type plan struct {
	nodes  []*onnxpb.NodeProto
	fns    []opFunc
	consts map[string]*tensor.Tensor // sub-graph initializers (the main graph's live on the Model)
	// release[k] lists the values computed in this graph that no node
	// after nodes[k] reads and that are not outputs: the walker drops
	// them, so that a model run eagerly holds only live intermediates.
	release [][]string
}

// analyzer validates a model's graphs and builds their plans. It collects
// every unsupported op type, across all sub-graphs, rather than stopping at
// the first, so that one error lists all that is missing.
type analyzer struct {
	opset       int64
	dir         string
	plans       map[*onnxpb.GraphProto]*plan
	unsupported map[string]int // domain/opType -> index in unsup
	unsup       []Unsupported
	nodes       int
	opCounts    map[string]int
	// checkOnly skips decoding sub-graph initializers (Check reads no
	// weights).
	checkOnly bool
}

// survey counts the nodes of g and its sub-graphs by op type and records
// the op types spore cannot run. It needs no valid structure, so that
// Check lists unsupported ops even in a model with other problems.
func (a *analyzer) survey(g *onnxpb.GraphProto, depth int) {
	if depth > maxGraphDepth {
		return
	}
	for _, n := range g.GetNode() {
		a.nodes++
		a.countOp(n)
		a.checkOp(n)
		for _, sub := range subGraphs(n) {
			a.survey(sub, depth+1)
		}
	}
}

// graph validates g, whose enclosing scopes define the names for which
// outer returns true (nil for the main graph), and returns the names g
// reads from those scopes: its free variables, which are dependencies of
// the node that holds g. Nodes are put in dependency order; a value read
// but never defined, or a cycle, is an error naming the node and the
// value.
func (a *analyzer) graph(g *onnxpb.GraphProto, outer func(string) bool, depth int) (map[string]bool, error) {
	if depth > maxGraphDepth {
		return nil, fmt.Errorf("onnx: sub-graphs nest deeper than %d levels", maxGraphDepth)
	}
	where := "the main graph"
	if depth > 0 {
		where = fmt.Sprintf("sub-graph %q", g.GetName())
	}
	p := &plan{}
	// defined: names available to every node of g without ordering
	// constraints (inputs, initializers); producer: node outputs.
	defined := map[string]bool{}
	for _, vi := range g.GetInput() {
		if vi.GetName() == "" || defined[vi.GetName()] {
			return nil, fmt.Errorf("onnx: %s: input name %q is empty or declared twice", where, vi.GetName())
		}
		defined[vi.GetName()] = true
	}
	inits := map[string]bool{}
	for _, init := range g.GetInitializer() {
		if init.GetName() == "" || inits[init.GetName()] {
			return nil, fmt.Errorf("onnx: %s: initializer name %q is empty or used twice", where, init.GetName())
		}
		inits[init.GetName()] = true
		defined[init.GetName()] = true
		if depth > 0 && !a.checkOnly {
			t, err := tensorFromProto(init, a.dir)
			if err != nil {
				return nil, fmt.Errorf("onnx: %s: initializer: %w", where, err)
			}
			if p.consts == nil {
				p.consts = map[string]*tensor.Tensor{}
			}
			p.consts[init.GetName()] = t
		}
	}
	nodes := g.GetNode()
	producer := make(map[string]int, len(nodes))
	for i, n := range nodes {
		for _, o := range n.GetOutput() {
			if o == "" {
				continue
			}
			if j, dup := producer[o]; dup {
				return nil, fmt.Errorf("onnx: %s: value %q is produced twice, by node %s and node %s", where, o, nodeLabel(nodes[j]), nodeLabel(n))
			}
			if defined[o] {
				return nil, fmt.Errorf("onnx: %s: node %s (%s) produces %q, which is already a graph input or initializer", where, nodeLabel(n), n.GetOpType(), o)
			}
			producer[o] = i
		}
	}
	visible := func(name string) bool {
		if defined[name] {
			return true
		}
		if _, ok := producer[name]; ok {
			return true
		}
		return outer != nil && outer(name)
	}
	free := map[string]bool{}
	// deps[i] lists the nodes node i waits for.
	deps := make([][]int, len(nodes))
	readsOf := make([][]string, len(nodes))
	waitsOn := make([][]string, len(nodes)) // the value behind each dep, for messages
	for i, n := range nodes {
		if err := a.checkAttrs(n); err != nil {
			return nil, err
		}
		reads := []string{}
		for _, in := range n.GetInput() {
			if in != "" {
				reads = append(reads, in)
			}
		}
		for _, sub := range subGraphs(n) {
			f, err := a.graph(sub, visible, depth+1)
			if err != nil {
				return nil, err
			}
			for _, name := range sortedKeys(f) {
				reads = append(reads, name)
			}
		}
		readsOf[i] = reads
		for _, in := range reads {
			if defined[in] {
				continue
			}
			if j, ok := producer[in]; ok {
				if j == i {
					return nil, fmt.Errorf("onnx: %s: node %s (%s) reads its own output %q: the graph is cyclic", where, nodeLabel(n), n.GetOpType(), in)
				}
				deps[i] = append(deps[i], j)
				waitsOn[i] = append(waitsOn[i], in)
				continue
			}
			if outer != nil && outer(in) {
				free[in] = true
				continue
			}
			return nil, fmt.Errorf("onnx: %s: node %s (%s) reads %q, which no node, initializer or graph input defines", where, nodeLabel(n), n.GetOpType(), in)
		}
	}
	order, err := topoSort(nodes, deps, waitsOn, where)
	if err != nil {
		return nil, err
	}
	for _, o := range g.GetOutput() {
		if !visible(o.GetName()) {
			return nil, fmt.Errorf("onnx: %s: output %q is not produced by any node, initializer or graph input", where, o.GetName())
		}
		if !defined[o.GetName()] {
			if _, ok := producer[o.GetName()]; !ok {
				free[o.GetName()] = true
			}
		}
	}
	p.nodes = make([]*onnxpb.NodeProto, len(order))
	p.fns = make([]opFunc, len(order))
	for k, i := range order {
		p.nodes[k] = nodes[i]
		p.fns[k] = lookupNode(nodes[i], a.opset)
	}
	// Last readers, in run order: a value produced here and read last by
	// the k-th node to run is released after it.
	last := map[string]int{}
	for k, i := range order {
		for _, in := range readsOf[i] {
			if _, ok := producer[in]; ok {
				last[in] = k
			}
		}
	}
	for _, o := range g.GetOutput() {
		delete(last, o.GetName())
	}
	p.release = make([][]string, len(order))
	for _, name := range sortedKeys(last) {
		k := last[name]
		p.release[k] = append(p.release[k], name)
	}
	a.plans[g] = p
	return free, nil
}

// countOp adds n to the op histogram (Check's report).
func (a *analyzer) countOp(n *onnxpb.NodeProto) {
	if a.opCounts == nil {
		a.opCounts = map[string]int{}
	}
	key := n.GetOpType()
	if !isDefaultDomain(n.GetDomain()) {
		key = n.GetDomain() + "." + key
	}
	a.opCounts[key]++
}

// checkOp records n's op type when spore has no implementation of it for
// the model's opset.
func (a *analyzer) checkOp(n *onnxpb.NodeProto) {
	domain := n.GetDomain()
	if isDefaultDomain(domain) {
		domain = "ai.onnx"
	}
	if lookupNode(n, a.opset) == nil {
		key := domain + "/" + n.GetOpType()
		if i, ok := a.unsupported[key]; ok {
			a.unsup[i].Count++
		} else {
			a.unsupported[key] = len(a.unsup)
			a.unsup = append(a.unsup, Unsupported{OpType: n.GetOpType(), Domain: domain, FirstNode: nodeLabel(n), Count: 1})
		}
	}
}

// checkAttrs decodes n's tensor attributes (a Constant's value) so that a
// malformed one fails at load time, not when it runs.
func (a *analyzer) checkAttrs(n *onnxpb.NodeProto) error {
	for _, at := range n.GetAttribute() {
		ts := at.GetTensors()
		if at.GetT() != nil {
			ts = append(ts, at.GetT())
		}
		for _, tp := range ts {
			if _, err := tensorFromProto(tp, a.dir); err != nil {
				return fmt.Errorf("onnx: node %s (%s): attribute %s: %w", nodeLabel(n), n.GetOpType(), at.GetName(), err)
			}
		}
	}
	return nil
}

// topoSort orders nodes so that each comes after those it waits for,
// keeping the file's order where it already is one (Kahn's algorithm,
// always taking the earliest ready node). Nodes left over are on a cycle;
// the error names the first of them and the value it waits for.
func topoSort(nodes []*onnxpb.NodeProto, deps [][]int, waitsOn [][]string, where string) ([]int, error) {
	n := len(nodes)
	indeg := make([]int, n)
	users := make([][]int, n)
	for i, ds := range deps {
		indeg[i] = len(ds)
		for _, j := range ds {
			users[j] = append(users[j], i)
		}
	}
	// ready is a min-heap of node indices.
	ready := &intHeap{}
	for i := range n {
		if indeg[i] == 0 {
			ready.push(i)
		}
	}
	order := make([]int, 0, n)
	for ready.len() > 0 {
		i := ready.pop()
		order = append(order, i)
		for _, u := range users[i] {
			indeg[u]--
			if indeg[u] == 0 {
				ready.push(u)
			}
		}
	}
	if len(order) == n {
		return order, nil
	}
	for i := range n {
		if indeg[i] > 0 {
			for k, j := range deps[i] {
				if indeg[j] > 0 {
					return nil, fmt.Errorf("onnx: %s is cyclic: node %s (%s) reads %q, which is computed from the node's own output", where, nodeLabel(nodes[i]), nodes[i].GetOpType(), waitsOn[i][k])
				}
			}
		}
	}
	return nil, fmt.Errorf("onnx: %s is cyclic", where)
}

// intHeap is a min-heap of ints, so that topoSort prefers file order.
type intHeap struct{ a []int }

func (h *intHeap) len() int { return len(h.a) }

func (h *intHeap) push(x int) {
	h.a = append(h.a, x)
	for i := len(h.a) - 1; i > 0; {
		p := (i - 1) / 2
		if h.a[p] <= h.a[i] {
			break
		}
		h.a[p], h.a[i] = h.a[i], h.a[p]
		i = p
	}
}

func (h *intHeap) pop() int {
	top := h.a[0]
	last := len(h.a) - 1
	h.a[0] = h.a[last]
	h.a = h.a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.a) && h.a[l] < h.a[m] {
			m = l
		}
		if r < len(h.a) && h.a[r] < h.a[m] {
			m = r
		}
		if m == i {
			break
		}
		h.a[m], h.a[i] = h.a[i], h.a[m]
		i = m
	}
	return top
}

// scope maps value names to tensors while a graph runs; a sub-graph's
// scope falls back to its enclosing one (ONNX's outer-scope names).
type scope struct {
	vals   map[string]*tensor.Tensor
	parent *scope
	// fromData holds, for the whole call, the tensors whose values depend
	// on the model's inputs or parameters (not only on their shapes), with
	// the graph inputs each was computed from. In Graph mode those are
	// exactly the symbolic ones; marking them in PyNative mode too lets an
	// op refuse to read one as a shape in both modes alike, and lets the
	// Model tell which inputs to take as values (see runtime_values.go).
	fromData map[*tensor.Tensor]origin
	// call is the state of the model's call, shared by its sub-graphs.
	call *callState
	// where names the nodes whose sub-graphs enclose this scope, outermost
	// first, as errors name them: `node "loop" (Loop): `; empty for the
	// main graph.
	where string
	// added, in a sub-graph's scope, lists the tensors this run of the
	// sub-graph marked in fromData, which it unmarks when it returns
	// (all but its outputs): a Loop run eagerly for millions of steps
	// must not keep every step's values alive through the map.
	added *[]*tensor.Tensor
}

// keepMark records in s's run list a mark that a nested run kept (one of
// its outputs). A loop nested in this run keeps one step's outputs per
// step and unmarks the previous step's, so the list drops unmarked
// entries whenever its length reaches a power of two: it stays in
// proportion to the live marks, not to the steps.
func (s *scope) keepMark(t *tensor.Tensor) {
	if s.added == nil {
		return
	}
	*s.added = append(*s.added, t)
	if n := len(*s.added); n >= 64 && n&(n-1) == 0 {
		kept := (*s.added)[:0]
		for _, u := range *s.added {
			if _, ok := s.fromData[u]; ok {
				kept = append(kept, u)
			}
		}
		clear((*s.added)[len(kept):])
		*s.added = kept
	}
}

// markData marks t as computed from the data of origin o, recording a new
// mark in the nearest sub-graph run's list.
func (s *scope) markData(t *tensor.Tensor, o origin) {
	if old, ok := s.fromData[t]; ok {
		s.fromData[t] = old.union(o)
		return
	}
	s.fromData[t] = o
	if s.added != nil {
		*s.added = append(*s.added, t)
	}
}

func (s *scope) get(name string) (*tensor.Tensor, bool) {
	for ; s != nil; s = s.parent {
		if t, ok := s.vals[name]; ok {
			return t, true
		}
	}
	return nil, false
}
