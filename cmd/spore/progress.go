package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress reports training progress: a live bar redrawn in place on a
// terminal, plain periodic lines otherwise (logs, pipes, CI).
type progress struct {
	w        io.Writer
	tty      bool
	total    int // steps in this epoch
	epoch    int
	epochs   int
	batch    int
	start    time.Time
	last     time.Time
	every    time.Duration // how often plain lines are written
	lineOpen bool
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, tty bool, epochs, batch int) *progress {
	return &progress{w: w, tty: tty, epochs: epochs, batch: batch, every: 5 * time.Second}
}

// beginEpoch starts the bar of one epoch of total steps.
func (p *progress) beginEpoch(epoch, total int) {
	p.epoch, p.total = epoch, total
	p.start = time.Now()
	p.last = p.start
}

// step reports that step (1-based) finished with the given loss.
func (p *progress) step(step int, loss float64) {
	now := time.Now()
	elapsed := now.Sub(p.start)
	rate := float64(step*p.batch) / elapsed.Seconds()
	eta := time.Duration(float64(elapsed) / float64(step) * float64(p.total-step))
	if p.tty {
		if step != p.total && now.Sub(p.last) < 100*time.Millisecond {
			return
		}
		p.last = now
		const width = 30
		done := width * step / max(p.total, 1)
		bar := strings.Repeat("█", done) + strings.Repeat("░", width-done)
		fmt.Fprintf(p.w, "\repoch %d/%d %s %5d/%d  loss %.4f  %6.0f samples/s  ETA %-8s",
			p.epoch, p.epochs, bar, step, p.total, loss, rate, eta.Round(time.Second))
		p.lineOpen = true
		return
	}
	if now.Sub(p.last) >= p.every || step == p.total {
		p.last = now
		fmt.Fprintf(p.w, "epoch %d/%d step %d/%d loss %.4f %.0f samples/s ETA %v\n",
			p.epoch, p.epochs, step, p.total, loss, rate, eta.Round(time.Second))
	}
}

// endEpoch closes the bar's line.
func (p *progress) endEpoch() {
	if p.lineOpen {
		fmt.Fprintln(p.w)
		p.lineOpen = false
	}
}
