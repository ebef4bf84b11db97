package train_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
)

// TestDataParallelOneProcess checks that asking for data parallelism in
// one process (comm.Size 1) changes nothing a user can see: the same
// losses, metrics and checkpoint as without it, in both modes, whether
// asked for process-wide or in the model's StepConfig. Under mpirun the
// same code trains across ranks (cmd/spore's mpi tests).
func TestDataParallelOneProcess(t *testing.T) {
	dp := spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true}
	for _, mode := range []spore.Mode{spore.PyNativeMode, spore.GraphMode} {
		for _, how := range []string{"stand-alone", "context", "step config"} {
			t.Run(mode.String()+"/"+how, func(t *testing.T) {
				withMode(mode, func() {
					if how == "context" {
						spore.SetAutoParallelContext(dp)
						defer spore.ResetAutoParallelContext()
					}
					m := newModel(3, sgd)
					if how == "step config" {
						m.StepConfig.Parallel = &dp
					}
					if m.DataParallel() || !m.WritesCheckpoints() {
						t.Fatalf("one process (comm.Size %d): DataParallel %v, WritesCheckpoints %v; want false, true", comm.Size(), m.DataParallel(), m.WritesCheckpoints())
					}
					rec := &recorder{}
					if err := m.Train(2, blobData(1, 96, 16), rec); err != nil {
						t.Fatal(err)
					}
					if err := m.CheckReplicas(); err != nil {
						t.Fatal(err)
					}
					res, err := m.Eval(blobData(2, 50, 16))
					if err != nil {
						t.Fatal(err)
					}
					path := filepath.Join(t.TempDir(), "m.safetensors")
					if err := m.SaveCheckpoint(path); err != nil {
						t.Fatal(err)
					}
					if _, err := os.Stat(path); err != nil {
						t.Fatalf("rank 0 of 1 wrote no checkpoint: %v", err)
					}
					got := outcome{rec.loss, res}
					want := standAlone(t)
					if !slices.Equal(got.loss, want.loss) || !maps(got.metrics, want.metrics) {
						t.Errorf("%s: losses %v metrics %v; stand-alone %v %v", how, got.loss, got.metrics, want.loss, want.metrics)
					}
				})
			})
		}
	}
}

type outcome struct {
	loss    []float64
	metrics map[string]float64
}

// standAlone trains and evaluates as TestDataParallelOneProcess does,
// without data parallelism, in the current mode.
func standAlone(t *testing.T) outcome {
	m := newModel(3, sgd)
	rec := &recorder{}
	if err := m.Train(2, blobData(1, 96, 16), rec); err != nil {
		t.Fatal(err)
	}
	res, err := m.Eval(blobData(2, 50, 16))
	if err != nil {
		t.Fatal(err)
	}
	return outcome{rec.loss, res}
}

func maps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
