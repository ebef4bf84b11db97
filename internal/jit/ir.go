package jit

import (
	"reflect"

	"github.com/sporeml/spore/internal/core"
)

// IR returns the optimised IR of fn for the given arguments, as text (JAX's
// make_jaxpr, after the passes): it traces and compiles fn the way Jit
// would, without running it. args are what fn would be called with.
func IR(fn any, args []any, cfg ...Config) (ir string, err error) {
	defer core.Catch(&err, "")
	fv := reflect.ValueOf(fn)
	if fv.Kind() != reflect.Func {
		return "", core.Errorf("IR", "want a function, got %T", fn)
	}
	ft := fv.Type()
	if len(args) != ft.NumIn() {
		return "", core.Errorf("IR", "%T takes %d arguments, got %d", fn, ft.NumIn(), len(args))
	}
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.CacheSize = 1
	st := &jitState{name: core.FuncName(fv), cfg: c, fv: fv}
	if c.Name != "" {
		st.name = c.Name
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		if a == nil {
			in[i] = reflect.Zero(ft.In(i))
		} else {
			in[i] = reflect.ValueOf(a)
		}
	}
	e := st.entryFor(in)
	return e.res.Graph.String(), nil
}
