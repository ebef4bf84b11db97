package jit

import (
	"fmt"
	"os"
	"strings"
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
	// variable SPORE_JIT sets it too: 0, false or off disable compilation;
	// 1, true, on or unset leave it on (see CheckEnv).
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

// envErr is what CheckEnv reports: the first environment variable read at
// start-up whose value was not understood.
var envErr error

func init() {
	disable, err := parseJitEnv(os.Getenv("SPORE_JIT"))
	envErr = err
	ctx.Store(&Context{
		JitLevel:   O1,
		SaveGraphs: os.Getenv("SPORE_SAVE_GRAPHS"),
		DisableJit: disable,
	})
}

// parseJitEnv reads a SPORE_JIT value: whether it disables compilation,
// or an error naming the accepted values. The values are MindSpore's MS_JIT
// (0 and 1) and the usual spellings of a boolean switch.
func parseJitEnv(v string) (disable bool, err error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "1", "true", "on", "yes":
		return false, nil
	case "0", "false", "off", "no":
		return true, nil
	}
	return false, fmt.Errorf("SPORE_JIT=%q: want 0 (compilation off: Graph mode and Jit run eagerly) or 1 (on, the default); also accepted: true/false, on/off, yes/no", v)
}

// CheckEnv reports an environment variable that spore read at start-up and
// did not understand, or nil. A library cannot refuse to start, so an
// unrecognised SPORE_JIT leaves compilation on (the default) and only
// CheckEnv says so; programs that take their configuration from the
// environment (such as the spore command) call it to refuse bad values.
//
// SPORE_JIT takes 0, false, off or no to run Jit functions and Graph-mode
// cells eagerly (Context.DisableJit), and 1, true, on or yes (or nothing)
// to compile them, case-insensitively. SPORE_SAVE_GRAPHS is a directory
// and is checked only when the first dump is written.
func CheckEnv() error { return envErr }

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
