package graph

import (
	"fmt"
)

// Verify checks the graph's invariants: unique IDs, args defined earlier in
// Values, ops with a prim and inputs/params/consts without args, metas that
// match the prims' inference, outputs and assignments that refer to values
// in the graph, assignments that match their parameters, and the regions
// of control-flow values (bindings and bodies, recursively). Passes run it
// between each other in tests; it returns the first violation found.
func Verify(g *Graph) error {
	pos := make(map[*Value]int, len(g.Values))
	ids := make(map[int]bool, len(g.Values))
	for i, v := range g.Values {
		if _, dup := pos[v]; dup {
			return fmt.Errorf("graph %s: value %%%d appears twice", g.Name, v.ID)
		}
		if ids[v.ID] {
			return fmt.Errorf("graph %s: ID %d used twice", g.Name, v.ID)
		}
		if v.ID >= g.nextID {
			return fmt.Errorf("graph %s: ID %d beyond NumIDs %d", g.Name, v.ID, g.nextID)
		}
		ids[v.ID] = true
		pos[v] = i
		switch v.Kind {
		case KindInput:
			if v.Index < 0 || v.Index >= len(g.Inputs) || g.Inputs[v.Index] != v {
				return fmt.Errorf("graph %s: input %%%d has index %d not matching Inputs", g.Name, v.ID, v.Index)
			}
		case KindParam, KindConst:
			if v.Tensor == nil {
				return fmt.Errorf("graph %s: %v %%%d has no tensor", g.Name, v.Kind, v.ID)
			}
			if !v.Tensor.Shape().Equal(v.Meta.Shape) || v.Tensor.DType() != v.Meta.DType {
				return fmt.Errorf("graph %s: %v %%%d meta %v %v differs from its tensor %v %v", g.Name, v.Kind, v.ID, v.Meta.DType, v.Meta.Shape, v.Tensor.DType(), v.Tensor.Shape())
			}
		case KindOp:
			if v.Prim == nil {
				return fmt.Errorf("graph %s: op %%%d has no primitive", g.Name, v.ID)
			}
			for _, a := range v.Args {
				p, ok := pos[a]
				if !ok || p >= i {
					return fmt.Errorf("graph %s: %%%d = %s uses %%%d before its definition", g.Name, v.ID, v.Prim.Name, a.ID)
				}
			}
			if err := verifyRegions(g, v); err != nil {
				return err
			}
			if v.IsMulti() {
				break
			}
			if err := checkInfer(v); err != nil {
				return fmt.Errorf("graph %s: %%%d = %s: %v", g.Name, v.ID, v.Prim.Name, err)
			}
		case KindProj:
			if len(v.Args) != 1 || !v.Args[0].IsMulti() {
				return fmt.Errorf("graph %s: proj %%%d does not read a multi-result op", g.Name, v.ID)
			}
			src := v.Args[0]
			if p, ok := pos[src]; !ok || p >= i {
				return fmt.Errorf("graph %s: proj %%%d precedes its op %%%d", g.Name, v.ID, src.ID)
			}
			if v.Index < 0 || v.Index >= len(src.Metas) || !src.Metas[v.Index].Shape.Equal(v.Meta.Shape) || src.Metas[v.Index].DType != v.Meta.DType {
				return fmt.Errorf("graph %s: proj %%%d index %d does not match op %%%d's results", g.Name, v.ID, v.Index, src.ID)
			}
		default:
			return fmt.Errorf("graph %s: value %%%d has unknown kind %d", g.Name, v.ID, v.Kind)
		}
	}
	for i, in := range g.Inputs {
		if _, ok := pos[in]; !ok || in.Index != i {
			return fmt.Errorf("graph %s: input %d missing from Values", g.Name, i)
		}
	}
	for i, o := range g.Outputs {
		if _, ok := pos[o]; !ok {
			return fmt.Errorf("graph %s: output %d (%%%d) is not in the graph", g.Name, i, o.ID)
		}
	}
	for _, a := range g.Assigns {
		if a.Param.Kind != KindParam {
			return fmt.Errorf("graph %s: assignment target %%%d is a %v, not a param", g.Name, a.Param.ID, a.Param.Kind)
		}
		if _, ok := pos[a.Val]; !ok {
			return fmt.Errorf("graph %s: assigned value %%%d is not in the graph", g.Name, a.Val.ID)
		}
		if !a.Val.Meta.Shape.Equal(a.Param.Meta.Shape) || a.Val.Meta.DType != a.Param.Meta.DType {
			return fmt.Errorf("graph %s: assignment of %%%d %v to param %%%d %v", g.Name, a.Val.ID, a.Val.Meta, a.Param.ID, a.Param.Meta)
		}
	}
	return nil
}

// checkInfer re-runs inference and compares it with the recorded meta.
func checkInfer(v *Value) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("inference fails: %v", r)
		}
	}()
	m := InferMeta(v.Prim, v.Attrs, v.Args)
	if !m.Shape.Equal(v.Meta.Shape) || m.DType != v.Meta.DType {
		return fmt.Errorf("recorded %v%v, inference gives %v%v", v.Meta.DType, v.Meta.Shape, m.DType, m.Shape)
	}
	return nil
}
