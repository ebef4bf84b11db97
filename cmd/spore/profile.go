package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/sporeml/spore/profile"
)

// profileFlags are the --profile flags of spore run, train and bench.
type profileFlags struct {
	on    bool
	top   int
	trace string
	calls int // spore run: the calls profiled
}

// register adds the flags to fs; withCalls adds --profile-calls (spore
// run, where the calls are the command's to choose).
func (p *profileFlags) register(fs *flags, withCalls bool) {
	fs.BoolVar(&p.on, "profile", false, "time every step of the compiled functions and print the ops that took longest (op, shape, calls, time, share, GFLOP/s)")
	fs.IntVar(&p.top, "profile-top", 20, "with --profile: rows of the table (0: all)")
	fs.StringVar(&p.trace, "trace", "", "with --profile (implied): write a Chrome trace of the steps to this .json file, for Perfetto (ui.perfetto.dev) or chrome://tracing")
	if withCalls {
		fs.IntVar(&p.calls, "profile-calls", 10, "with --profile: calls to profile after the first (compiling) call")
	}
}

// check validates the flags once parsed; --trace turns profiling on.
func (p *profileFlags) check() error {
	if p.trace != "" {
		p.on = true
		if err := checkOutPath("--trace", p.trace); err != nil {
			return err
		}
	}
	switch {
	case p.top < 0:
		return usagef("--profile-top %d must not be negative (0: every row)", p.top)
	case p.on && p.calls < 0:
		return usagef("--profile-calls %d must not be negative", p.calls)
	}
	return nil
}

// start begins recording when --profile is on; nil otherwise.
func (p *profileFlags) start() (*profile.Session, error) {
	if !p.on {
		return nil, nil
	}
	return profile.Start(0)
}

// report prints r's table to w, writes the trace, and saves the
// functions' records in runDir for the dashboard when runDir is set;
// nothing when r is nil.
func (p *profileFlags) report(r *profile.Report, w io.Writer, runDir string) error {
	if r == nil {
		return nil
	}
	fmt.Fprintln(w, "profile:")
	if err := r.Table(w, p.top); err != nil {
		return err
	}
	if p.trace != "" {
		if err := r.WriteTraceFile(p.trace); err != nil {
			return err
		}
		fmt.Fprintf(w, "trace: %s (open it in ui.perfetto.dev or chrome://tracing)\n", p.trace)
	}
	if runDir != "" {
		if err := r.Save(runDir); err != nil {
			return err
		}
		fmt.Fprintf(w, "profiles of %d function(s) in %s, shown beside their graphs by the dashboard\n", len(r.Functions), filepath.Join(runDir, profile.Dir))
	}
	return nil
}

// profileJSON is the profile in spore run's --json output.
type profileJSON struct {
	StepMS float64      `json:"step_ms"`
	Rows   []profileRow `json:"rows"`
}

type profileRow struct {
	Op      string  `json:"op"`
	Shape   string  `json:"shape"`
	Calls   int     `json:"calls"`
	TotalUS float64 `json:"total_us"`
	MeanUS  float64 `json:"mean_us"`
	Share   float64 `json:"share"`
	GFLOPS  float64 `json:"gflops"`
}

// reportJSON is report for --json: the rows (the top ones, as the
// table's) instead of the table; nil when r is.
func (p *profileFlags) reportJSON(r *profile.Report) (*profileJSON, error) {
	if r == nil {
		return nil, nil
	}
	if p.trace != "" {
		if err := r.WriteTraceFile(p.trace); err != nil {
			return nil, err
		}
	}
	out := &profileJSON{StepMS: ms(r.StepTime()), Rows: []profileRow{}}
	rows := r.Rows()
	if p.top > 0 && len(rows) > p.top {
		rows = rows[:p.top]
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	for _, row := range rows {
		out.Rows = append(out.Rows, profileRow{Op: row.Op, Shape: row.Shape, Calls: row.Calls, TotalUS: us(row.Total),
			MeanUS: us(row.Mean), Share: row.Share, GFLOPS: row.GFLOPS})
	}
	return out, nil
}
