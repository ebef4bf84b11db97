package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/tensor"
)

// DataParallel reports whether the model trains data-parallel over more
// than one rank: its training cell's setting (StepConfig.Parallel, or else
// the process-wide spore.AutoParallelContext, read when the cell is made)
// is DataParallel and comm runs more than one rank. Then Train starts by
// making the ranks' replicas agree (see SyncReplicas), Eval adds the
// ranks' metric sums, and only rank 0 writes checkpoints.
func (m *Model) DataParallel() bool {
	return m.parallelContext().ParallelMode == spore.DataParallel && comm.Size() > 1
}

// parallelContext is the setting the training cell follows: the one it
// was made with, or the one it would be made with now.
func (m *Model) parallelContext() spore.AutoParallelContext {
	if m.cell != nil {
		return m.parallel
	}
	return stepParallel(m.StepConfig)
}

// stepParallel is the data-parallel setting a training cell made with cfg
// follows, as nn.NewTrainOneStepCell reads it.
func stepParallel(cfg nn.TrainOneStepConfig) spore.AutoParallelContext {
	if cfg.Parallel != nil {
		return *cfg.Parallel
	}
	return spore.GetAutoParallelContext()
}

// WritesCheckpoints reports whether this process writes the model's
// checkpoints: always, except on ranks other than 0 of a data-parallel run,
// whose replicas are rank 0's and whose writes would race for the same
// file.
func (m *Model) WritesCheckpoints() bool { return !m.DataParallel() || comm.Rank() == 0 }

// SyncReplicas makes every rank's replica of a data-parallel model equal
// to rank 0's: it first checks that all ranks hold the same parameters
// and optimiser state (names, shapes, dtypes, in order), then broadcasts
// rank 0's values, so that ranks agree even if each initialised its
// weights differently. A mismatch is one error on every rank, naming the
// first entry that differs and the ranks: every rank returns it, so all
// stop rather than some waiting forever in a collective the others never
// reach. Train calls it before the first step; outside data parallelism
// it does nothing.
func (m *Model) SyncReplicas() error {
	if !m.DataParallel() {
		return nil
	}
	ps := m.CheckpointParams()
	var desc bytes.Buffer
	for _, p := range ps {
		fmt.Fprintf(&desc, "%s %v %v\n", p.Name, p.Tensor.DType(), p.Tensor.Shape())
	}
	all, err := comm.AllGatherBytes(desc.Bytes())
	if err != nil {
		return fmt.Errorf("train: data parallel: comparing the ranks' parameters: %w", err)
	}
	if err := firstDifference(all, "parameters", "no more parameters"); err != nil {
		return fmt.Errorf("train: data parallel: the ranks' models differ (every rank must build the same model): %w", err)
	}
	ts := make([]*tensor.Tensor, len(ps))
	for i, p := range ps {
		ts[i] = p.Tensor
	}
	if err := comm.BroadcastParameters(ts, 0); err != nil {
		return fmt.Errorf("train: data parallel: broadcasting rank 0's parameters: %w", err)
	}
	return nil
}

// firstDifference compares each rank's newline-separated list with rank
// 0's and describes the first line that differs, or returns nil when all
// agree. missing is what a shorter list shows in place of a line.
func firstDifference(all [][]byte, what, missing string) error {
	want := lines(all[0])
	for r := 1; r < len(all); r++ {
		got := lines(all[r])
		for i := range max(len(got), len(want)) {
			g, w := at(got, i, missing), at(want, i, missing)
			if g != w {
				return fmt.Errorf("%s entry %d: rank 0 has %s, rank %d has %s", what, i, w, r, g)
			}
		}
	}
	return nil
}

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func at(l []string, i int, missing string) string {
	if i < len(l) {
		return l[i]
	}
	return missing
}

// CheckReplicas verifies that every rank of a data-parallel run holds
// bitwise the same parameters and optimiser state, as data parallelism
// promises: each rank hashes every tensor (SHA-256 of its bytes), the
// hashes are gathered, and a difference is an error on every rank naming
// the first tensor and the ranks that disagree. Outside data parallelism
// there is nothing to compare and it returns nil.
func (m *Model) CheckReplicas() error {
	if !m.DataParallel() {
		return nil
	}
	all, err := comm.AllGatherBytes(digests(m.CheckpointParams()))
	if err != nil {
		return fmt.Errorf("train: data parallel: comparing the ranks' parameters: %w", err)
	}
	if err := firstDifference(all, "parameter", "nothing"); err != nil {
		return fmt.Errorf("train: data parallel: the ranks' parameters are not bitwise identical: %w", err)
	}
	return nil
}

// digests returns one line per tensor: its name and the SHA-256 of its
// values' bytes.
func digests(ps checkpoint.Params) []byte {
	var b bytes.Buffer
	for _, p := range ps {
		fmt.Fprintf(&b, "%s sha256:%x\n", p.Name, digest(p.Tensor))
	}
	return b.Bytes()
}

// digest hashes a tensor's values, element by element in little-endian
// order, whatever its dtype.
func digest(t *tensor.Tensor) [sha256.Size]byte {
	h := sha256.New()
	var buf [8]byte
	switch v := t.Data().(type) {
	case []float32:
		for _, x := range v {
			binary.LittleEndian.PutUint32(buf[:4], math.Float32bits(x))
			h.Write(buf[:4])
		}
	case []float64:
		for _, x := range v {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
			h.Write(buf[:])
		}
	case []int32:
		for _, x := range v {
			binary.LittleEndian.PutUint32(buf[:4], uint32(x))
			h.Write(buf[:4])
		}
	case []int64:
		for _, x := range v {
			binary.LittleEndian.PutUint64(buf[:], uint64(x))
			h.Write(buf[:])
		}
	default:
		// Other dtypes: their printed values, which is exact for the
		// integer and boolean types that remain.
		fmt.Fprint(h, v)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// reduceMetrics adds the ranks' metric sums and evaluated batch counts,
// in place, so that every rank's metrics describe the whole, sharded
// evaluation set.
func reduceMetrics(metrics []Metric, batches *int) error {
	var v []float64
	for _, mt := range metrics {
		s, ok := mt.(Summable)
		if !ok {
			return fmt.Errorf("train: eval: metric %q cannot be combined across ranks: under data parallelism a metric must implement train.Summable", mt.Name())
		}
		v = append(v, s.Sums()...)
	}
	v = append(v, float64(*batches))
	if err := comm.AllReduceFloat64s(v, comm.Sum); err != nil {
		return fmt.Errorf("train: eval: combining the ranks' metrics: %w", err)
	}
	for _, mt := range metrics {
		s := mt.(Summable)
		k := len(s.Sums())
		s.SetSums(v[:k])
		v = v[k:]
	}
	*batches = int(v[0])
	return nil
}
