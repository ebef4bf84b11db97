// Package amp is automatic mixed precision: the levels (MindSpore's amp_level
// O0, O2, O3), the autocast policies that cast operands as ops are
// applied, and the scope that turns a policy on for a goroutine. The root
// package spore re-exports it as AmpLevel, AmpScope and ParseAmpLevel.
package amp

import (
	"fmt"
	"reflect"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// Level is a level of automatic mixed precision, spelt as MindSpore's
// amp_level ("O0", "O2", "O3"). Parameters stay Float32 at every level
// (fp32 master weights): a level only decides which ops compute in
// bfloat16, by casting their operands as they are applied (see
// Scope), so that gradients reach the Float32 parameters through the
// casts' VJPs and optimisers update them in float32.
type Level string

// The levels. MindSpore's O1 (a list of ops in float16, the rest in
// float32) is not built; Parse refuses it.
const (
	// O0 runs everything in Float32: the plain network, bit for bit.
	O0 Level = "O0"
	// O2 runs MatMul and Conv2D in bfloat16 — Float32 operands rounded
	// to bfloat16, products accumulated in float32, the result rounded to
	// bfloat16 and cast back to Float32 — and everything else (bias adds,
	// activations, softmax, BatchNorm and LayerNorm, the loss) in Float32.
	O2 Level = "O2"
	// O3 runs every op that has a BFloat16 kernel in bfloat16: Float32
	// operands (activations and parameters alike) are cast to BFloat16 at
	// each such op; an op without a BFloat16 kernel gets its BFloat16
	// operands cast back to Float32 and runs in float32. Parameters and
	// their updates stay Float32. The network's result comes back Float32
	// (nn.AutoMixedPrecision, JitConfig.Precision).
	O3 Level = "O3"
)

// Parse reads a level as MindSpore spells it ("O0", "O2", "O3");
// the empty string is O0.
func Parse(s string) (Level, error) {
	l := Level(s)
	if l == "" {
		return O0, nil
	}
	if err := l.Validate(); err != nil {
		return "", err
	}
	return l, nil
}

// Validate reports an error naming the level unless it is O0, O2, O3 or
// empty (O0).
func (l Level) Validate() error {
	switch l {
	case "", O0, O2, O3:
		return nil
	case "O1":
		return fmt.Errorf("amp level O1 is not supported: choose O0 (float32), O2 (matmul and conv in bfloat16) or O3 (everything in bfloat16)")
	}
	return fmt.Errorf("unknown amp level %q: want O0, O2 or O3", string(l))
}

// String returns the level's name; the empty level is O0.
func (l Level) String() string {
	if l == "" {
		return string(O0)
	}
	return string(l)
}

// Scope makes level the mixed precision of every op the calling
// goroutine applies until the returned function is called: eagerly, the
// casts run; while tracing, they land in the graph, where the compiler
// fuses them into the GEMM (weights packed to bfloat16 once per update).
// Scopes nest, the innermost winning; O0 (or "") inside a mixed region
// runs in full precision. An invalid level panics with an *Error.
func Scope(level Level) (end func()) {
	if err := level.Validate(); err != nil {
		panic(core.Errorf("AmpScope", "%v", err))
	}
	switch level {
	case O2:
		return core.BeginAutocast(ampO2{})
	case O3:
		return core.BeginAutocast(ampO3{})
	}
	return core.BeginAutocast(nil)
}

// Key names the calling goroutine's mixed-precision scope for the cache
// of compiled functions: a function traced inside an O2 scope has casts
// in its plan that a call outside it must not run, so the scope's level
// is part of the plan's key, as a constant argument is ("" when the
// scope is full precision, or there is none).
func Key() string {
	switch core.CurrentAutocast().(type) {
	case ampO2:
		return " amp=O2"
	case ampO3:
		return " amp=O3"
	}
	return ""
}

// ampO2 casts the operands of MatMul and Conv2D to bfloat16 and their
// result back to Float32.
type ampO2 struct{}

func (ampO2) Apply(p *core.Prim, attrs any, in []*Tensor, apply func(*core.Prim, any, ...*Tensor) *Tensor) *Tensor {
	if (p == ops.MatMulPrim || p == ops.Conv2DPrim) && len(in) == 2 &&
		in[0].DType() == tensor.Float32 && in[1].DType() == tensor.Float32 {
		a := apply(ops.CastPrim, tensor.BFloat16, in[0])
		b := apply(ops.CastPrim, tensor.BFloat16, in[1])
		return apply(ops.CastPrim, tensor.Float32, apply(p, attrs, a, b))
	}
	return apply(p, attrs, in...)
}

// ampO3 runs every op with a BFloat16 kernel in bfloat16.
type ampO3 struct{}

func (ampO3) Apply(p *core.Prim, attrs any, in []*Tensor, apply func(*core.Prim, any, ...*Tensor) *Tensor) *Tensor {
	if p == ops.CastPrim || len(in) == 0 {
		return apply(p, attrs, in...)
	}
	// An op keyed on a floating-point first operand runs in bfloat16 when
	// it has that kernel; any other (keyed on indices or a condition, or
	// without a bfloat16 kernel) gets its floats in Float32, so that its
	// operands agree.
	to := tensor.Float32
	if k := in[0].DType(); k == tensor.Float32 || k == tensor.BFloat16 {
		dts := make([]tensor.DType, len(in))
		for i, x := range in {
			dts[i] = x.DType()
			if dts[i] == tensor.Float32 {
				dts[i] = tensor.BFloat16
			}
		}
		if _, err := p.KernelForKey(p.KeyOf(dts, tensor.BFloat16), core.CPU); err == nil {
			to = tensor.BFloat16
		}
	}
	from := tensor.BFloat16
	if to == tensor.BFloat16 {
		from = tensor.Float32
	}
	var cast []*Tensor
	for i, x := range in {
		if x.DType() != from {
			continue
		}
		if cast == nil {
			cast = append([]*Tensor(nil), in...)
		}
		cast[i] = apply(ops.CastPrim, to, x)
	}
	if cast == nil {
		return apply(p, attrs, in...)
	}
	return apply(p, attrs, cast...)
}

// Func returns fn (a function value) running under level, with its
// BFloat16 tensor results cast back to Float32; fn itself when level is O0.
func Func(fv reflect.Value, level Level) reflect.Value {
	if level == "" || level == O0 {
		return fv
	}
	return reflect.MakeFunc(fv.Type(), func(args []reflect.Value) []reflect.Value {
		end := Scope(level)
		var res []reflect.Value
		func() {
			defer end()
			if fv.Type().IsVariadic() {
				res = fv.CallSlice(args)
			} else {
				res = fv.Call(args)
			}
		}()
		for i, r := range res {
			res[i] = ampResult(r)
		}
		return res
	})
}

// ampResult casts BFloat16 tensors in a result back to Float32: a tensor,
// or a slice of tensors (other values are returned as they are), so that a
// function run at O3 hands its caller Float32 results, as MindSpore's
// auto_mixed_precision does.
func ampResult(r reflect.Value) reflect.Value {
	switch {
	case r.Type() == tensorType:
		if t := r.Interface().(*Tensor); t != nil && t.DType() == tensor.BFloat16 {
			return reflect.ValueOf(ops.Cast(t, tensor.Float32))
		}
	case r.Kind() == reflect.Slice && r.Type().Elem() == tensorType:
		var out reflect.Value
		for i := 0; i < r.Len(); i++ {
			t := r.Index(i).Interface().(*Tensor)
			if t == nil || t.DType() != tensor.BFloat16 {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeSlice(r.Type(), r.Len(), r.Len())
				reflect.Copy(out, r)
			}
			out.Index(i).Set(reflect.ValueOf(ops.Cast(t, tensor.Float32)))
		}
		if out.IsValid() {
			return out
		}
	}
	return r
}

// Tensor is the tensor type the mixed-precision policies cast.
type Tensor = tensor.Tensor

// tensorType is the reflected *Tensor, for finding the tensor results of a
// function run under a level.
var tensorType = reflect.TypeFor[*Tensor]()
