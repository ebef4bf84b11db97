package spore_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
)

// TestProfileFrontDoor: spore.Profile records the compiled calls made
// inside it, StartProfile refuses a second profile, and a compiled call
// allocates nothing before a profile or after it.
func TestProfileFrontDoor(t *testing.T) {
	jf := spore.NewJit(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Exp(ops.MatMul(x, x))) })
	x := spore.RandUniform(spore.Float32, -1, 1, 8, 8)
	out := []*spore.Tensor{spore.Zeros(spore.Float32)}
	args := []*spore.Tensor{x}
	jf.RunInto(args, out)
	if n := testing.AllocsPerRun(50, func() { jf.RunInto(args, out) }); n != 0 {
		t.Errorf("off: a compiled call allocates %v times", n)
	}
	r, err := spore.Profile(func() {
		for range 4 {
			jf.RunInto(args, out)
		}
		if _, err := spore.StartProfile(); err == nil {
			t.Error("StartProfile inside Profile: no error")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Rows()
	if len(rows) != 2 || rows[0].Calls != 4 || rows[1].Calls != 4 {
		t.Fatalf("want the fused MatMul and Exp, and the sum, 4 calls each: %+v", rows)
	}
	var b strings.Builder
	if err := r.Table(&b, 0); err != nil || !strings.Contains(b.String(), "MatMul") {
		t.Fatalf("table %q, %v", b.String(), err)
	}
	if n := testing.AllocsPerRun(50, func() { jf.RunInto(args, out) }); n != 0 {
		t.Errorf("after the profile: a compiled call allocates %v times", n)
	}
}
