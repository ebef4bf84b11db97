package spore_test

import (
	"fmt"

	"github.com/sporeml/spore"
)

// Data-parallel training, as MindSpore's
// set_auto_parallel_context(parallel_mode=DATA_PARALLEL, gradients_mean=True):
// training-step cells made afterwards all-reduce their gradients across the
// ranks of package comm (started with comm.Init, under mpirun).
func ExampleSetAutoParallelContext() {
	spore.SetAutoParallelContext(spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true})
	defer spore.ResetAutoParallelContext()
	c := spore.GetAutoParallelContext()
	fmt.Println(c.ParallelMode, c.GradientsMean, c.Buckets()>>20, "MiB buckets")
	// Output: data_parallel true 25 MiB buckets
}
