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

// nilTensor panics with an *Error for a nil *Tensor reaching a tensor
// method. It names what the user called rather than the accessor that
// tripped over the nil: the outermost op of package ops or cell Construct
// below the user's frame, else the innermost library function.
func nilTensor() {
	var pcs [48]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	op, inner := "", ""
	for {
		f, more := frames.Next()
		if isUserFrame(f) {
			break
		}
		if name, kind := libraryFunc(f); kind != 0 {
			if inner == "" {
				inner = name
			}
			if kind == 2 {
				op = name // keep going: an outer one wins
			}
		}
		if !more {
			break
		}
	}
	if op == "" {
		op = inner
	}
	if op == "" {
		op = "Tensor"
	}
	Panicf(op, "a tensor argument is nil")
}

// libraryFunc names a frame of spore's own packages outside internal/ and
// tensor ("Softmax", "nn.Dense"). kind is 0 for other frames, 2 for an
// exported op of package ops or a cell's Construct, 1 for the rest.
func libraryFunc(f runtime.Frame) (name string, kind int) {
	rest, ok := strings.CutPrefix(f.Function, modulePrefix)
	if !ok || strings.HasPrefix(rest, "internal/") || strings.HasPrefix(rest, "tensor.") {
		return "", 0
	}
	if i := strings.Index(rest, ".func"); i > 0 {
		rest = rest[:i] // a closure: name its enclosing function
	}
	rest = strings.NewReplacer("(*", "", ")", "").Replace(rest)
	pkg, fn, _ := strings.Cut(rest, ".")
	switch {
	case pkg == "ops" && fn != "" && fn[0] >= 'A' && fn[0] <= 'Z':
		return fn, 2 // ops are known by their own names, as in errors
	case strings.HasSuffix(fn, ".Construct"):
		return pkg + "." + strings.TrimSuffix(fn, ".Construct"), 2
	}
	return pkg + "." + fn, 1
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

// Catch, deferred directly (defer core.Catch(&err, "")), turns a panic
// into *err: the panic value itself when it is an error (an *Error names
// the op and the user's line), else its text after prefix. Entry points
// that take outside input use it to return, as an error, what the ops
// panic with.
func Catch(err *error, prefix string) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok {
			*err = e
			return
		}
		*err = fmt.Errorf("%s%v", prefix, r)
	}
}
