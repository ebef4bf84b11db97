package exec

import (
	"testing"

	"github.com/sporeml/spore/graph"
	"github.com/sporeml/spore/tensor"
)

// TestLayoutReusesTheWarmestGap checks the arena's choice among freed
// gaps: the smallest that fits and, among equal ones, the one used last.
func TestLayoutReusesTheWarmestGap(t *testing.T) {
	buf := func(size, first, last int) *storage {
		return &storage{kind: graph.KindOp, dtype: tensor.Float32, size: size, first: first, last: last}
	}
	cases := []struct {
		name  string
		arena []*storage
		want  int // offset of the last buffer
	}{
		{
			// a (last used at 3) and b (at 2) are both free when c is
			// defined at 4; c takes a's place, the warmer one.
			name:  "equal gaps, the later used",
			arena: []*storage{buf(64, 0, 3), buf(64, 1, 2), buf(64, 4, 5)},
			want:  0,
		},
		{
			name:  "equal gaps, the later used second",
			arena: []*storage{buf(64, 0, 2), buf(64, 1, 3), buf(64, 4, 5)},
			want:  64,
		},
		{
			// The tighter fit wins, warmer or not.
			name:  "smallest fit first",
			arena: []*storage{buf(128, 0, 3), buf(64, 1, 2), buf(64, 4, 5)},
			want:  128,
		},
		{
			name:  "tighter gap used earlier",
			arena: []*storage{buf(64, 0, 2), buf(128, 1, 3), buf(64, 4, 5)},
			want:  0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			layout(c.arena)
			if got := c.arena[len(c.arena)-1].offset; got != c.want {
				t.Errorf("offset %d, want %d", got, c.want)
			}
		})
	}
}
