package comm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// ReduceOp is how AllReduce combines the ranks' values, after MindSpore's
// ReduceOp.
type ReduceOp int

// The reductions. Mean is Sum divided by Size (floats only).
const (
	Sum ReduceOp = iota
	Mean
	Max
)

// String names the reduction as MindSpore does.
func (op ReduceOp) String() string {
	switch op {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Max:
		return "max"
	}
	return "ReduceOp(" + strconv.Itoa(int(op)) + ")"
}

func (op ReduceOp) valid() bool { return op >= Sum && op <= Max }

// The process's communication state. cur is read by every collective and
// written only by Init and Finalize; an atomic pointer keeps the read free
// of locks.
var (
	mu  sync.Mutex // serialises Init and Finalize
	cur atomic.Pointer[state]
)

// state is the backend in use; after an MPI Finalize it is a closed
// backend (finalized), which MPI cannot leave.
type state struct {
	b         backend
	finalized bool
}

var singleState = &state{b: single{}}

// active returns the backend collectives use: the single-process one before
// Init.
func active() backend {
	if s := cur.Load(); s != nil {
		return s.b
	}
	return singleState.b
}

// Init starts communication; it is idempotent. In a binary built with the
// build tag mpi and launched by mpirun (OMPI_COMM_WORLD_SIZE is set), it
// initialises MPI; otherwise it selects the single-process backend (Size 1).
// A binary built without the tag but launched by mpirun with more than one
// rank gets an error rather than N processes that each train alone.
func Init() error {
	mu.Lock()
	defer mu.Unlock()
	if s := cur.Load(); s != nil {
		if s.finalized {
			return errors.New("comm: Init after Finalize: MPI cannot be initialised twice in one process")
		}
		return nil
	}
	b, err := newBackend()
	if err != nil {
		return err
	}
	cur.Store(&state{b: b})
	return nil
}

// Finalize ends communication. Under MPI it calls MPI_Finalize, after
// which the process cannot Init again, Rank and Size keep their values and
// every collective returns (or, inside a step, panics with) an error
// saying so; with the single-process backend it returns to the state
// before Init. Finalize without Init, or a second time, does nothing.
func Finalize() error {
	mu.Lock()
	defer mu.Unlock()
	s := cur.Load()
	if s == nil || s.finalized {
		return nil
	}
	if _, ok := s.b.(single); ok {
		cur.Store(nil)
		return nil
	}
	cur.Store(&state{b: closed{r: s.b.rank(), n: s.b.size()}, finalized: true})
	return s.b.finalize()
}

// Initialized reports whether Init has succeeded and Finalize has not been
// called since.
func Initialized() bool {
	s := cur.Load()
	return s != nil && !s.finalized
}

// Rank is this process's rank, from 0 to Size()-1: 0 before Init and in a
// single process.
func Rank() int { return active().rank() }

// Size is the number of ranks: 1 before Init and in a single process.
func Size() int { return active().size() }

// Backend names the transport in use ("single-process", "Open MPI").
func Backend() string { return active().name() }

// launchedRanks returns the number of ranks the launcher started, from
// the environment mpirun (Open MPI) or a PMI launcher (srun) sets; 0 when
// none.
func launchedRanks() int {
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		if v := os.Getenv(k); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 0
}

// Barrier returns when every rank has called it.
func Barrier() error { return wrap("Barrier", active().barrier()) }

// wrap names the call and the rank in a backend's error.
func wrap(call string, err error) error {
	if err == nil {
		return nil
	}
	b := active()
	return fmt.Errorf("comm: %s on rank %d of %d: %w", call, b.rank(), b.size(), err)
}

// AllReduceFloat64s combines v across ranks with op, in place: metrics,
// counts and checks around the training step.
func AllReduceFloat64s(v []float64, op ReduceOp) error {
	if !op.valid() {
		return fmt.Errorf("comm: AllReduceFloat64s: unknown reduction %v", op)
	}
	b := active()
	rop := op
	if op == Mean {
		rop = Sum
	}
	if err := b.allReduce(v, rop); err != nil {
		return wrap("AllReduceFloat64s", err)
	}
	if op == Mean {
		n := float64(b.size())
		for i := range v {
			v[i] /= n
		}
	}
	return nil
}

// AllGatherBytes returns every rank's b, in rank order; the slices may
// differ in length. Use it to compare what each rank holds (parameter
// shapes, configuration) before training.
func AllGatherBytes(b []byte) ([][]byte, error) {
	be := active()
	n := be.size()
	lens := make([]int64, n)
	if err := be.allGather([]int64{int64(len(b))}, lens); err != nil {
		return nil, wrap("AllGatherBytes", err)
	}
	var longest int64
	for _, l := range lens {
		longest = max(longest, l)
	}
	send := make([]byte, longest)
	copy(send, b)
	recv := make([]byte, longest*int64(n))
	if err := be.allGather(send, recv); err != nil {
		return nil, wrap("AllGatherBytes", err)
	}
	out := make([][]byte, n)
	for r := range out {
		out[r] = recv[int64(r)*longest : int64(r)*longest+lens[r] : int64(r)*longest+lens[r]]
	}
	return out, nil
}
