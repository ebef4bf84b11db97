package core

import (
	"reflect"
	"runtime"
	"strings"
)

// AnySymbolic reports whether any of xs is symbolic (a value of a graph
// being traced): the transforms and control flow then stage their work
// into that graph instead of running it.
func AnySymbolic(xs []*Tensor) bool {
	for _, x := range xs {
		if x != nil && x.IsSymbolic() {
			return true
		}
	}
	return false
}

// FuncName is the name of the function fv holds, without its package path
// ("main.loss.func1"), for the names of compiled functions in dumps and
// errors; "jit" when the runtime does not know it.
func FuncName(fv reflect.Value) string {
	if f := runtime.FuncForPC(fv.Pointer()); f != nil {
		n := f.Name()
		if i := strings.LastIndex(n, "/"); i >= 0 {
			n = n[i+1:]
		}
		return n
	}
	return "jit"
}
