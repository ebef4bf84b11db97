package onnx

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sporeml/spore/internal/ad"
	"github.com/sporeml/spore/onnx/internal/onnxpb"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// The ai.onnx.preview.training domain (version 1, its only one): the
// optimizer update rules Adagrad, Adam and Momentum, as element-wise
// spore ops, so that they run and trace like any other node, and
// Gradient, which differentiates the part of the graph between the values
// its attributes name with spore's autodiff (see prepareGradients).

// trainingDomain is the preview training domain's name.
const trainingDomain = "ai.onnx.preview.training"

func init() {
	// Keyed by domain and op type: the table's plain op types are
	// ai.onnx's. Any ai.onnx opset goes with the domain's one version.
	register(trainingDomain+"/Adagrad", 0, 0, opAdagrad)
	register(trainingDomain+"/Adam", 0, 0, opAdam)
	register(trainingDomain+"/Momentum", 0, 0, opMomentum)
	register(trainingDomain+"/Gradient", 0, 0, opGradient)
}

// gradientGraphAttr is the attribute prepareGradients gives a Gradient
// node: the sub-graph computing y from xs.
const gradientGraphAttr = "spore.gradient_of"

// prepareGradients gives each Gradient node of the main graph g, before
// the model is validated, a graph attribute holding a copy of the nodes
// that compute its y from its xs (the graph's inputs): a sub-graph, which
// the node runs under spore's autodiff. Values the copy reads that do not
// depend on xs come from the main graph, as for any sub-graph. A path from
// xs to y through a node with sub-graphs (If, Loop) is refused: their
// outer-scope reads would not be followed.
func prepareGradients(g *onnxpb.GraphProto) error {
	producer := map[string]*onnxpb.NodeProto{}
	for _, n := range g.GetNode() {
		for _, o := range n.GetOutput() {
			producer[o] = n
		}
	}
	for _, n := range g.GetNode() {
		if n.GetDomain() != trainingDomain || n.GetOpType() != "Gradient" {
			continue
		}
		var xs []string
		var y string
		for _, a := range n.GetAttribute() {
			switch a.GetName() {
			case "xs":
				for _, b := range a.GetStrings() {
					xs = append(xs, string(b))
				}
			case "y":
				y = string(a.GetS())
			case gradientGraphAttr:
				return fmt.Errorf("onnx: node %s (Gradient): attribute %s is spore's own", nodeLabel(n), gradientGraphAttr)
			}
		}
		if len(xs) == 0 || y == "" {
			return fmt.Errorf("onnx: node %s (Gradient): attributes xs and y are required", nodeLabel(n))
		}
		if len(n.GetInput()) < len(xs) {
			return fmt.Errorf("onnx: node %s (Gradient): %d inputs for %d xs", nodeLabel(n), len(n.GetInput()), len(xs))
		}
		isX := map[string]bool{}
		for _, x := range xs {
			isX[x] = true
		}
		// The nodes between xs and y, found from y backwards.
		keep := map[*onnxpb.NodeProto]bool{}
		stack := []string{y}
		for len(stack) > 0 {
			name := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			p := producer[name]
			if isX[name] || p == nil || keep[p] {
				continue
			}
			if p == n {
				return fmt.Errorf("onnx: node %s (Gradient): y %q is computed from the node's own output", nodeLabel(n), y)
			}
			if len(subGraphs(p)) > 0 {
				return fmt.Errorf("onnx: node %s (Gradient): y %q is computed through node %s (%s), which holds a sub-graph; spore's Gradient follows only plain nodes", nodeLabel(n), y, nodeLabel(p), p.GetOpType())
			}
			keep[p] = true
			stack = append(stack, p.GetInput()...)
		}
		sub := &onnxpb.GraphProto{Name: proto.String(nodeLabel(n) + " y")}
		for _, x := range xs {
			sub.Input = append(sub.Input, &onnxpb.ValueInfoProto{Name: proto.String(x)})
		}
		for _, p := range g.GetNode() {
			if keep[p] {
				sub.Node = append(sub.Node, proto.Clone(p).(*onnxpb.NodeProto))
			}
		}
		sub.Output = []*onnxpb.ValueInfoProto{{Name: proto.String(y)}}
		n.Attribute = append(n.Attribute, &onnxpb.AttributeProto{Name: proto.String(gradientGraphAttr), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: sub})
	}
	return nil
}

// opGradient returns dy/dx for each of xs (the node's first inputs): the
// sub-graph prepareGradients made, differentiated by spore's autodiff in
// both modes. y must have one element (ONNX gives no seed for others).
func opGradient(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	g := c.GraphAttr(gradientGraphAttr)
	if g == nil || c.runGraph == nil {
		return nil, c.Errorf("Gradient needs the model's graph (load the model with Load)")
	}
	nx := len(g.GetInput())
	if len(ins) < nx {
		return nil, c.Errorf("%d inputs for %d xs", len(ins), nx)
	}
	xs := ins[:nx]
	pos := make([]int, nx)
	for i, x := range xs {
		if x == nil || boxOf(x) != nil || !x.DType().IsFloat() {
			return nil, c.Errorf("input %d (x %q) must be a float tensor", i, g.GetInput()[i].GetName())
		}
		pos[i] = i
	}
	f := func(args ...*tensor.Tensor) *tensor.Tensor {
		outs, err := c.runGraph(g, args)
		if err != nil {
			panic(c.Errorf("%v", err))
		}
		if outs[0].Size() != 1 {
			panic(c.Errorf("y has shape %v; Gradient differentiates a one-element y", outs[0].Shape()))
		}
		return outs[0]
	}
	grads := ad.Grad(f, ad.GradPosition(pos...))(xs...)
	for i, gr := range grads {
		if gr == nil {
			grads[i] = ops.ZerosLike(xs[i])
		}
	}
	return grads, nil
}

// lookupNode finds the implementation of node n (ai.onnx, or the preview
// training domain) for the model's ai.onnx opset, or nil.
func lookupNode(n *onnxpb.NodeProto, opset int64) opFunc {
	switch d := n.GetDomain(); {
	case isDefaultDomain(d):
		return lookupOp(n.GetOpType(), opset)
	case d == trainingDomain:
		return lookupOp(trainingDomain+"/"+n.GetOpType(), opset)
	}
	return nil
}

// importsTraining reports whether the model imports the preview training
// domain.
func importsTraining(mp *onnxpb.ModelProto) bool {
	for _, o := range mp.GetOpsetImport() {
		if o.GetDomain() == trainingDomain {
			return true
		}
	}
	return false
}

// optimizerInputs splits an optimizer node's inputs R, T, then k groups
// of n tensors each (X..., G..., and the per-rule state), checking that
// the groups match X's shapes and dtype.
func optimizerInputs(c *nodeCtx, ins []*tensor.Tensor, k int) (r, t *tensor.Tensor, groups [][]*tensor.Tensor, err error) {
	if len(ins) < 2+k || (len(ins)-2)%k != 0 {
		return nil, nil, nil, c.Errorf("%d inputs: want R, T and %d groups of as many tensors", len(ins), k)
	}
	r, t = ins[0], ins[1]
	if r == nil || t == nil {
		return nil, nil, nil, c.Errorf("inputs R and T are required")
	}
	if r.Size() != 1 || !isFloat(r.DType()) {
		return nil, nil, nil, c.Errorf("R must be a one-element float tensor, got %v %v", r.Shape(), r.DType())
	}
	if t.Size() != 1 || t.DType() != tensor.Int64 {
		return nil, nil, nil, c.Errorf("T must be a one-element int64 tensor, got %v %v", t.Shape(), t.DType())
	}
	n := (len(ins) - 2) / k
	groups = make([][]*tensor.Tensor, k)
	for g := range k {
		groups[g] = ins[2+g*n : 2+(g+1)*n]
	}
	for i := range n {
		x := groups[0][i]
		for g := range k {
			y := groups[g][i]
			if y == nil {
				return nil, nil, nil, c.Errorf("input %d is absent", 2+g*n+i)
			}
			if !isFloat(y.DType()) || y.DType() != x.DType() || !y.Shape().Equal(x.Shape()) {
				return nil, nil, nil, c.Errorf("input %d is %v %v; the tensors of one parameter must match X (%v %v)", 2+g*n+i, y.Shape(), y.DType(), x.Shape(), x.DType())
			}
		}
	}
	return r, t, groups, nil
}

// optScalars makes scalar constants of dtype dt, and casts R and T to it
// (as scalars), for the update rules' arithmetic.
func optScalars(dt tensor.DType, r, t *tensor.Tensor) (k func(float64) *tensor.Tensor, rs, ts *tensor.Tensor) {
	k = func(v float64) *tensor.Tensor { return tensor.Full(dt, v) }
	return k, ops.Cast(ops.Reshape(r), dt), ops.Cast(ops.Reshape(t), dt)
}

// opAdagrad: r = R / (1 + T·decay_factor), g = norm_coefficient·X + G,
// H' = H + g², X' = X − r·g / (√H' + epsilon). Outputs X'..., H'....
func opAdagrad(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, gr, err := optimizerInputs(c, ins, 3)
	if err != nil {
		return nil, err
	}
	decay, eps, norm := float64(c.Float("decay_factor", 0)), float64(c.Float("epsilon", 1e-6)), float64(c.Float("norm_coefficient", 0))
	n := len(gr[0])
	outs := make([]*tensor.Tensor, 2*n)
	for i := range n {
		x, g, h := gr[0][i], gr[1][i], gr[2][i]
		k, rs, ts := optScalars(x.DType(), r, t)
		rr := ops.Div(rs, ops.Add(k(1), ops.Mul(ts, k(decay))))
		greg := ops.Add(ops.Mul(k(norm), x), g)
		hNew := ops.Add(h, ops.Mul(greg, greg))
		outs[i] = ops.Sub(x, ops.Div(ops.Mul(rr, greg), ops.Add(ops.Sqrt(hNew), k(eps))))
		outs[n+i] = hNew
	}
	return outs, nil
}

// opAdam: g = norm_coefficient·X + G, V' = alpha·V + (1−alpha)·g,
// H' = beta·H + (1−beta)·g², r = R·√(1−beta^T)/(1−alpha^T) when T > 0
// (R otherwise), X' = (1 − norm_coefficient_post)·(X − r·V'/(√H' +
// epsilon)). Outputs X'..., V'..., H'....
func opAdam(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, gr, err := optimizerInputs(c, ins, 4)
	if err != nil {
		return nil, err
	}
	alpha, beta := float64(c.Float("alpha", 0.9)), float64(c.Float("beta", 0.999))
	eps, norm, post := float64(c.Float("epsilon", 1e-6)), float64(c.Float("norm_coefficient", 0)), float64(c.Float("norm_coefficient_post", 0))
	n := len(gr[0])
	outs := make([]*tensor.Tensor, 3*n)
	for i := range n {
		x, g, v, h := gr[0][i], gr[1][i], gr[2][i], gr[3][i]
		k, rs, ts := optScalars(x.DType(), r, t)
		greg := ops.Add(ops.Mul(k(norm), x), g)
		vNew := ops.Add(ops.Mul(k(alpha), v), ops.Mul(k(1-alpha), greg))
		hNew := ops.Add(ops.Mul(k(beta), h), ops.Mul(k(1-beta), ops.Mul(greg, greg)))
		corrected := ops.Div(ops.Mul(rs, ops.Sqrt(ops.Sub(k(1), ops.Pow(k(beta), ts)))), ops.Sub(k(1), ops.Pow(k(alpha), ts)))
		rr := ops.Where(ops.Greater(ts, k(0)), corrected, rs)
		xNew := ops.Sub(x, ops.Mul(rr, ops.Div(vNew, ops.Add(ops.Sqrt(hNew), k(eps)))))
		outs[i] = ops.Mul(k(1-post), xNew)
		outs[n+i] = vNew
		outs[2*n+i] = hNew
	}
	return outs, nil
}

// opMomentum: g = norm_coefficient·X + G, b = beta when T > 0 (1 at the
// first step), V' = alpha·V + b·g; X' = X − R·V' ("standard") or
// X − R·(g + alpha·V') ("nesterov"). Outputs X'..., V'....
func opMomentum(c *nodeCtx, ins []*tensor.Tensor) ([]*tensor.Tensor, error) {
	for _, a := range []string{"alpha", "beta", "mode", "norm_coefficient"} {
		if !c.Has(a) {
			return nil, c.Errorf("attribute %s is required", a)
		}
	}
	mode := c.String("mode", "")
	if mode != "standard" && mode != "nesterov" {
		return nil, c.Errorf("mode %q: want \"standard\" or \"nesterov\"", mode)
	}
	r, t, gr, err := optimizerInputs(c, ins, 3)
	if err != nil {
		return nil, err
	}
	alpha, beta, norm := float64(c.Float("alpha", 0)), float64(c.Float("beta", 0)), float64(c.Float("norm_coefficient", 0))
	n := len(gr[0])
	outs := make([]*tensor.Tensor, 2*n)
	for i := range n {
		x, g, v := gr[0][i], gr[1][i], gr[2][i]
		k, rs, ts := optScalars(x.DType(), r, t)
		greg := ops.Add(ops.Mul(k(norm), x), g)
		b := ops.Where(ops.Greater(ts, k(0)), k(beta), k(1))
		vNew := ops.Add(ops.Mul(k(alpha), v), ops.Mul(b, greg))
		step := vNew
		if mode == "nesterov" {
			step = ops.Add(greg, ops.Mul(k(alpha), vNew))
		}
		outs[i] = ops.Sub(x, ops.Mul(rs, step))
		outs[n+i] = vNew
	}
	return outs, nil
}
