package jit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sporeml/spore/tensor"
)

func TestInputSpecErrors(t *testing.T) {
	f32 := tensor.Float32
	cases := []struct {
		name  string
		specs []InputSpec
		err   string
	}{
		{"no bound", []InputSpec{{DType: f32, Shape: []int{-1, 4}}}, "dimension 0 is dynamic but Max has 0 bounds"},
		{"bound below 1", []InputSpec{{DType: f32, Shape: []int{-1, 4}, Max: []int{0}}}, "must be at least 1"},
		{"negative size", []InputSpec{{DType: f32, Shape: []int{2, -3}}}, "dimension 1 is -3"},
		{"extra bound", []InputSpec{{DType: f32, Shape: []int{2, 4}, Max: []int{8}}}, "0 dynamic dimensions but 1 bounds"},
		{"bounds disagree", []InputSpec{{DType: f32, Shape: []int{-1, 4}, Max: []int{8}}, {DType: f32, Shape: []int{-1}, Max: []int{4}}}, "has bound 4, another input's has 8"},
		{"no dtype", []InputSpec{{Shape: []int{-1}, Max: []int{4}}}, "invalid dtype"},
		{"too many", []InputSpec{{DType: f32, Shape: []int{-1, -1, -1, -1, -1}, Max: []int{2, 2, 2, 2, 2}}}, "more than 4 dynamic dimensions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), c.err) {
					t.Fatalf("panic %v, want one saying %q", r, c.err)
				}
			}()
			New(func(xs ...*Tensor) *Tensor { return xs[0] }, Config{Inputs: c.specs, Name: "f"})
		})
	}
}

func TestInputSpecFits(t *testing.T) {
	d := newDynState("f", []InputSpec{
		{DType: tensor.Float32, Shape: []int{-1, 3}, Max: []int{8}},
		{DType: tensor.Int64, Shape: []int{-1}, Max: []int{8}},
	})
	cases := []struct {
		name string
		x, y []int
		dt   tensor.DType
		fits bool
	}{
		{"batch 1", []int{1, 3}, []int{1}, tensor.Int64, true},
		{"batch 8", []int{8, 3}, []int{8}, tensor.Int64, true},
		{"above the bound", []int{9, 3}, []int{9}, tensor.Int64, false},
		{"batches disagree", []int{2, 3}, []int{3}, tensor.Int64, false},
		{"static dim", []int{2, 4}, []int{2}, tensor.Int64, false},
		{"dtype", []int{2, 3}, []int{2}, tensor.Int32, false},
		{"rank", []int{2, 3, 1}, []int{2}, tensor.Int64, false},
	}
	for _, c := range cases {
		xs := []*Tensor{tensor.New(tensor.Float32, c.x...), tensor.New(c.dt, c.y...)}
		if got := d.fits(xs); got != c.fits {
			t.Errorf("%s: fits %v, want %v", c.name, got, c.fits)
		}
		if !c.fits && !strings.Contains(d.misfit(xs), "do not fit the input signature Float32[<=8,3], Int64[<=8]") {
			t.Errorf("%s: misfit %q", c.name, d.misfit(xs))
		}
	}
}
