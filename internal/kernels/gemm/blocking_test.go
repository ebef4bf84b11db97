package gemm

import "testing"

// TestEvenBlock checks the shape-chosen block size: the fewest blocks
// that fit maxBlock, none ragged by more than a unit, the block a
// multiple of unit.
func TestEvenBlock(t *testing.T) {
	cases := []struct {
		n, maxBlock, unit, want int
	}{
		{784, 256, 4, 196},   // the seed's first layer: 4 blocks, not 256·3 + 16
		{512, 256, 4, 256},   // exact
		{1024, 256, 4, 256},  // exact
		{257, 256, 4, 132},   // 2 blocks: 132 + 125
		{200, 256, 4, 200},   // one block: all of n, whatever the unit
		{518, 168, 14, 140},  // half of a 1024 batch: 140·3 + 98, not 168·3 + 14
		{256, 168, 14, 140},  // 140 + 116
		{1024, 168, 14, 154}, // 7 blocks: 154·6 + 100
		{64, 168, 14, 64},
		{1, 1, 1, 1},
	}
	for _, c := range cases {
		got := evenBlock(c.n, c.maxBlock, c.unit)
		if got != c.want {
			t.Errorf("evenBlock(%d, %d, %d) = %d, want %d", c.n, c.maxBlock, c.unit, got, c.want)
		}
		blocks := (c.n + got - 1) / got
		if fewest := (c.n + c.maxBlock - 1) / c.maxBlock; got > c.maxBlock || blocks != fewest {
			t.Errorf("evenBlock(%d, %d, %d) = %d: %d blocks, want %d of at most %d", c.n, c.maxBlock, c.unit, got, blocks, fewest, c.maxBlock)
		}
	}
}
