package exec

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sporeml/spore/graph"
)

// Profiling. A Recorder, while it records, times every step of every plan
// that runs, in every goroutine, as torch.profiler and MindSpore's
// Profiler record every kernel of a session. Plans are found as they run:
// there is nothing to register. While no Recorder records, a run costs
// one atomic load more than it would without profiling: no timer is read
// and nothing is allocated.
//
// The clock is read once between two steps, so the steps of a run tile
// its time: the sum of a run's step times is the span of its steps, and a
// step's time includes the loop's handful of instructions that start it.
// A step that runs a control-flow body (a sub-plan) holds the body's
// runs; their span is added to the step's ChildNs, so that the step's own
// time (TotalNs − ChildNs) is what the control-flow kernel itself spent,
// and the body's steps are listed in the body's PlanProfile. A kernel
// that splits its work over the worker pool is timed from the caller's
// side: its time is the wall time of the whole parallel step.

// recording is the Recorder that records, or nil.
var recording atomic.Pointer[Recorder]

// epoch is the origin of clock.
var epoch = time.Now()

// clock returns the monotonic time in nanoseconds since epoch. It is a
// variable so that a test can count its calls: with no Recorder
// recording, a run must not read it.
var clock = func() int64 { return int64(time.Since(epoch)) }

// DefaultMaxEvents is the number of trace events a Recorder keeps unless
// told otherwise (about 32 bytes each): beyond it, runs are still timed
// step by step but their events are dropped and counted.
const DefaultMaxEvents = 1 << 20

// ErrRecording is returned by StartProfile while another Recorder
// records: one profile at a time sees every plan.
var ErrRecording = errors.New("exec: a profile is already recording (stop it first)")

// Recorder records the step times of every plan run between StartProfile
// and Stop.
type Recorder struct {
	mu        sync.Mutex
	start     int64 // clock at StartProfile
	stopped   bool
	plans     []*PlanProfile
	parents   map[*Plan]parentRef // sub-plans seen in a registered plan, not yet run
	tracks    int
	maxEvents int64
	events    atomic.Int64 // events kept so far
	dropped   atomic.Int64 // events not kept (over maxEvents)
}

// parentRef is the step of a plan whose kernel runs a sub-plan.
type parentRef struct {
	pp   *PlanProfile
	step int
}

// PlanProfile is what a Recorder saw of one plan.
type PlanProfile struct {
	// Name is the plan's graph's name (the compiled function's).
	Name string
	// Graph is the plan's graph, renumbered: step values' IDs are their
	// positions in Graph.Values.
	Graph *graph.Graph
	// Parent is the profile of the plan whose step ParentStep runs this
	// plan as a control-flow body; nil for a plan run from outside a plan.
	Parent     *PlanProfile
	ParentStep int
	// Track numbers the thread of the trace the plan's runs are drawn
	// on: one per plan run from outside a plan (a compiled function, a
	// worker's replica), shared with its bodies, whose runs nest inside
	// their step's.
	Track int
	// Runs counts the runs, and RunNs sums their spans (first step's
	// start to last step's end).
	Runs  int
	RunNs int64
	// Steps are the plan's steps, in the order they run.
	Steps []StepProfile
	// Events are the runs (Step −1) and the steps of each, in the order
	// they ended within a run, runs in order; Start is relative to the
	// Recorder's start.
	Events []Event

	plan *Plan
	rec  *Recorder
}

// StepProfile is one step's timings.
type StepProfile struct {
	// Value is the value the step computes (a multi-result op for one
	// with several results).
	Value *graph.Value
	// Calls counts the step's runs and TotalNs their time; ChildNs is the
	// part of it spent in control-flow bodies, recorded in their own
	// PlanProfiles.
	Calls   int
	TotalNs int64
	ChildNs int64
}

// Event is one timed span of a trace.
type Event struct {
	// Step is the step's position in PlanProfile.Steps, or −1 for a
	// whole run.
	Step int32
	// Start and Dur are in nanoseconds, Start since the Recorder began.
	Start, Dur int64
}

// StartProfile starts recording the steps of every plan run from now on,
// keeping at most maxEvents trace events (DefaultMaxEvents when
// maxEvents ≤ 0). It fails with ErrRecording while another Recorder
// records.
func StartProfile(maxEvents int) (*Recorder, error) {
	if maxEvents <= 0 {
		maxEvents = DefaultMaxEvents
	}
	r := &Recorder{parents: map[*Plan]parentRef{}, maxEvents: int64(maxEvents), start: clock()}
	if !recording.CompareAndSwap(nil, r) {
		return nil, ErrRecording
	}
	return r, nil
}

// Profile is what a Recorder recorded.
type Profile struct {
	// Plans are the plans that ran, in the order they first ran.
	Plans []*PlanProfile
	// WallNs is the time from StartProfile to Stop.
	WallNs int64
	// DroppedEvents counts the trace events not kept (over the limit).
	DroppedEvents int64
}

// Stop ends the recording and returns what it recorded. It waits for
// runs in flight on other goroutines to finish, so it must not be called
// from inside a plan's run (a kernel or callback of a profiled plan).
// Later calls return the same plans.
func (r *Recorder) Stop() *Profile {
	recording.CompareAndSwap(r, nil)
	end := clock()
	r.mu.Lock()
	r.stopped = true
	plans := r.plans
	r.mu.Unlock()
	// A run that began before the recording ended holds its plan's lock
	// until it is done: taking each lock in turn waits for them, and lets
	// the plan forget the profile.
	for _, pp := range plans {
		pp.plan.mu.Lock()
		if pp.plan.prof == pp {
			pp.plan.prof = nil
		}
		pp.plan.mu.Unlock()
	}
	return &Profile{Plans: plans, WallNs: end - r.start, DroppedEvents: r.dropped.Load()}
}

// register returns p's profile for r, making it on p's first run under
// r; nil once r has stopped. p.mu is held.
func (r *Recorder) register(p *Plan) *PlanProfile {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	pp := &PlanProfile{Name: p.g.Name, Graph: p.g, ParentStep: -1, Steps: make([]StepProfile, len(p.steps)), plan: p, rec: r}
	if ref, ok := r.parents[p]; ok {
		delete(r.parents, p)
		pp.Parent, pp.ParentStep, pp.Track = ref.pp, ref.step, ref.pp.Track
	} else {
		pp.Track = r.tracks
		r.tracks++
	}
	for i := range p.steps {
		pp.Steps[i].Value = p.steps[i].v
		for _, sp := range p.steps[i].subs {
			r.parents[sp.Plan] = parentRef{pp, i}
		}
	}
	r.plans = append(r.plans, pp)
	p.prof = pp
	return pp
}

// runProfiled runs p's steps from *i on, timing each for r; it runs
// nothing once r has stopped. p.mu is held. *i follows the step running,
// as in run, so that a panic is located, and ends past the last step run.
func (p *Plan) runProfiled(r *Recorder, i *int) {
	pp := p.prof
	if pp == nil || pp.rec != r {
		if pp = r.register(p); pp == nil {
			return
		}
	}
	n := int64(len(p.steps) + 1)
	keep := r.events.Add(n) <= r.maxEvents
	if !keep {
		r.events.Add(-n)
		r.dropped.Add(n)
	}
	t0 := clock()
	t := t0
	for ; *i < len(p.steps); *i++ {
		s := &p.steps[*i]
		if s.outs != nil {
			s.kernelN(s.attrs, s.in, s.outs)
		} else {
			s.kernel(s.attrs, s.in, s.out)
		}
		t1 := clock()
		sp := &pp.Steps[*i]
		sp.Calls++
		sp.TotalNs += t1 - t
		if keep {
			pp.Events = append(pp.Events, Event{Step: int32(*i), Start: t - r.start, Dur: t1 - t})
		}
		t = t1
	}
	pp.Runs++
	pp.RunNs += t - t0
	if keep {
		pp.Events = append(pp.Events, Event{Step: -1, Start: t0 - r.start, Dur: t - t0})
	}
	if pp.Parent != nil {
		// The parent's run holds its plan's lock: it is this goroutine's.
		pp.Parent.Steps[pp.ParentStep].ChildNs += t - t0
	}
}
