package spore

import "github.com/sporeml/spore/profile"

// Profiler is a recording profile (torch.profiler.profile, MindSpore's
// Profiler): from StartProfile to its Stop, every step of every compiled
// function that runs, on any goroutine, is timed. See package profile.
type Profiler = profile.Session

// ProfileReport is what a profile recorded: per function and step, with
// a top-N table (Table), a Chrome trace for Perfetto (WriteTraceFile)
// and records for the dashboard (Save).
type ProfileReport = profile.Report

// StartProfile starts recording; one profile records at a time. Off,
// profiling costs nothing: no clock is read, nothing is allocated.
func StartProfile() (*Profiler, error) { return profile.Start(0) }

// Profile records the compiled functions fn calls and returns the
// report:
//
//	r, err := spore.Profile(func() { for range 10 { step(x) } })
//	r.Table(os.Stdout, 20)
func Profile(fn func()) (*ProfileReport, error) { return profile.Run(fn) }
