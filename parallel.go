package spore

import (
	"fmt"
	"sync/atomic"

	"github.com/sporeml/spore/internal/core"
)

// ParallelMode is how training is spread over processes, as MindSpore's
// parallel_mode.
type ParallelMode int

const (
	// StandAlone trains in one process (the default).
	StandAlone ParallelMode = iota
	// DataParallel replicates the model on every rank (package comm):
	// each rank computes gradients on its share of the global batch and the
	// training step all-reduces them before the update, so that every rank
	// applies the same update.
	DataParallel
)

// String returns MindSpore's name for the mode.
func (m ParallelMode) String() string {
	switch m {
	case StandAlone:
		return "stand_alone"
	case DataParallel:
		return "data_parallel"
	}
	return fmt.Sprintf("ParallelMode(%d)", int(m))
}

// DefaultBucketBytes is the gradient bucket size of data-parallel training
// when AutoParallelContext.BucketBytes is zero: large enough that a
// network of a few megabytes reduces in one or two messages, as PyTorch
// DDP's 25 MB default.
const DefaultBucketBytes = 25 << 20

// AutoParallelContext configures distributed training, as MindSpore's
// set_auto_parallel_context. The zero value is stand-alone training.
type AutoParallelContext struct {
	// ParallelMode is StandAlone or DataParallel.
	ParallelMode ParallelMode
	// GradientsMean divides the all-reduced gradients by the number of
	// ranks (MindSpore's gradients_mean), so that with each rank holding
	// an equal share of the global batch and a loss averaged over its
	// share, the update equals that of one process over the whole batch.
	// Without it gradients are summed.
	GradientsMean bool
	// BucketBytes is the size of the gradient buckets: gradients are
	// packed, in the order backward produces them, into buffers of about
	// this many bytes, each reduced by one collective. Zero means
	// DefaultBucketBytes.
	BucketBytes int
}

// Validate reports a setting that cannot be used.
func (c AutoParallelContext) Validate() error {
	if c.ParallelMode != StandAlone && c.ParallelMode != DataParallel {
		return fmt.Errorf("spore: AutoParallelContext: unknown parallel mode %v", c.ParallelMode)
	}
	if c.BucketBytes < 0 {
		return fmt.Errorf("spore: AutoParallelContext: negative bucket size %d", c.BucketBytes)
	}
	return nil
}

// Buckets returns BucketBytes, or DefaultBucketBytes when it is zero.
func (c AutoParallelContext) Buckets() int {
	if c.BucketBytes == 0 {
		return DefaultBucketBytes
	}
	return c.BucketBytes
}

var parallelCtx atomic.Pointer[AutoParallelContext]

func init() { parallelCtx.Store(&AutoParallelContext{}) }

// SetAutoParallelContext sets the process-wide distributed-training
// configuration, as MindSpore's
// set_auto_parallel_context(parallel_mode=DATA_PARALLEL, gradients_mean=True).
// Training-step cells built afterwards read it (a TrainOneStepConfig can
// override it per cell). An invalid setting panics with an *Error.
func SetAutoParallelContext(c AutoParallelContext) {
	if err := c.Validate(); err != nil {
		panic(core.Errorf("SetAutoParallelContext", "%v", err))
	}
	parallelCtx.Store(&c)
}

// GetAutoParallelContext returns the distributed-training configuration.
func GetAutoParallelContext() AutoParallelContext { return *parallelCtx.Load() }

// ResetAutoParallelContext restores stand-alone training, as MindSpore's
// reset_auto_parallel_context.
func ResetAutoParallelContext() { parallelCtx.Store(&AutoParallelContext{}) }
