package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/comm"
	"github.com/sporeml/spore/internal/atomicfile"
	"github.com/sporeml/spore/train"
)

// parallelInfo is this process's place in a data-parallel run: rank 0 of
// 1 when not launched by mpirun.
type parallelInfo struct{ rank, size int }

// startParallel starts communication. Under mpirun (a binary built with
// -tags mpi) there is more than one rank: it turns data parallelism on,
// with gradients averaged so that a step over the ranks' shares of a
// global batch of batch samples is the step of one process over all of
// them, and refuses a batch the ranks cannot share evenly.
func startParallel(batch int) (parallelInfo, error) {
	if err := comm.Init(); err != nil {
		return parallelInfo{}, err
	}
	p := parallelInfo{rank: comm.Rank(), size: comm.Size()}
	if p.size > 1 {
		if batch%p.size != 0 {
			return p, usagef("--batch %d is not a multiple of the %d processes mpirun started: each process takes an equal share of the global batch", batch, p.size)
		}
		spore.SetAutoParallelContext(spore.AutoParallelContext{ParallelMode: spore.DataParallel, GradientsMean: true})
	}
	return p, nil
}

// finishParallel ends communication after a successful run, restoring
// stand-alone training for whatever runs next in this process.
func finishParallel() error {
	if comm.Size() > 1 {
		spore.ResetAutoParallelContext()
	}
	return comm.Finalize()
}

// rankPrefix is "rank R/N: " in a process of a multi-process run, so
// that the one-line errors of several ranks can be told apart, and ""
// otherwise.
func rankPrefix() string {
	if !comm.Initialized() || comm.Size() < 2 {
		return ""
	}
	return fmt.Sprintf("rank %d/%d: ", comm.Rank(), comm.Size())
}

// lossRecorder keeps every step's loss for --loss-log.
type lossRecorder struct {
	train.BaseCallback
	lines []string
}

func (l *lossRecorder) OnStepEnd(ctx *train.RunContext) {
	// 'g' with precision -1: the shortest text that reads back as the
	// same float64, so that runs can be compared to the last bit.
	l.lines = append(l.lines, strconv.Itoa(ctx.GlobalStep)+"\t"+strconv.FormatFloat(ctx.Loss, 'g', -1, 64))
}

// write writes the losses to path whole or not at all (atomicfile), so
// that a reader never sees half a log.
func (l *lossRecorder) write(path string) error {
	var b strings.Builder
	b.WriteString("# step\tloss\n")
	for _, line := range l.lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if err := atomicfile.WriteFile(path, []byte(b.String())); err != nil {
		return fmt.Errorf("--loss-log %s: %v (the file was not changed)", path, err)
	}
	return nil
}
