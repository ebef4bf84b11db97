//go:build mpi

package comm

/*
#cgo pkg-config: ompi
#include <stdlib.h>
#include <mpi.h>

// Open MPI's handles (MPI_COMM_WORLD, MPI_FLOAT, ...) are macros over
// addresses of library globals, which cgo cannot name; these wrappers take
// plain codes instead.

enum { SP_F32, SP_F64, SP_I32, SP_I64, SP_BYTE };

static MPI_Datatype sp_type(int code) {
	switch (code) {
	case SP_F32: return MPI_FLOAT;
	case SP_F64: return MPI_DOUBLE;
	case SP_I32: return MPI_INT32_T;
	case SP_I64: return MPI_INT64_T;
	}
	return MPI_BYTE;
}

// Codes follow ReduceOp: 0 Sum, 2 Max (Mean is a Sum).
static MPI_Op sp_op(int code) { return code == 2 ? MPI_MAX : MPI_SUM; }

static int sp_init(int funneled, int *provided) {
	int rc = MPI_Init_thread(NULL, NULL, funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE, provided);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}
static int sp_multiple(void) { return MPI_THREAD_MULTIPLE; }
static int sp_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int sp_size(int *n) { return MPI_Comm_size(MPI_COMM_WORLD, n); }
static int sp_allreduce(void *buf, int n, int type, int op) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, sp_type(type), sp_op(op), MPI_COMM_WORLD);
}
static int sp_iallreduce(void *buf, int n, int type, int op, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, sp_type(type), sp_op(op), MPI_COMM_WORLD, req);
}
static int sp_wait(MPI_Request *req) { return MPI_Wait(req, MPI_STATUS_IGNORE); }
static int sp_bcast(void *buf, int n, int type, int root) {
	return MPI_Bcast(buf, n, sp_type(type), root, MPI_COMM_WORLD);
}
static int sp_allgather(void *send, void *recv, int n, int type) {
	return MPI_Allgather(send, n, sp_type(type), recv, n, sp_type(type), MPI_COMM_WORLD);
}
static int sp_reduce(void *send, void *recv, int n, int type, int root) {
	return MPI_Reduce(send, recv, n, sp_type(type), MPI_SUM, root, MPI_COMM_WORLD);
}
static int sp_reduce_scatter(void *send, void *recv, int n, int type) {
	return MPI_Reduce_scatter_block(send, recv, n, sp_type(type), MPI_SUM, MPI_COMM_WORLD);
}
static int sp_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int sp_finalize(void) { return MPI_Finalize(); }
static void sp_error_string(int code, char *buf) {
	int n = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	buf[n] = 0;
}
static int sp_max_error_string(void) { return MPI_MAX_ERROR_STRING; }
*/
import "C"

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// newBackend starts MPI when mpirun launched the process, and otherwise
// returns the single-process backend: a plain run of an MPI build is one
// process, without MPI's singleton start-up.
func newBackend() (backend, error) {
	if launchedRanks() == 0 {
		return single{}, nil
	}
	return startMPI()
}

// mpi is the Open MPI backend. MPI may only be called from the thread that
// initialised it unless the library grants MPI_THREAD_MULTIPLE, and Go
// moves goroutines between threads; so MPI starts on a goroutine locked to
// its OS thread, which then serves every call when the library grants
// less (calls), and MPI_Finalize in any case. SPORE_MPI_FUNNELED=1 asks
// for MPI_THREAD_FUNNELED only, for libraries whose MPI_THREAD_MULTIPLE is
// slow or broken.
type mpi struct {
	r, n     int
	multiple bool
	calls    chan func()
	// nonblocking makes startAllReduce an MPI_Iallreduce; otherwise it is
	// a blocking MPI_Allreduce issued at the start (see startAllReduce).
	nonblocking bool
}

func startMPI() (*mpi, error) {
	// Open MPI's own SIGSEGV and SIGBUS handlers are installed only where
	// no handler is, so the Go runtime's stay, and a nil dereference is
	// still a panic (the mpi-tagged test checks it).
	b := &mpi{calls: make(chan func()), nonblocking: os.Getenv("SPORE_MPI_NONBLOCKING") == "1"}
	started := make(chan error)
	go b.serve(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return b, nil
}

// serve initialises MPI on this goroutine's locked thread, then runs the
// calls sent to it until Finalize closes the channel.
func (b *mpi) serve(started chan<- error) {
	runtime.LockOSThread()
	var provided, r, n C.int
	funnel := C.int(0)
	if os.Getenv("SPORE_MPI_FUNNELED") == "1" {
		funnel = 1
	}
	if rc := C.sp_init(funnel, &provided); rc != 0 {
		started <- mpiError("MPI_Init_thread", rc)
		return
	}
	if rc := C.sp_rank(&r); rc != 0 {
		started <- mpiError("MPI_Comm_rank", rc)
		return
	}
	if rc := C.sp_size(&n); rc != 0 {
		started <- mpiError("MPI_Comm_size", rc)
		return
	}
	b.r, b.n, b.multiple = int(r), int(n), provided == C.sp_multiple()
	started <- nil
	for f := range b.calls {
		f()
	}
}

// call runs f on a thread allowed to call MPI and turns its return code
// into an error naming the call.
func (b *mpi) call(name string, f func() C.int) error {
	var rc C.int
	if b.multiple {
		rc = f()
	} else {
		done := make(chan struct{})
		b.calls <- func() { rc = f(); close(done) }
		<-done
	}
	if rc != 0 {
		return mpiError(name, rc)
	}
	return nil
}

// mpiError describes an MPI return code.
func mpiError(call string, rc C.int) error {
	buf := (*C.char)(C.malloc(C.size_t(C.sp_max_error_string() + 1)))
	defer C.free(unsafe.Pointer(buf))
	C.sp_error_string(rc, buf)
	return fmt.Errorf("%s failed: %s (MPI error %d)", call, C.GoString(buf), int(rc))
}

// typed returns buf's address, length and MPI type code for a reduction;
// ok is false for element types MPI cannot sum (bool, uint8).
func typed(buf any) (p unsafe.Pointer, n int, code C.int, ok bool) {
	p, n, _ = sliceInfo(buf)
	switch buf.(type) {
	case []float32:
		return p, n, C.SP_F32, true
	case []float64:
		return p, n, C.SP_F64, true
	case []int32:
		return p, n, C.SP_I32, true
	case []int64:
		return p, n, C.SP_I64, true
	}
	return p, n, C.SP_BYTE, false
}

// bytesOf returns buf's address and its length in bytes, for collectives
// that only move data.
func bytesOf(buf any) (unsafe.Pointer, int) {
	p, n, elem := sliceInfo(buf)
	return p, n * elem
}

func checkCount(n int) error {
	if n > math.MaxInt32 {
		return fmt.Errorf("%d elements exceed MPI's count limit of %d", n, math.MaxInt32)
	}
	return nil
}

func (b *mpi) name() string { return "Open MPI" }
func (b *mpi) rank() int    { return b.r }
func (b *mpi) size() int    { return b.n }

func (b *mpi) allReduce(buf any, op ReduceOp) error {
	p, n, code, ok := typed(buf)
	if !ok {
		return fmt.Errorf("cannot reduce a %T", buf)
	}
	if n == 0 {
		return nil
	}
	if err := checkCount(n); err != nil {
		return err
	}
	return b.call("MPI_Allreduce", func() C.int { return C.sp_allreduce(p, C.int(n), code, C.int(op)) })
}

// mpiRequest is a non-blocking collective under way. The request handle
// lives in C memory, so that MPI keeps no pointer into Go's heap; the
// buffer, which MPI does keep, is pinned until the wait. Requests are
// pooled, so a training step's starts allocate nothing once warm.
type mpiRequest struct {
	b   *mpi
	req *C.MPI_Request
	pin runtime.Pinner
}

var requests = sync.Pool{New: func() any {
	r := &mpiRequest{req: (*C.MPI_Request)(C.malloc(C.size_t(unsafe.Sizeof(C.MPI_Request(nil)))))}
	// The pool may drop an idle request; its handle's C memory goes too.
	runtime.SetFinalizer(r, func(r *mpiRequest) { C.free(unsafe.Pointer(r.req)) })
	return r
}}

// startAllReduce starts the all-reduce of a bucket. Open MPI 4.1 advances
// a non-blocking collective only inside MPI calls (it has no progress
// thread), so nothing overlaps the computation between a start and its
// wait, and its non-blocking all-reduce (libnbc) is slower than the
// blocking one: on the development machine a 2.7 MB bucket took 1.6 ms
// with MPI_Iallreduce and MPI_Wait after 3 ms of computation, 0.7 ms with
// MPI_Allreduce. So by default the start performs a blocking MPI_Allreduce
// — at the point the compiled schedule issues it, as soon as the bucket's
// gradients are ready — and the wait has nothing left to do.
// SPORE_MPI_NONBLOCKING=1 selects MPI_Iallreduce, for MPI libraries and
// networks that progress it in the background.
func (b *mpi) startAllReduce(buf any, op ReduceOp) (request, error) {
	if !b.nonblocking {
		return done{}, b.allReduce(buf, op)
	}
	p, n, code, ok := typed(buf)
	if !ok {
		return nil, fmt.Errorf("cannot reduce a %T", buf)
	}
	if n == 0 {
		return done{}, nil
	}
	if err := checkCount(n); err != nil {
		return nil, err
	}
	r := requests.Get().(*mpiRequest)
	r.b = b
	r.pin.Pin(p)
	err := b.call("MPI_Iallreduce", func() C.int { return C.sp_iallreduce(p, C.int(n), code, C.int(op), r.req) })
	if err != nil {
		r.pin.Unpin()
		requests.Put(r)
		return nil, err
	}
	return r, nil
}

func (r *mpiRequest) wait() error {
	err := r.b.call("MPI_Wait", func() C.int { return C.sp_wait(r.req) })
	r.pin.Unpin()
	r.b = nil
	requests.Put(r)
	return err
}

func (b *mpi) broadcast(buf any, root int) error {
	if root < 0 || root >= b.n {
		return fmt.Errorf("root rank %d is out of range for %d ranks", root, b.n)
	}
	p, n := bytesOf(buf)
	if n == 0 {
		return nil
	}
	if err := checkCount(n); err != nil {
		return err
	}
	return b.call("MPI_Bcast", func() C.int { return C.sp_bcast(p, C.int(n), C.SP_BYTE, C.int(root)) })
}

func (b *mpi) allGather(send, recv any) error {
	sp, sn := bytesOf(send)
	rp, rn := bytesOf(recv)
	if rn != sn*b.n {
		return fmt.Errorf("gathering %d bytes from %d ranks into %d", sn, b.n, rn)
	}
	if sn == 0 {
		return nil
	}
	if err := checkCount(rn); err != nil {
		return err
	}
	return b.call("MPI_Allgather", func() C.int { return C.sp_allgather(sp, rp, C.int(sn), C.SP_BYTE) })
}

func (b *mpi) reduce(send, recv any, root int) error {
	if root < 0 || root >= b.n {
		return fmt.Errorf("root rank %d is out of range for %d ranks", root, b.n)
	}
	sp, n, code, ok := typed(send)
	rp, _, _, _ := typed(recv)
	if !ok {
		return fmt.Errorf("cannot reduce a %T", send)
	}
	if n == 0 {
		return nil
	}
	if err := checkCount(n); err != nil {
		return err
	}
	err := b.call("MPI_Reduce", func() C.int { return C.sp_reduce(sp, rp, C.int(n), code, C.int(root)) })
	if err == nil && b.r != root {
		clearSlice(recv)
	}
	return err
}

func (b *mpi) reduceScatter(send, recv any) error {
	sp, sn, code, ok := typed(send)
	rp, rn, _, _ := typed(recv)
	if !ok {
		return fmt.Errorf("cannot reduce a %T", send)
	}
	if sn != rn*b.n {
		return fmt.Errorf("scattering %d elements over %d ranks into %d", sn, b.n, rn)
	}
	if rn == 0 {
		return nil
	}
	if err := checkCount(sn); err != nil {
		return err
	}
	return b.call("MPI_Reduce_scatter_block", func() C.int { return C.sp_reduce_scatter(sp, rp, C.int(rn), code) })
}

func (b *mpi) barrier() error {
	return b.call("MPI_Barrier", func() C.int { return C.sp_barrier() })
}

// finalize runs MPI_Finalize on the thread that initialised MPI, as
// MPI_THREAD_FUNNELED requires, and stops that thread's goroutine.
func (b *mpi) finalize() error {
	var rc C.int
	done := make(chan struct{})
	b.calls <- func() { rc = C.sp_finalize(); close(done) }
	<-done
	close(b.calls)
	if rc != 0 {
		return mpiError("MPI_Finalize", rc)
	}
	return nil
}
