package dataset

import (
	"slices"
	"strings"
	"testing"
)

func TestShard(t *testing.T) {
	for _, tc := range []struct{ rows, shards int }{
		{0, 2}, {1, 2}, {5, 1}, {5, 2}, {6, 3}, {7, 3}, {10, 4},
	} {
		ids, _ := seq(tc.rows)
		// Each process builds its own pipeline with the same seed; so
		// does each shard here, so that every one sees the first epoch's
		// order (the shuffle seeds epoch e with (seed, e)).
		pipeline := func() *Dataset { return FromTensors(ids).ShuffleSeed(tc.rows+1, 7) }
		whole := firsts(collect(t, pipeline()), 0)
		seen := make([]int, 0, tc.rows)
		for id := range tc.shards {
			s := pipeline().Shard(tc.shards, id)
			got := firsts(collect(t, s), 0)
			if s.Len() != len(got) {
				t.Errorf("%+v shard %d: Len %d, epoch has %d rows", tc, id, s.Len(), len(got))
			}
			// Shard id holds the rows at positions id, id+n, ... of the
			// shuffled order.
			var want []int
			for i := id; i < len(whole); i += tc.shards {
				want = append(want, whole[i])
			}
			if !slices.Equal(got, want) {
				t.Errorf("%+v shard %d: rows %v, want %v", tc, id, got, want)
			}
			seen = append(seen, got...)
		}
		slices.Sort(seen)
		if !isPerm(seen) || len(seen) != tc.rows {
			t.Errorf("%+v: the shards together hold %v, want every row once", tc, seen)
		}
	}
}

// TestShardedBatch checks the property data-parallel training rests on:
// the shards' j-th batches, interleaved, are the single-process j-th batch.
func TestShardedBatch(t *testing.T) {
	for _, tc := range []struct {
		rows, global, shards int
	}{
		{0, 4, 2}, {3, 4, 2}, {8, 4, 2}, {9, 4, 2}, {11, 4, 2},
		{63, 8, 4}, {64, 8, 4}, {67, 8, 4}, {70, 8, 4}, {71, 8, 4},
		{100, 6, 3}, {101, 6, 3}, {10, 4, 1}, {130, 64, 2}, {127, 64, 2},
	} {
		for _, drop := range []bool{true, false} {
			ids, xs := seq(tc.rows)
			src := FromTensors(ids, xs)
			single := collect(t, src.Batch(tc.global, drop))
			var parts [][][]int // parts[shard][batch] = ids
			for id := range tc.shards {
				s, err := src.ShardedBatch(tc.global, drop, tc.shards, id)
				if err != nil {
					t.Fatalf("%+v: %v", tc, err)
				}
				var batches [][]int
				rows := collect(t, s)
				for _, r := range rows {
					batches = append(batches, intsOf(r[0].Float64s()))
					// The second column travels with the first.
					x := r[1].Float64s()
					for k, v := range intsOf(r[0].Float64s()) {
						if x[2*k] != float64(v) || x[2*k+1] != -float64(v) {
							t.Fatalf("%+v shard %d: row %d's columns disagree", tc, id, v)
						}
					}
				}
				if s.Len() != len(batches) {
					t.Errorf("%+v drop=%v shard %d: Len %d, epoch has %d batches", tc, drop, id, s.Len(), len(batches))
				}
				parts = append(parts, batches)
			}
			for j, b := range single {
				want := intsOf(b[0].Float64s())
				got := make([]int, 0, len(want))
				for k := range len(want) {
					sh, pos := k%tc.shards, k/tc.shards
					if j >= len(parts[sh]) || pos >= len(parts[sh][j]) {
						t.Fatalf("%+v drop=%v: global batch %d position %d missing from shard %d", tc, drop, j, k, sh)
					}
					got = append(got, parts[sh][j][pos])
				}
				if !slices.Equal(got, want) {
					t.Errorf("%+v drop=%v: global batch %d interleaved from the shards is %v, want %v", tc, drop, j, got, want)
				}
			}
			total := 0
			for id, p := range parts {
				if len(p) > len(single) {
					t.Errorf("%+v drop=%v: shard %d has %d batches, single process %d", tc, drop, id, len(p), len(single))
				}
				if drop && len(p) != len(single) {
					t.Errorf("%+v drop: shard %d has %d batches, single process %d", tc, id, len(p), len(single))
				}
				for _, b := range p {
					total += len(b)
				}
			}
			want := 0
			for _, b := range single {
				want += b[0].Dim(0)
			}
			if total != want {
				t.Errorf("%+v drop=%v: the shards hold %d rows, the single process %d", tc, drop, total, want)
			}
		}
	}
}

func intsOf(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func TestShardedBatchErrors(t *testing.T) {
	ids, _ := seq(10)
	d := FromTensors(ids)
	for _, tc := range []struct {
		global, shards, id int
		want               string
	}{
		{64, 3, 0, "global batch size 64 is not a multiple of the 3 shards"},
		{0, 2, 0, "global batch size 0"},
		{4, 0, 0, "numShards 0"},
		{4, 2, 2, "shardID 2 is out of range for 2 shards"},
		{4, 2, -1, "shardID -1"},
	} {
		_, err := d.ShardedBatch(tc.global, true, tc.shards, tc.id)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ShardedBatch(%d, true, %d, %d): error %v, want one containing %q", tc.global, tc.shards, tc.id, err, tc.want)
		}
	}
	for _, tc := range []struct{ shards, id int }{{0, 0}, {2, 2}, {2, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Shard(%d, %d) did not panic", tc.shards, tc.id)
				}
			}()
			d.Shard(tc.shards, tc.id)
		}()
	}
}
