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

// TestChunkGrain checks the chunking of parallel products: at least
// minPanels per chunk where there are enough, the same number of chunks
// for every thread (parallel.For makes panels/grain chunks).
func TestChunkGrain(t *testing.T) {
	cases := []struct {
		panels, threads, minPanels, wantChunks int
	}{
		{16, 2, 8, 2}, // a 512-wide layer: one 256-column chunk per thread
		{25, 2, 8, 2}, // 784 wide: 12 + 13 panels
		{64, 2, 8, 8}, // 2048 wide: four chunks per thread
		{5, 2, 8, 2},  // fewer panels than minPanels: one chunk per thread
		{16, 3, 8, 3},
		{1, 2, 8, 1},
	}
	for _, c := range cases {
		g := chunkGrain(c.panels, c.threads, c.minPanels)
		if chunks := c.panels / g; chunks != c.wantChunks {
			t.Errorf("chunkGrain(%d, %d, %d) = %d: %d chunks, want %d", c.panels, c.threads, c.minPanels, g, chunks, c.wantChunks)
		}
	}
}

// TestRowGrain checks the row chunks: the same number per thread, as few
// as keep each within maxTiles where For's 4 chunks per thread allow.
func TestRowGrain(t *testing.T) {
	cases := []struct {
		tiles, threads, maxTiles, wantChunks int
	}{
		{74, 2, 12, 8},  // 1024 rows: eight chunks of 9–10 tiles, none over 12
		{37, 2, 12, 4},  // 512 rows: 9–10 tiles
		{19, 2, 12, 2},  // 256 rows: 9 + 10 tiles
		{24, 2, 12, 2},  // exactly one A block per thread
		{25, 2, 12, 4},  // one tile over: four chunks of 6–7
		{147, 2, 12, 8}, // 2048 rows: For's cap of four per thread
		{4, 2, 12, 2},
		{19, 3, 12, 3},
	}
	for _, c := range cases {
		g := rowGrain(c.tiles, c.threads, c.maxTiles)
		chunks := c.tiles / g
		if chunks > 4*c.threads {
			chunks = 4 * c.threads // parallel.For's cap
		}
		if chunks != c.wantChunks {
			t.Errorf("rowGrain(%d, %d, %d) = %d: %d chunks, want %d", c.tiles, c.threads, c.maxTiles, g, chunks, c.wantChunks)
		}
		if chunks%c.threads != 0 {
			t.Errorf("rowGrain(%d, %d, %d): %d chunks for %d threads", c.tiles, c.threads, c.maxTiles, chunks, c.threads)
		}
	}
}
