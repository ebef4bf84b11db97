package dataset

import (
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// Shard returns shard shardID of numShards of d, MindSpore's num_shards
// and shard_id: the rows of each epoch at positions i with
// i mod numShards == shardID. The shards together hold every row of d once,
// and their lengths differ by at most one.
//
// Shard after Shuffle: every shard then draws from the same seeded order
// (each process seeds the framework alike), so the shards of an epoch
// partition one permutation. For training batches, use ShardedBatch, which
// keeps the shards' batches aligned with the single-process ones.
func (d *Dataset) Shard(numShards, shardID int) *Dataset {
	if err := checkShard(numShards, shardID); err != nil {
		core.Panicf("Shard", "%v", err)
	}
	if numShards == 1 {
		return d
	}
	return &Dataset{n: &shardNode{up: d.n, n: numShards, id: shardID}}
}

func checkShard(numShards, shardID int) error {
	switch {
	case numShards < 1:
		return fmt.Errorf("numShards %d; need at least 1", numShards)
	case shardID < 0 || shardID >= numShards:
		return fmt.Errorf("shardID %d is out of range for %d shards", shardID, numShards)
	}
	return nil
}

type shardNode struct {
	up    node
	n, id int
}

func (s *shardNode) size() int {
	m := s.up.size()
	if m < 0 {
		return m
	}
	// Positions id, id+n, ... below m.
	return (m - s.id + s.n - 1) / s.n
}

func (s *shardNode) open() stream { return &shardStream{node: s, up: s.up.open()} }

type shardStream struct {
	node *shardNode
	up   stream
	i    int // rows read from up
}

func (s *shardStream) next() ([]*tensor.Tensor, error) {
	for {
		r, err := s.up.next()
		if err != nil {
			return nil, err
		}
		i := s.i
		s.i++
		if i%s.node.n == s.node.id {
			return r, nil
		}
	}
}

func (s *shardStream) close() { s.up.close() }

// ShardedBatch returns shard shardID's part of d.Batch(globalBatch,
// dropRemainder), for data-parallel training over numShards processes:
// its j-th batch holds the rows of global batch j at positions
// ≡ shardID (mod numShards), globalBatch/numShards rows, in order. The
// shards' j-th batches together are exactly the single-process j-th batch,
// so each process computes its part of the same step.
//
// globalBatch must be a multiple of numShards; otherwise, or when the
// shard is out of range, ShardedBatch returns an error naming the values
// (they usually come from a command line and a process count).
//
// With dropRemainder every shard yields the same number of batches, which
// data-parallel training needs: a process with one batch more would wait
// for the others forever at its gradient exchange. Without it, the last,
// short global batch is split like the others, and a shard whose part of
// it is empty ends one batch sooner.
func (d *Dataset) ShardedBatch(globalBatch int, dropRemainder bool, numShards, shardID int) (*Dataset, error) {
	if err := checkShard(numShards, shardID); err != nil {
		return nil, fmt.Errorf("dataset: ShardedBatch: %v", err)
	}
	if globalBatch < 1 {
		return nil, fmt.Errorf("dataset: ShardedBatch: global batch size %d; need at least 1", globalBatch)
	}
	if globalBatch%numShards != 0 {
		return nil, fmt.Errorf("dataset: ShardedBatch: the global batch size %d is not a multiple of the %d shards (processes); use a multiple of %d", globalBatch, numShards, numShards)
	}
	if numShards == 1 {
		return d.Batch(globalBatch, dropRemainder), nil
	}
	return &Dataset{n: &batchNode{up: d.n, bs: globalBatch, drop: dropRemainder, shards: numShards, id: shardID, op: "ShardedBatch"}}, nil
}
