package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"strings"

	"github.com/sporeml/spore/internal/jit"
	"github.com/sporeml/spore/tensor"
)

// Value inputs. ONNX lets a graph input be read as a value: Reshape's
// shape, Slice's starts, Squeeze's axes, TopK's k, a Loop's trip count.
// Spore's plans have static shapes, so such a value must be known when a
// plan is made. A Model therefore tracks, for every tensor of a call,
// which graph inputs it was computed from (origin); when an op reads a
// tensor computed from graph inputs alone as a value (nodeCtx.Concrete),
// the call records those inputs and fails, and the Model runs again with
// them taken as values: read directly in PyNative mode, captured as
// constants of the plan in Graph mode, whose compiled plans are then keyed
// on their values (valueKey) in a bounded cache (maxValuePlans). Both
// modes read the same inputs the same way, so they give the same results
// and the same errors. A value computed from a parameter, or from a
// sub-graph's iteration values, stays refused: no plan specialises on it.

// maxValuePlans bounds the value-specialised plans a Model keeps per
// training state and level: past it, the least recently used is dropped,
// and a value seen again compiles again. A model called with a new shape
// value on every call recompiles on every call; 32 keeps the common case
// (a few image sizes, a few sequence lengths) compiled.
const maxValuePlans = 32

// maxTrackedInputs is how many graph inputs origin tells apart; a value
// computed from an input past it is treated as non-input data, refused
// when read as a value.
const maxTrackedInputs = 64

// origin says what a data-derived tensor of a call was computed from: its
// presence in scope.fromData means the value is not a constant of the
// graph (it is symbolic in Graph mode).
type origin struct {
	// inputs has bit i set when graph input i went into the value.
	inputs uint64
	// other is set when a parameter, a sub-graph's inputs (a Loop's
	// iteration number and carried values), or an untracked input went
	// into it: values that no plan is specialised on.
	other bool
}

// union is the origin of a value computed from values of origins o and p.
func (o origin) union(p origin) origin {
	return origin{inputs: o.inputs | p.inputs, other: o.other || p.other}
}

// callState is shared by every node of one run of the main graph,
// sub-graphs included.
type callState struct {
	// names are the graph inputs' names, in Model.Inputs order.
	names []string
	// need collects the graph inputs that an op of this call read as
	// values (through nodeCtx.Concrete) while they were data: the inputs
	// to run again with as values.
	need uint64
	// valued marks the tensors computed from value inputs (which are not
	// in fromData, being values); nil when the call has none.
	valued map[*tensor.Tensor]bool
	// outer holds the graph inputs that are symbolic because the model is
	// traced inside another function: no plan of the model's own can be
	// specialised on them.
	outer valueSet
	// boxed holds the graph inputs that are sequences or optionals, whose
	// handles no plan is specialised on.
	boxed valueSet
}

// specialisable reports whether t was computed from graph inputs alone,
// all of which a plan can be specialised on: an op that may either read
// it as a value or stage it (If's condition) then reads it as a value.
func (c *nodeCtx) specialisable(t *tensor.Tensor) bool {
	o, ok := c.fromData[t]
	return ok && !o.other && o.inputs != 0 && c.call != nil && o.inputs&(c.call.outer|c.call.boxed) == 0
}

// fromInputs reports whether t was computed from the model's graph
// inputs, as data or as values, rather than from constants alone: an op
// may treat an operand the caller gives per call differently from one
// fixed in the file.
func (c *nodeCtx) fromInputs(t *tensor.Tensor) bool {
	if o, ok := c.fromData[t]; ok && o.inputs != 0 {
		return true
	}
	return c.call != nil && c.call.valued[t]
}

// inputNames lists the names of the inputs set in mask, quoted.
func (cs *callState) inputNames(mask uint64) string {
	var names []string
	for mask != 0 {
		i := bits.TrailingZeros64(mask)
		mask &^= 1 << i
		if cs != nil && i < len(cs.names) {
			names = append(names, fmt.Sprintf("%q", cs.names[i]))
		} else {
			names = append(names, fmt.Sprintf("#%d", i))
		}
	}
	return strings.Join(names, ", ")
}

// valueError is Concrete's refusal of a tensor computed from graph inputs
// alone, read as a value: recorded in the call state, it makes the Model
// take those inputs as values and run again; it is only seen when that
// cannot be done, inside a function that traces the model with symbolic
// inputs.
func (c *nodeCtx) valueError(o origin, what string) error {
	if c.call != nil {
		c.call.need |= o.inputs
	}
	return c.Errorf("input %s depends on the values of the model's input(s) %s; spore reads such inputs when the model is called and specialises its plan on their values, which it cannot do here, where the model is traced inside another function with symbolic inputs", what, c.call.inputNames(o.inputs))
}

// valueSet is a set of graph input indices (bit i: input i).
type valueSet = uint64

// valueKey encodes the values of the inputs in set, with their dtypes and
// shapes, so that two calls get the same plan exactly when those inputs
// hold the same values.
func valueKey(set valueSet, xs []*tensor.Tensor) string {
	if set == 0 {
		return ""
	}
	var b []byte
	for i, x := range xs {
		if i >= maxTrackedInputs || set&(1<<i) == 0 || x == nil {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i))
		b = binary.AppendUvarint(b, uint64(x.DType()))
		b = binary.AppendUvarint(b, uint64(x.Rank()))
		for _, d := range x.Shape() {
			b = binary.AppendUvarint(b, uint64(d))
		}
		switch x.DType() {
		case tensor.Bool:
			for _, v := range x.Bools() {
				if v {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
			}
		case tensor.Int64, tensor.Int32, tensor.Uint8:
			for _, v := range x.Int64s() {
				b = binary.AppendVarint(b, v)
			}
		default:
			for _, v := range x.Float64s() {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
			}
		}
	}
	return string(b)
}

// valuePlanKey tells apart Outputs' compiled plans: the training flag
// and the level are baked into a plan, and so are the values of the value
// inputs.
type valuePlanKey struct {
	outputsKey
	set    valueSet
	values string
}

// valuePlan is one compiled all-outputs function, specialised on the
// values of its value inputs.
type valuePlan struct {
	key valuePlanKey
	fn  *jit.Func[func(...*tensor.Tensor) []*tensor.Tensor]
}

// valuePlans is a Model's cache of compiled plans, least recently used
// first; evicted counts the plans dropped to keep it bounded and carries
// their statistics, so that JitStats counts every compilation.
type valuePlans struct {
	list    []*valuePlan
	evicted jit.Stats
	// warned says the eviction warning was printed: once per model.
	warned bool
}

// get returns the plan for k, most recently used now, or nil.
func (vp *valuePlans) get(k valuePlanKey) *valuePlan {
	for i := len(vp.list) - 1; i >= 0; i-- {
		if p := vp.list[i]; p.key == k {
			copy(vp.list[i:], vp.list[i+1:])
			vp.list[len(vp.list)-1] = p
			return p
		}
	}
	return nil
}

// add inserts p as the most recently used, evicting the least recently
// used plan of the same training state and level past maxValuePlans. The
// first eviction warns on standard error, naming the value inputs: a
// model fed a new value on every call compiles on every call.
func (vp *valuePlans) add(p *valuePlan, names []string) {
	n := 0
	for _, q := range vp.list {
		if q.key.outputsKey == p.key.outputsKey {
			n++
		}
	}
	if n >= maxValuePlans {
		for i, q := range vp.list {
			if q.key.outputsKey == p.key.outputsKey {
				vp.evicted = vp.evicted.Add(q.fn.Stats())
				vp.evicted.Evictions++
				vp.list = append(vp.list[:i], vp.list[i+1:]...)
				if !vp.warned {
					vp.warned = true
					cs := &callState{names: names}
					fmt.Fprintf(os.Stderr, "spore: WARNING: onnx.Model: more than %d values of the inputs %s, which the model reads as values, have been seen; evicting the least recently used plan. Each new value compiles a plan.\n", maxValuePlans, cs.inputNames(p.key.set))
				}
				break
			}
		}
	}
	vp.list = append(vp.list, p)
}

// drop removes p, a plan whose trace found more value inputs, and which
// no call will look up again; its statistics are kept (it may have
// compiled for other input shapes before).
func (vp *valuePlans) drop(p *valuePlan) {
	for i, q := range vp.list {
		if q == p {
			vp.evicted = vp.evicted.Add(q.fn.Stats())
			vp.list = append(vp.list[:i], vp.list[i+1:]...)
			return
		}
	}
}

// stats sums the statistics of the plans kept and evicted.
func (vp *valuePlans) stats() jit.Stats {
	s := vp.evicted
	for _, p := range vp.list {
		s = s.Add(p.fn.Stats())
	}
	return s
}

// size is the number of plans kept.
func (vp *valuePlans) size() int { return len(vp.list) }
