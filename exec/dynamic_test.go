package exec

import (
	"reflect"
	"strings"
	"testing"
)

func TestFitAffine(t *testing.T) {
	// One variable, bound 16, fitted at 2 and verified at 3 and 1.
	f := &fitter{nvars: 1, bound: [MaxDynamicVars]int{16}, at: [][MaxDynamicVars]int{{2}, {3}, {1}}}
	cases := []struct {
		name string
		xs   []int // at 16, 2, 3, 1
		c, a int
		err  string
	}{
		{"constant", []int{7, 7, 7, 7}, 7, 0, ""},
		{"n", []int{16, 2, 3, 1}, 0, 1, ""},
		{"3n+1", []int{49, 7, 10, 4}, 1, 3, ""},
		{"ceil(n/2)", []int{8, 1, 2, 1}, 0, 0, "not affine"},
		{"n*n", []int{256, 4, 9, 1}, 0, 0, "not affine"},
		{"min(n, 4)", []int{4, 2, 3, 1}, 0, 0, "not affine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fm, err := f.fit(c.xs)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("fit %v: %v, want an error saying %q", c.xs, err, c.err)
				}
				return
			}
			if err != nil || fm.c != c.c || fm.a[0] != c.a {
				t.Fatalf("fit %v: %+v %v, want c=%d a=%d", c.xs, fm, err, c.c, c.a)
			}
		})
	}
}

// attrsT stands for an op's attributes: unexported fields, a slice, a
// pointer and an interface, each holding integers.
type attrsT struct {
	shape []int
	inner *struct{ n, k int }
	any   any
	scale float32
}

func TestDiffAndRebuildAttrs(t *testing.T) {
	mk := func(n int, scale float32) any {
		return &attrsT{shape: []int{n, 4}, inner: &struct{ n, k int }{2 * n, 5}, any: [2]int{n + 1, 9}, scale: scale}
	}
	f := &fitter{nvars: 1, bound: [MaxDynamicVars]int{8}, at: [][MaxDynamicVars]int{{2}, {3}}}
	roots := func(vs ...any) []reflect.Value {
		out := make([]reflect.Value, len(vs))
		for i := range vs {
			out[i] = addressable(reflect.ValueOf(&vs[i]).Elem())
		}
		return out
	}
	df := &differ{f: f}
	if err := df.walk(roots(mk(8, 1), mk(2, 1), mk(3, 1)), nil, 0); err != nil {
		t.Fatal(err)
	}
	if len(df.sites) != 3 {
		t.Fatalf("%d sites, want 3 (shape[0], inner.n, any[0])", len(df.sites))
	}
	bound := mk(8, 1)
	x := [MaxDynamicVars]int{5}
	got := rebuild(roots(bound)[0], df.sites, 0, &x).Interface()
	if want := mk(5, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("rebuilt at 5: %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(bound, mk(8, 1)) {
		t.Errorf("rebuilding changed the original: %+v", bound)
	}
	// A float that differs (a mean's 1/n) is refused.
	df = &differ{f: f}
	err := df.walk(roots(mk(8, 1.0/8), mk(2, 1.0/2), mk(3, 1.0/3)), nil, 0)
	if err == nil || !strings.Contains(err.Error(), "float") {
		t.Fatalf("float attribute: %v, want a refusal naming it", err)
	}
}
