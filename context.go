package spore

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/sporeml/spore/compile"
)

// Mode is the global execution mode, as MindSpore's context mode.
type Mode int

const (
	// PyNativeMode runs every op as it is called (eager, define-by-run).
	// It is the default.
	PyNativeMode Mode = iota
	// GraphMode compiles whole cells (and Jit functions) into optimised
	// graphs, traced once per input signature.
	GraphMode
)

// String returns the name printed in dumps and messages.
func (m Mode) String() string {
	if m == GraphMode {
		return "GRAPH_MODE"
	}
	return "PYNATIVE_MODE"
}

// Level is a compilation level, as MindSpore's jit_level: O0, O1 or O2.
type Level = compile.Level

// The compilation levels; see package compile.
const (
	O0 = compile.O0
	O1 = compile.O1
	O2 = compile.O2
)

// Context is the framework-wide configuration.
type Context struct {
	// Mode is PyNativeMode (the default) or GraphMode.
	Mode Mode
	// JitLevel is the default level of compiled functions (O1 unless set).
	JitLevel Level
	// SaveGraphs, when not empty, is a directory that receives the IR of
	// every compiled function before and after each pass (MindSpore's
	// save_graphs). The SPORE_SAVE_GRAPHS environment variable sets it too.
	SaveGraphs string
	// DisableJit runs Jit functions and GraphMode cells eagerly, for
	// debugging (MindSpore's MS_JIT=0, JAX's disable_jit). The environment
	// variable SPORE_JIT=0 sets it too.
	DisableJit bool
}

// ContextOption sets one field of the Context.
type ContextOption func(*Context)

// WithMode sets the execution mode.
func WithMode(m Mode) ContextOption { return func(c *Context) { c.Mode = m } }

// WithJitLevel sets the default compilation level.
func WithJitLevel(l Level) ContextOption { return func(c *Context) { c.JitLevel = l } }

// WithSaveGraphs sets the directory for IR dumps ("" turns dumps off).
func WithSaveGraphs(dir string) ContextOption { return func(c *Context) { c.SaveGraphs = dir } }

// WithDisableJit turns compilation off (true) or on.
func WithDisableJit(off bool) ContextOption { return func(c *Context) { c.DisableJit = off } }

// The context is read on every cell call, so reads are one atomic load;
// writers serialise on ctxMu and publish a fresh copy.
var (
	ctxMu sync.Mutex
	ctx   atomic.Pointer[Context]
)

func init() {
	ctx.Store(&Context{
		JitLevel:   O1,
		SaveGraphs: os.Getenv("SPORE_SAVE_GRAPHS"),
		DisableJit: os.Getenv("SPORE_JIT") == "0",
	})
}

// SetContext changes the global configuration:
//
//	spore.SetContext(spore.WithMode(spore.GraphMode))
func SetContext(opts ...ContextOption) {
	ctxMu.Lock()
	defer ctxMu.Unlock()
	c := *ctx.Load()
	for _, o := range opts {
		o(&c)
	}
	ctx.Store(&c)
}

// GetContext returns a copy of the global configuration.
func GetContext() Context { return *ctx.Load() }
