package main

import (
	"fmt"
	"io"
	"time"

	"github.com/sporeml/spore/train"
)

// sinkFlag is train's --sink-size: data sink mode, MindSpore's
// dataset_sink_mode with sink_size.
type sinkFlag struct {
	n    int // as given
	used int // the steps per call training runs: n, or an epoch when shorter
}

func (s *sinkFlag) register(fs *flags) {
	fs.IntVar(&s.n, "sink-size", 0, "data sink mode: run this many training steps per call, as one compiled Scan over a queue of batches filled ahead on another goroutine, with the same weights as step by step (0: step by step; not under mpirun; gradient histograms need step-by-step training)")
}

// check refuses what data sink mode cannot do, before any data is read.
func (s *sinkFlag) check(processes int) error {
	switch {
	case s.n < 0:
		return usagef("--sink-size %d is negative; use a positive number of steps per call, or 0 to train step by step", s.n)
	case s.n > 0 && processes > 1:
		return usagef("--sink-size does not support data-parallel training yet; drop it under mpirun")
	}
	return nil
}

// apply sets the model's sink size for epochs of epochSteps steps: a
// sink larger than an epoch runs the epoch's steps per call, so that is
// the size used, and reported.
func (s *sinkFlag) apply(m *train.Model, epochSteps int) {
	s.used = s.n
	if epochSteps > 0 && s.used > epochSteps {
		s.used = epochSteps
	}
	m.SinkSize = s.used
}

// report prints the sunk calls' compile statistics, as train prints the
// step's.
func (s *sinkFlag) report(m *train.Model, stdout io.Writer) {
	if s.used == 0 {
		return
	}
	capped := ""
	if s.used != s.n {
		capped = fmt.Sprintf(" (--sink-size %d, capped at the epoch's length)", s.n)
	}
	if st := m.SinkStats(); st.Compiles > 0 {
		fmt.Fprintf(stdout, "graph: data sink of %d steps per call%s, %d compilation(s), %v compiling, %d cached calls\n", s.used, capped, st.Compiles, st.CompileTime.Round(time.Microsecond), st.Hits)
	}
}
