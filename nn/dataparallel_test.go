package nn_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/internal/testkit"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// dpMLP is a three-layer MLP with a loss, from the framework seed.
func dpMLP() *nn.WithLossCell {
	spore.SetSeed(7)
	net := nn.NewSequentialCell(nn.NewDense(8, 32), nn.NewReLU(), nn.NewDense(32, 16), nn.NewReLU(), nn.NewDense(16, 3))
	return nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
}

// dpRegularised is dpMLP with dropout and batch normalisation: random
// draws and running statistics inside the step.
func dpRegularised() *nn.WithLossCell {
	spore.SetSeed(7)
	net := nn.NewSequentialCell(nn.NewDense(8, 32), nn.NewBatchNorm1d(32), nn.NewReLU(), nn.NewDropout(0.2),
		nn.NewDense(32, 16), nn.NewReLU(), nn.NewDropout(0.1), nn.NewDense(16, 3))
	return nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
}

// dpCell is a training step over dpMLP with momentum SGD, data-parallel
// as pc says (nil: the process-wide setting).
func dpCell(pc *spore.AutoParallelContext, mode nn.StepMode, level spore.Level) (*nn.TrainOneStepCell, *nn.WithLossCell) {
	return dpCellFor(dpMLP(), pc, mode, level)
}

func dpCellFor(wl *nn.WithLossCell, pc *spore.AutoParallelContext, mode nn.StepMode, level spore.Level) (*nn.TrainOneStepCell, *nn.WithLossCell) {
	opt := optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05)}, Momentum: 0.9})
	cfg := nn.TrainOneStepConfig{Mode: mode, Jit: spore.JitConfig{Level: level}, ClipGlobalNorm: 5}
	if pc != nil {
		cfg.Parallel = pc
	}
	return nn.NewTrainOneStepCell(wl, opt, cfg), wl
}

// In one process the all-reduce is the identity, so a data-parallel step
// trains exactly as a stand-alone one: bitwise at O0 in both modes (the
// modes agree bitwise there), and within rounding at O1, where the
// stand-alone step fuses its weight gradients into the updates.
func TestDataParallelSingleProcessMatches(t *testing.T) {
	x, y := blobs(5, 48, 8, 3)
	dp := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true, BucketBytes: 1 << 10}
	type run struct {
		name  string
		pc    *spore.AutoParallelContext
		mode  nn.StepMode
		level spore.Level
	}
	for _, net := range []struct {
		name string
		make func() *nn.WithLossCell
	}{{"mlp", dpMLP}, {"dropout and batchnorm", dpRegularised}} {
		t.Run(net.name, func(t *testing.T) { dpMatches(t, x, y, dp, net.make) })
	}
}

func dpMatches(t *testing.T, x, y *tensor.Tensor, dp *spore.AutoParallelContext, makeNet func() *nn.WithLossCell) {
	type run struct {
		name  string
		pc    *spore.AutoParallelContext
		mode  nn.StepMode
		level spore.Level
	}
	train := func(r run) ([]float64, []*tensor.Tensor) {
		pc := r.pc
		if pc == nil {
			pc = &spore.AutoParallelContext{}
		}
		cell, wl := dpCellFor(makeNet(), pc, r.mode, r.level)
		var losses []float64
		for range 12 {
			losses = append(losses, cell.Step(x, y))
		}
		return losses, wl.Parameters()
	}
	for _, c := range []struct {
		level spore.Level
		tol   float64
	}{{spore.O0, 0}, {spore.O1, 1e-5}} {
		ref, refW := train(run{"stand-alone eager", nil, nn.StepEager, c.level})
		for _, r := range []run{
			{"data-parallel eager", dp, nn.StepEager, c.level},
			{"data-parallel compiled", dp, nn.StepCompiled, c.level},
			{"stand-alone compiled", nil, nn.StepCompiled, c.level},
		} {
			losses, w := train(r)
			for k := range ref {
				if d := math.Abs(losses[k] - ref[k]); d > c.tol*math.Abs(ref[k]) {
					t.Fatalf("%v %s: step %d loss %.9g, stand-alone eager %.9g", c.level, r.name, k, losses[k], ref[k])
				}
			}
			for i := range w {
				sameValues(t, c.level.String()+" "+r.name+" "+w[i].Name(), w[i], refW[i], c.tol)
			}
		}
		if ref[len(ref)-1] > 0.7*ref[0] {
			t.Errorf("%v: loss did not fall: %v", c.level, ref)
		}
	}
}

// The all-reduce is a node of the compiled training step and shows in its
// IR: one start and one wait for each bucket (the first carries the loss).
func TestDataParallelInIR(t *testing.T) {
	x, y := blobs(5, 16, 8, 3)
	for _, c := range []struct {
		bucket, starts int
	}{
		{0, 1},       // the default 25 MB: one bucket for the whole net
		{1 << 10, 4}, // 1 KiB: four buckets (see the overlap test)
	} {
		pc := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true, BucketBytes: c.bucket}
		cell, _ := dpCell(pc, nn.StepCompiled, spore.O1)
		ir, err := cell.StepIR(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(ir, "AllReduceStart("); n != c.starts {
			t.Errorf("bucket %d: %d AllReduceStart nodes, want %d:\n%s", c.bucket, n, c.starts, ir)
		}
		if n := strings.Count(ir, "AllReduceWait("); n != c.starts {
			t.Errorf("bucket %d: %d AllReduceWait nodes, want %d", c.bucket, n, c.starts)
		}
		if !strings.Contains(ir, "op=sum") {
			t.Errorf("IR lacks the gradients' sum:\n%s", ir)
		}
	}
	// The numbered dumps of SPORE_SAVE_GRAPHS (the context's SaveGraphs)
	// show them too, in the final graph.
	dir := t.TempDir()
	old := spore.GetContext().SaveGraphs
	spore.SetContext(spore.WithSaveGraphs(dir))
	pc := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true}
	cell, _ := dpCell(pc, nn.StepCompiled, spore.O1)
	cell.Step(x, y)
	spore.SetContext(spore.WithSaveGraphs(old))
	finals, _ := filepath.Glob(filepath.Join(dir, "*", "*_final.ir"))
	if len(finals) != 1 {
		t.Fatalf("dumps %v, want one final IR", finals)
	}
	if b, err := os.ReadFile(finals[0]); err != nil || !strings.Contains(string(b), "AllReduceStart(") || !strings.Contains(string(b), "AllReduceWait(") {
		t.Errorf("the final IR dump lacks the all-reduce (%v):\n%s", err, b)
	}
	// Stand-alone: no collectives.
	cell, _ = dpCell(&spore.AutoParallelContext{}, nn.StepCompiled, spore.O1)
	if ir, _ := cell.StepIR(x, y); strings.Contains(ir, "AllReduce") {
		t.Errorf("stand-alone step has an all-reduce:\n%s", ir)
	}
}

// The process-wide setting reaches cells made after it.
func TestDataParallelContext(t *testing.T) {
	defer spore.ResetAutoParallelContext()
	spore.SetAutoParallelContext(spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true})
	if got := spore.GetAutoParallelContext(); got.ParallelMode != spore.DataParallel || !got.GradientsMean || got.Buckets() != spore.DefaultBucketBytes {
		t.Fatalf("GetAutoParallelContext = %+v", got)
	}
	x, y := blobs(5, 16, 8, 3)
	cell, _ := dpCell(nil, nn.StepCompiled, spore.O1)
	if ir, _ := cell.StepIR(x, y); !strings.Contains(ir, "AllReduceStart(") {
		t.Errorf("a cell made under DataParallel has no all-reduce:\n%s", ir)
	}
	testkit.MustPanic(t, func() { spore.SetAutoParallelContext(spore.AutoParallelContext{ParallelMode: 5}) }, "unknown parallel mode")
	testkit.MustPanic(t, func() {
		dpCell(&spore.AutoParallelContext{ParallelMode: spore.DataParallel, BucketBytes: -1}, nn.StepEager, spore.O1)
	}, "negative bucket size")
}

// TestDataParallelOverlapSchedule compiles the data-parallel step of a
// three-layer network with small buckets and checks the plan's order
// (the plan runs the optimised graph's values in order): the first
// gradient bucket is issued before the last gradient is computed, and
// every wait comes after all the gradients, just before its first use.
func TestDataParallelOverlapSchedule(t *testing.T) {
	x, y := blobs(5, 16, 8, 3)
	for _, level := range []spore.Level{spore.O0, spore.O1} {
		pc := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true, BucketBytes: 1 << 10}
		cell, _ := dpCell(pc, nn.StepCompiled, level)
		g, err := graph.Trace("step", []tensor.Meta{x.Meta(), y.Meta()}, func(a []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{cell.Construct(a[0], a[1])}
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := compile.Run(g, compile.Options{Level: level, Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		order := res.Plan.Graph().Values
		pos := map[*graph.Value]int{}
		for i, v := range order {
			pos[v] = i
		}
		// A gradient is what a bucket packs: follow a start's argument
		// back through the packing (Concat, Reshape) to the ops that
		// computed the gradients.
		var starts, waits []*graph.Value
		lastGrad := -1
		for _, v := range order {
			switch {
			case v.Kind != graph.KindOp:
			case v.Prim == comm.AllReduceStartPrim:
				starts = append(starts, v)
			case v.Prim == comm.AllReduceWaitPrim:
				waits = append(waits, v)
			}
		}
		// A start's arguments are the bucket's gradients (a scalar one is
		// the loss, which rides in the first bucket); a gradient is
		// computed by the op its argument is, or views.
		var gradStarts []*graph.Value
		for _, s := range starts {
			for _, a := range s.Args {
				if len(a.Meta.Shape) == 0 {
					continue // the loss
				}
				for a.Kind == graph.KindOp && a.Prim == ops.ReshapePrim {
					a = a.Args[0]
				}
				lastGrad = max(lastGrad, pos[a])
			}
			gradStarts = append(gradStarts, s)
		}
		if len(gradStarts) < 3 {
			t.Fatalf("%v: %d gradient buckets, want several", level, len(gradStarts))
		}
		if first := pos[gradStarts[0]]; first >= lastGrad {
			t.Errorf("%v: first bucket issued at step %d, after the last gradient (step %d)", level, first, lastGrad)
		} else {
			t.Logf("%v: %d steps; bucket starts at %v, last gradient at %d", level, len(order), positions(gradStarts, pos), lastGrad)
		}
		for _, w := range waits {
			if pos[w] < lastGrad {
				t.Errorf("%v: a wait at step %d comes before the last gradient (step %d)", level, pos[w], lastGrad)
			}
		}
	}
}

func positions(vs []*graph.Value, pos map[*graph.Value]int) []int {
	var ps []int
	for _, v := range vs {
		ps = append(ps, pos[v])
	}
	return ps
}

// A compiled data-parallel step allocates nothing per call either (in one
// process; the MPI transport allocates its requests).
func TestDataParallelCompiledAllocs(t *testing.T) {
	x, y := blobs(5, 32, 8, 3)
	pc := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true, BucketBytes: 1 << 10}
	cell, _ := dpCell(pc, nn.StepCompiled, spore.O1)
	cell.Step(x, y)
	if n := testing.AllocsPerRun(50, func() { cell.Step(x, y) }); n != 0 {
		t.Errorf("compiled data-parallel Step allocates %v times per call", n)
	}
}

// The seed network's compiled training step with data parallelism in one
// process, where the all-reduce is the identity: what packing the
// gradients into buckets and out again costs. Compare side by side:
//
//	go test -run XXX -bench 'TrainOneStepSeedGraph' ./nn
func BenchmarkTrainOneStepSeedGraphDataParallel(b *testing.B) {
	cell, x, y := seedTrainCell(nn.StepCompiled)
	pc := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true}
	dp := nn.NewTrainOneStepCell(cell.Network, cell.Optimizer, nn.TrainOneStepConfig{Mode: nn.StepCompiled, Parallel: pc})
	dp.Step(x, y)
	b.ReportAllocs()
	for b.Loop() {
		dp.Step(x, y)
	}
}
