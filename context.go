package spore

import (
	"github.com/sporeml/spore/compile"
	"github.com/sporeml/spore/internal/jit"
)

// Mode is the global execution mode, as MindSpore's context mode.
type Mode = jit.Mode

const (
	// PyNativeMode runs every op as it is called (eager, define-by-run).
	// It is the default.
	PyNativeMode = jit.PyNativeMode
	// GraphMode compiles whole cells (and Jit functions) into optimised
	// graphs, traced once per input signature.
	GraphMode = jit.GraphMode
)

// Level is a compilation level, as MindSpore's jit_level: O0, O1 or O2.
type Level = compile.Level

// The compilation levels; see package compile.
const (
	O0 = compile.O0
	O1 = compile.O1
	O2 = compile.O2
)

// Context is the global configuration, MindSpore's set_context: the mode,
// the default compilation level, where graphs are dumped (save_graphs) and
// whether compilation is switched off (MS_JIT=0, here SPORE_JIT=0).
type Context = jit.Context

// ContextOption sets one field of the Context; pass them to SetContext.
type ContextOption = jit.ContextOption

// WithMode sets the execution mode.
func WithMode(m Mode) ContextOption { return jit.WithMode(m) }

// WithJitLevel sets the default compilation level of Jit and Graph mode.
func WithJitLevel(l Level) ContextOption { return jit.WithJitLevel(l) }

// WithSaveGraphs dumps the IR after every pass into dir ("" stops), as
// MindSpore's save_graphs; SPORE_SAVE_GRAPHS sets it at start-up.
func WithSaveGraphs(dir string) ContextOption { return jit.WithSaveGraphs(dir) }

// WithDisableJit runs Graph mode and Jit functions eagerly (MindSpore's
// MS_JIT=0), for debugging; SPORE_JIT=0 sets it at start-up.
func WithDisableJit(off bool) ContextOption { return jit.WithDisableJit(off) }

// CheckEnv reports an invalid value of the environment variables read at
// start-up (SPORE_JIT), which were otherwise taken as their default.
// Programs that take outside configuration should refuse to run on it, as
// the spore command does.
func CheckEnv() error { return jit.CheckEnv() }

// SetContext applies opts to the global context, MindSpore's
// set_context(mode=...). It is safe to call from any goroutine; a call in
// flight keeps the context it started with.
func SetContext(opts ...ContextOption) { jit.SetContext(opts...) }

// GetContext returns a copy of the global context.
func GetContext() Context { return jit.GetContext() }
