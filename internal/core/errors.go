package core

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// Error is the value spore panics with when model code misuses an op: wrong
// shapes, wrong dtypes, bad axes. It names the op, what was wrong, and the
// user's source line, so that the message alone says what to fix. Match it
// with errors.As after recovering:
//
//	spore: MatMul: inner dimensions differ: [64 784] x [512 10] (at main.go:31)
type Error struct {
	Op  string // the op or API that rejected its input, e.g. "MatMul"
	Msg string // what was wrong, with the offending shapes and dtypes
	Loc string // file:line of the first caller outside spore, "" if unknown
}

// Error formats the error as one line.
func (e *Error) Error() string {
	if e.Loc == "" {
		return fmt.Sprintf("spore: %s: %s", e.Op, e.Msg)
	}
	return fmt.Sprintf("spore: %s: %s (at %s)", e.Op, e.Msg, e.Loc)
}

// Errorf builds an *Error for op, locating the user's calling line.
func Errorf(op, format string, args ...any) *Error {
	return &Error{Op: op, Msg: fmt.Sprintf(format, args...), Loc: CallerLoc()}
}

// Panicf panics with Errorf(op, format, args...).
func Panicf(op, format string, args ...any) {
	panic(Errorf(op, format, args...))
}

const modulePrefix = "github.com/sporeml/spore/"

// CallerLoc returns "file:line" of the innermost stack frame that belongs to
// the user rather than to spore's own library packages. Frames in test files,
// examples and commands count as the user's, so tests see their own lines.
func CallerLoc() string {
	var pcs [48]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if isUserFrame(f) {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

func isUserFrame(f runtime.Frame) bool {
	fn := f.Function
	if fn == "" || strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "reflect.") {
		return false
	}
	if !strings.HasPrefix(fn, "github.com/sporeml/spore") {
		return true // the user's own code
	}
	if strings.HasSuffix(f.File, "_test.go") {
		return true
	}
	rest := strings.TrimPrefix(fn, modulePrefix)
	return strings.HasPrefix(rest, "examples/") || strings.HasPrefix(rest, "cmd/")
}

// ConcretizationError is the panic value raised when code running under a
// trace asks for the concrete value of a symbolic tensor — typically Go
// control flow that branches on a tensor's value inside a jitted function.
// Go's if/for run once, at trace time, when the value does not exist yet.
type ConcretizationError struct {
	Func   string // the traced function
	Method string // what was asked, e.g. "Item"
	Loc    string // the user's source line
}

// Error formats the error as one line.
func (e *ConcretizationError) Error() string {
	return fmt.Sprintf("spore: %s called on a symbolic tensor while tracing %s (at %s): "+
		"its value is not known until the compiled graph runs. Branch with spore.Cond, "+
		"loop with spore.While or spore.Scan, print with spore.Print, or run this code "+
		"outside Jit (spore.JitConfig{Disable: true} or PyNative mode)", e.Method, e.Func, e.Loc)
}
