//go:build mpi

package comm_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// childEnv marks the processes mpirun starts for TestMPI.
const childEnv = "SPORE_COMM_MPI_CHILD"

// TestMPI runs TestMPIRanks in two processes under mpirun and reports
// their output.
func TestMPI(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found (apt-get install -y openmpi-bin)")
	}
	// Once with MPI_THREAD_MULTIPLE (calls from any thread) and blocking
	// bucket reductions, once with every call made from the thread that
	// started MPI and non-blocking ones (MPI_Iallreduce).
	for _, mode := range []string{"0", "1"} {
		t.Run("funneled,nonblocking="+mode, func(t *testing.T) {
			cmd := exec.Command(mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2",
				"-x", childEnv+"=1", "-x", "SPORE_MPI_FUNNELED="+mode, "-x", "SPORE_MPI_NONBLOCKING="+mode,
				os.Args[0], "-test.run", "^TestMPIRanks$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"=1", "SPORE_MPI_FUNNELED="+mode, "SPORE_MPI_NONBLOCKING="+mode)
			out, err := cmd.CombinedOutput()
			t.Logf("mpirun output:\n%s", out)
			if err != nil {
				t.Fatalf("mpirun: %v", err)
			}
			if n := strings.Count(string(out), "--- PASS: TestMPIRanks ("); n != 2 {
				t.Fatalf("%d ranks passed, want 2", n)
			}
		})
	}
}

// TestMPIRanks is one rank of TestMPI.
func TestMPIRanks(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestMPI under mpirun")
	}
	// A data-parallel step compiled before Init (one rank) is compiled
	// again for two: its 1/N scaling is a constant of the graph.
	early := earlyStep()
	if err := comm.Init(); err != nil {
		t.Fatal(err)
	}
	defer comm.Finalize()
	t.Run("RetraceAfterInit", func(t *testing.T) {
		early()
		if n := early(); n != 2 {
			t.Errorf("%d compiles of a step used before and after Init, want 2", n)
		}
	})
	if comm.Size() != 2 || comm.Backend() != "Open MPI" {
		t.Fatalf("size %d, backend %q; want 2 ranks of Open MPI", comm.Size(), comm.Backend())
	}
	r := float32(comm.Rank())
	t.Run("GoPanics", func(t *testing.T) {
		// MPI's signal handlers must not replace Go's: a nil dereference
		// stays a panic that recover sees.
		var p *[4]float32
		got := func() (r any) {
			defer func() { r = recover() }()
			return p[1]
		}()
		if got == nil {
			t.Fatal("a nil dereference was not a panic")
		}
	})
	t.Run("Collectives", func(t *testing.T) { collectives(t, r) })
	t.Run("Helpers", helpers)
	t.Run("SyncBatchNorm", syncBatchNorm)
	t.Run("DataParallelStep", dataParallelStep)
	if err := comm.Barrier(); err != nil {
		t.Fatal(err)
	}
	// After Finalize: the rank stays, collectives and a new Init fail.
	rank := comm.Rank()
	if err := comm.Finalize(); err != nil {
		t.Fatal(err)
	}
	if comm.Initialized() || comm.Rank() != rank || comm.Size() != 2 {
		t.Errorf("after Finalize: initialized %v, rank %d, size %d", comm.Initialized(), comm.Rank(), comm.Size())
	}
	if err := comm.Barrier(); err == nil || !strings.Contains(err.Error(), "finalized") {
		t.Errorf("Barrier after Finalize: %v", err)
	}
	if err := comm.Init(); err == nil || !strings.Contains(err.Error(), "Init after Finalize") {
		t.Errorf("Init after Finalize: %v", err)
	}
	if err := comm.AllReduceFloat64s([]float64{1}, comm.Sum); err == nil {
		t.Error("AllReduceFloat64s after Finalize succeeded")
	}
}

func want(t *testing.T, what string, got *tensor.Tensor, w []float32, shape ...int) {
	t.Helper()
	if len(shape) > 0 && !got.Shape().Equal(tensor.Shape(shape)) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	g := got.Float32s()
	for i := range w {
		if g[i] != w[i] {
			t.Fatalf("rank %d: %s = %v, want %v", comm.Rank(), what, g, w)
		}
	}
}

func collectives(t *testing.T, r float32) {
	x := tensor.FromSlice([]float32{r + 1, 10 * (r + 1), -r})
	for _, mode := range []string{"eager", "graph"} {
		run := func(f func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			if mode == "graph" {
				return spore.Jit(f)(x)
			}
			return f(x)
		}
		want(t, mode+" sum", run(func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Sum) }), []float32{3, 30, -1})
		want(t, mode+" mean", run(func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Mean) }), []float32{1.5, 15, -0.5})
		want(t, mode+" max", run(func(x *tensor.Tensor) *tensor.Tensor { return comm.AllReduce(x, comm.Max) }), []float32{2, 20, 0})
		want(t, mode+" start/wait", run(func(x *tensor.Tensor) *tensor.Tensor {
			a := comm.AllReduceStart(comm.Sum, x)
			b := comm.AllReduceStart(comm.Mean, ops.Mul(x, x), ops.Reshape(x, 3, 1))
			bs := comm.AllReduceWait(b, comm.Mean, tensor.Shape{3}, tensor.Shape{3, 1})
			return ops.Add(ops.Add(comm.AllReduceWait(a, comm.Sum, tensor.Shape{3})[0], bs[0]), ops.Reshape(bs[1], 3))
		}), []float32{3 + 2.5 + 1.5, 30 + 250 + 15, -1 + 0.5 - 0.5})
		want(t, mode+" broadcast", run(func(x *tensor.Tensor) *tensor.Tensor { return comm.Broadcast(x, 1) }), []float32{2, 20, -1})
		want(t, mode+" gather", run(func(x *tensor.Tensor) *tensor.Tensor { return comm.AllGather(ops.Reshape(x, 1, 3)) }),
			[]float32{1, 10, 0, 2, 20, -1}, 2, 3)
		// d/dx_r Σ_s c_s·(Σ_q x_q) = Σ_s c_s: the all-reduced cotangent.
		c := tensor.FromSlice([]float32{r + 1, 1, 2 * r})
		f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(comm.AllReduce(x, comm.Sum), c)) }
		var g []*tensor.Tensor
		if mode == "graph" {
			g = spore.Jit(spore.Grad(f))(x)
		} else {
			g = spore.Grad(f)(x)
		}
		want(t, mode+" grad", g[0], []float32{3, 2, 2})
		want(t, mode+" reduce", run(func(x *tensor.Tensor) *tensor.Tensor { return comm.Reduce(x, 1) }),
			[]float32{3 * r, 30 * r, -r})
		want(t, mode+" reduce-scatter", run(func(x *tensor.Tensor) *tensor.Tensor {
			return comm.ReduceScatter(ops.Concat(0, x, x))
		}), [][]float32{{3, 30, -1}, {3, 30, -1}}[comm.Rank()])
		// Broadcast from 1: rank 1's input gets every rank's cotangent,
		// rank 0's none; AllGather: each rank gets its block of the sum.
		grad := func(f func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			if mode == "graph" {
				return spore.Jit(spore.Grad(f))(x)[0]
			}
			return spore.Grad(f)(x)[0]
		}
		want(t, mode+" broadcast grad", grad(func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(comm.Broadcast(x, 1), c)) }),
			[][]float32{{0, 0, 0}, {3, 2, 2}}[comm.Rank()])
		c2 := tensor.FromSlice([]float32{r + 1, 1, 2 * r, 5, r, 1})
		want(t, mode+" gather grad", grad(func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Sum(ops.Mul(comm.AllGather(x), c2))
		}), [][]float32{{3, 2, 2}, {10, 1, 2}}[comm.Rank()])
	}
	if err := comm.Barrier(); err != nil {
		t.Fatal(err)
	}
}

func helpers(t *testing.T) {
	rank := comm.Rank()
	v := []float64{float64(rank), 1}
	if err := comm.AllReduceFloat64s(v, comm.Mean); err != nil || v[0] != 0.5 || v[1] != 1 {
		t.Fatalf("AllReduceFloat64s mean: %v %v", v, err)
	}
	all, err := comm.AllGatherBytes(bytes.Repeat([]byte{byte('a' + rank)}, rank+1))
	if err != nil || len(all) != 2 || string(all[0]) != "a" || string(all[1]) != "bb" {
		t.Fatalf("AllGatherBytes: %q %v", all, err)
	}
	p := tensor.NewParameter("w", tensor.FromSlice([]float32{float32(rank), 7}))
	if err := comm.BroadcastParameters([]*tensor.Tensor{p}, 0); err != nil {
		t.Fatal(err)
	}
	want(t, "broadcast parameter", p, []float32{0, 7})
	// Ranks that disagree on a shape both get the same clear error.
	q := tensor.NewParameter("q", tensor.New(tensor.Float32, 2+rank))
	err = comm.BroadcastParameters([]*tensor.Tensor{p, q}, 0)
	if err == nil || !strings.Contains(err.Error(), `parameter 1 differs between ranks: rank 1 has "q" [3] Float32, rank 0 has "q" [2] Float32`) {
		t.Fatalf("mismatched shapes: %v", err)
	}
}

// earlyStep runs one compiled data-parallel step now and returns a
// function that runs another and reports the compile count.
func earlyStep() func() int {
	spore.SetSeed(3)
	net := nn.NewSequentialCell(nn.NewDense(4, 3))
	wl := nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
	opt := optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.1)}})
	pc := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true}
	cell := nn.NewTrainOneStepCell(wl, opt, nn.TrainOneStepConfig{Mode: nn.StepCompiled, Parallel: pc})
	x, y := tensor.FromSlice(seq32(8, 0.3), 2, 4), tensor.FromSlice([]int32{0, 2}, 2)
	step := func() int {
		cell.Step(x, y)
		return cell.StepStats().Compiles
	}
	step()
	return step
}

func seq32(n int, step float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Sin(float64(i) * step))
	}
	return v
}

// syncBatchNorm checks that SyncBatchNorm over two half batches is
// BatchNorm over the whole batch: outputs, input and parameter gradients,
// and running statistics.
func syncBatchNorm(t *testing.T) {
	full := tensor.FromSlice(seq(8*3*2*2, 0.37), 8, 3, 2, 2)
	w := tensor.FromSlice(seq(8*3*2*2, 0.11), 8, 3, 2, 2)
	lo := 4 * comm.Rank()
	half := ops.Slice(full, []int{lo, 0, 0, 0}, []int{4, 3, 2, 2})
	halfW := ops.Slice(w, []int{lo, 0, 0, 0}, []int{4, 3, 2, 2})
	cfg := nn.BatchNormConfig{DType: tensor.Float64}
	plain, sync := nn.NewBatchNorm2d(3, cfg), nn.NewSyncBatchNorm(3, cfg)
	plain.SetTrain(true)
	sync.SetTrain(true)
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		spore.SetContext(spore.WithMode(mode))
		// The loss of the whole batch is the sum of the ranks' losses,
		// so each rank's gradients are its share of the whole batch's.
		f := func(cell nn.Module, w *tensor.Tensor) func(*tensor.Tensor) *tensor.Tensor {
			return func(x *tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Mul(cell.Base().Call(x), w)) }
		}
		_, gp := spore.ValueAndGrad(f(plain, w), spore.GradPosition(0), spore.Weights(plain.Gamma, plain.Beta))(full)
		_, gs := spore.ValueAndGrad(f(sync, halfW), spore.GradPosition(0), spore.Weights(sync.Gamma, sync.Beta))(half)
		yp := ops.Slice(plain.Base().Call(full), []int{lo, 0, 0, 0}, []int{4, 3, 2, 2})
		ys := sync.Base().Call(half)
		close64(t, mode.String()+" output", ys, yp)
		close64(t, mode.String()+" dx", gs[0], ops.Slice(gp[0], []int{lo, 0, 0, 0}, []int{4, 3, 2, 2}))
		close64(t, mode.String()+" dgamma", comm.AllReduce(gs[1], comm.Sum), gp[1])
		close64(t, mode.String()+" dbeta", comm.AllReduce(gs[2], comm.Sum), gp[2])
		close64(t, mode.String()+" moving mean", sync.MovingMean, plain.MovingMean)
		close64(t, mode.String()+" moving variance", sync.MovingVariance, plain.MovingVariance)
	}
	spore.SetContext(spore.WithMode(spore.PyNativeMode))
}

func seq(n int, step float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sin(float64(i)*step) * 2
	}
	return v
}

func close64(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	g, w := got.Float64s(), want.Float64s()
	if len(g) != len(w) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(w))
	}
	for i := range g {
		if math.Abs(g[i]-w[i]) > 1e-10*(1+math.Abs(w[i])) {
			t.Fatalf("rank %d: %s[%d] = %.12g, want %.12g", comm.Rank(), what, i, g[i], w[i])
		}
	}
}

// dataParallelStep trains an MLP on two half batches with the gradients'
// mean all-reduced and compares it with one process training on the whole
// batch: losses and weights within 1e-5, both ranks bitwise identical, and
// PyNative and Graph mode bitwise equal at O0.
func dataParallelStep(t *testing.T) {
	const n, steps = 32, 15
	xs, ys := make([]float32, n*6), make([]int32, n)
	for i := range ys {
		ys[i] = int32(i % 3)
		for j := range 6 {
			xs[i*6+j] = float32(math.Sin(float64(i*6+j)*0.7)) + float32(ys[i])
		}
	}
	x, y := tensor.FromSlice(xs, n, 6), tensor.FromSlice(ys, n)
	lo := comm.Rank() * n / 2
	hx, hy := ops.Slice(x, []int{lo, 0}, []int{n / 2, 6}), ops.Slice(y, []int{lo}, []int{n / 2})
	train := func(pc *spore.AutoParallelContext, mode nn.StepMode, x, y *tensor.Tensor) ([]float64, []*tensor.Tensor) {
		spore.SetSeed(3)
		net := nn.NewSequentialCell(nn.NewDense(6, 16), nn.NewReLU(), nn.NewDense(16, 8), nn.NewReLU(), nn.NewDense(8, 3))
		wl := nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
		opt := optim.NewSGD(wl.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.1)}, Momentum: 0.9})
		cell := nn.NewTrainOneStepCell(wl, opt, nn.TrainOneStepConfig{Mode: mode, Parallel: pc, Jit: spore.JitConfig{Level: spore.O0}})
		var losses []float64
		for range steps {
			losses = append(losses, cell.Step(x, y))
		}
		return losses, wl.TrainableParameters()
	}
	// Scaling the loss by 1/2 before differentiating, then summing, gives
	// bitwise the mean of the unscaled gradients (the data-parallel step
	// relies on it to skip a pass over the gradients).
	{
		spore.SetSeed(3)
		net := nn.NewSequentialCell(nn.NewDense(6, 16), nn.NewReLU(), nn.NewDense(16, 3))
		wl := nn.NewWithLossCell(net, nn.NewCrossEntropyLoss("", 0))
		ps := wl.TrainableParameters()
		plain := spore.Grad(func(x, y *tensor.Tensor) *tensor.Tensor { return wl.Base().Call(x, y) }, spore.GradPosition(), spore.Weights(ps...))(hx, hy)
		half := spore.Grad(func(x, y *tensor.Tensor) *tensor.Tensor {
			return ops.Mul(wl.Base().Call(x, y), tensor.Scalar[float32](0.5))
		}, spore.GradPosition(), spore.Weights(ps...))(hx, hy)
		for i := range plain {
			a, b := comm.AllReduce(plain[i], comm.Mean).Float32s(), comm.AllReduce(half[i], comm.Sum).Float32s()
			for j := range a {
				if a[j] != b[j] {
					t.Fatalf("%s[%d]: mean of gradients %.9g, sum of halved gradients %.9g", ps[i].Name(), j, a[j], b[j])
				}
			}
		}
	}
	ref, refW := train(&spore.AutoParallelContext{}, nn.StepEager, x, y)
	dp := &spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true, BucketBytes: 256}
	eager, eagerW := train(dp, nn.StepEager, hx, hy)
	graph, graphW := train(dp, nn.StepCompiled, hx, hy)
	for k := range ref {
		if math.Abs(eager[k]-ref[k]) > 1e-5*math.Abs(ref[k]) {
			t.Fatalf("step %d: data-parallel loss %.9g, one process %.9g", k, eager[k], ref[k])
		}
		if graph[k] != eager[k] {
			t.Fatalf("step %d: Graph loss %.9g, PyNative %.9g", k, graph[k], eager[k])
		}
	}
	var mine bytes.Buffer
	for i := range refW {
		e, g, w := eagerW[i].Float32s(), graphW[i].Float32s(), refW[i].Float32s()
		for j := range w {
			if math.Abs(float64(e[j]-w[j])) > 1e-5 {
				t.Fatalf("%s[%d]: data-parallel %.9g, one process %.9g", refW[i].Name(), j, e[j], w[j])
			}
			if g[j] != e[j] {
				t.Fatalf("%s[%d]: Graph %.9g, PyNative %.9g", refW[i].Name(), j, g[j], e[j])
			}
		}
		fmt.Fprint(&mine, e)
	}
	all, err := comm.AllGatherBytes(mine.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(all[0], all[1]) {
		t.Fatal("the ranks' weights differ")
	}
	t.Logf("rank %d: loss %.5f → %.5f, matching one process over the whole batch", comm.Rank(), ref[0], ref[steps-1])
}

// A binary built with MPI but run without mpirun is one process, without
// starting MPI.
func TestMPIPlainRun(t *testing.T) {
	if os.Getenv(childEnv) != "" || os.Getenv("OMPI_COMM_WORLD_SIZE") != "" {
		t.Skip("launched by mpirun")
	}
	if err := comm.Init(); err != nil {
		t.Fatal(err)
	}
	defer comm.Finalize()
	if comm.Size() != 1 || comm.Rank() != 0 || comm.Backend() != "single-process" {
		t.Fatalf("plain run: size %d, rank %d, backend %q", comm.Size(), comm.Rank(), comm.Backend())
	}
}
