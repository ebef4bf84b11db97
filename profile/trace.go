package profile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/sporeml/spore/internal/atomicfile"
)

// TraceEvent is one event of the Chrome trace event format (the JSON
// that chrome://tracing and Perfetto open): a complete event (Ph "X")
// spans Ts to Ts+Dur, in microseconds since the session began; metadata
// events (Ph "M") name the process and the threads.
type TraceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Trace is a whole trace file.
type Trace struct {
	TraceEvents     []TraceEvent `json:"traceEvents"`
	DisplayTimeUnit string       `json:"displayTimeUnit"`
}

// tracePid is the one process a trace shows.
const tracePid = 1

// Trace returns the session's trace: a thread per track (a compiled
// function called from outside a plan; its control-flow bodies' runs
// nest inside the steps that run them), on it each run (category "run")
// and inside it each step (category "step", named by its op), ordered by
// start, the enclosing event first.
func (r *Report) Trace() *Trace {
	t := &Trace{DisplayTimeUnit: "ms", TraceEvents: []TraceEvent{
		{Name: "process_name", Ph: "M", Pid: tracePid, Args: map[string]any{"name": "spore"}},
	}}
	named := map[int]bool{}
	var evs []TraceEvent
	for _, f := range r.Functions {
		if !named[f.Track] && f.Parent == nil {
			named[f.Track] = true
			t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: "thread_name", Ph: "M", Pid: tracePid, Tid: f.Track,
				Args: map[string]any{"name": fmt.Sprintf("%s %s", f.Name, f.Inputs)}})
		}
		for _, e := range f.pp.Events {
			te := TraceEvent{Ph: "X", Ts: float64(e.Start) / 1e3, Dur: float64(e.Dur) / 1e3, Pid: tracePid, Tid: f.Track}
			if e.Step < 0 {
				te.Name, te.Cat = f.Name, "run"
				te.Args = map[string]any{"inputs": f.Inputs}
			} else {
				s := &f.Steps[e.Step]
				te.Name, te.Cat = s.Label(), "step"
				te.Args = map[string]any{"function": f.Name, "id": s.ID, "shape": s.Shape, "flops": s.FLOPs, "bytes": s.Bytes}
			}
			evs = append(evs, te)
		}
	}
	// Enclosing first: by start, then the longer (a run before its first
	// step, a control-flow step before its body's run).
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].Ts != evs[j].Ts {
			return evs[i].Ts < evs[j].Ts
		}
		return evs[i].Dur > evs[j].Dur
	})
	t.TraceEvents = append(t.TraceEvents, evs...)
	return t
}

// WriteTrace writes the trace as JSON.
func (r *Report) WriteTrace(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(r.Trace()); err != nil {
		return fmt.Errorf("profile: writing the trace: %w", err)
	}
	return bw.Flush()
}

// WriteTraceFile writes the trace to path, whole or not at all.
func (r *Report) WriteTraceFile(path string) error {
	data, err := json.Marshal(r.Trace())
	if err != nil {
		return fmt.Errorf("profile: trace: %w", err)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("profile: writing the trace: %w", err)
	}
	return nil
}

// ReadTrace reads a trace file that WriteTrace wrote (or any trace in
// the JSON object format), for tools and tests.
func ReadTrace(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	var t Trace
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("profile: trace %s: %w", path, err)
	}
	return &t, nil
}
