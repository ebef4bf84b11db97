package spore_test

import (
	"fmt"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/tensor"
)

// A watcher sees each compilation stage by stage: which nodes a pass made,
// and what a fusion absorbed.
func ExampleWatchCompiles() {
	stop := spore.WatchCompiles(func(r spore.CompileRecord) {
		fmt.Println(r.Name, r.Signature, r.Level)
		for _, p := range r.Passes {
			for _, n := range p.Graph.Nodes {
				if n.Pass == p.Pass && p.Pass != "trace" {
					fmt.Printf("  %s made %%%d = %s %v\n", p.Pass, n.ID, n.Op, n.Fused)
				}
			}
		}
	})
	defer stop()
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor {
		return ops.ReLU(ops.Add(ops.Mul(x, x), ops.ScalarLike(x, 1)))
	}, spore.JitConfig{Name: "f"})
	fmt.Println(f(tensor.FromSlice([]float32{-2, 0, 3}, 3)).Float32s())
	// Output:
	// f (float32[3]) O1
	//   fuse made %4 = Fused[Mul,Add,ReLU] [Mul Add ReLU]
	// [5 1 10]
}
