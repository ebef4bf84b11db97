package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/sporeml/spore/train"
)

// interrupt turns Ctrl-C (SIGINT) or SIGTERM during spore train into a
// stop after the step in progress: training ends at a step boundary, the
// weights of the last finished step are saved (with --save), and the
// command exits with 128 + the signal's number (130 for Ctrl-C), as a
// shell reports a process killed by it. A second signal is not caught:
// it ends the process at once, for a user who will not wait for the save.
//
// Under mpirun it is not installed: the ranks would stop at different
// steps and wait forever for each other; mpirun's own handling of the
// signal (ending every rank) stays as it was.
type interrupt struct {
	train.BaseCallback
	ch   chan os.Signal
	done chan struct{}
	sig  atomic.Value // the os.Signal received, once one is
}

// catchInterrupt starts catching SIGINT and SIGTERM; stop ends it.
func catchInterrupt() *interrupt {
	i := &interrupt{ch: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(i.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-i.ch:
			i.sig.Store(s)
			// The next one takes its default action: the process ends.
			signal.Stop(i.ch)
		case <-i.done:
		}
	}()
	return i
}

// stop stops catching the signals; a nil interrupt is a no-op.
func (i *interrupt) stop() {
	if i == nil {
		return
	}
	signal.Stop(i.ch)
	select {
	case <-i.done:
	default:
		close(i.done)
	}
}

// received returns the signal caught, or nil; a nil interrupt has none.
func (i *interrupt) received() os.Signal {
	if i == nil {
		return nil
	}
	s, _ := i.sig.Load().(os.Signal)
	return s
}

// OnStepEnd stops training once a signal has come: the step that just
// ended is the last.
func (i *interrupt) OnStepEnd(ctx *train.RunContext) {
	if i.received() != nil {
		ctx.RequestStop()
	}
}

// exitError is a failure with its own exit status, such as an interrupt's
// 130.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// interrupted saves m to save (when given) after an interrupt by sig and
// returns the error that reports it: one line saying at which step
// training stopped and what was saved, and the signal's exit status.
func interrupted(sig os.Signal, m *train.Model, save string) error {
	code := 130
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	what := "interrupted"
	if sig == syscall.SIGTERM {
		what = "terminated (SIGTERM)"
	}
	step := m.GlobalStep()
	if save == "" {
		return &exitError{code, fmt.Sprintf("%s after step %d; nothing saved (no --save)", what, step)}
	}
	// SaveCheckpoint writes atomically: save holds the whole checkpoint
	// or, when writing fails, what it held before.
	if err := m.SaveCheckpoint(save); err != nil {
		return &exitError{code, fmt.Sprintf("%s after step %d; saving the checkpoint failed: %s", what, step, message(err))}
	}
	return &exitError{code, fmt.Sprintf("%s after step %d; saved a checkpoint of it to %s (continue with --resume %s)", what, step, save, save)}
}
