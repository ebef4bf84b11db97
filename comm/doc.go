// Package comm is spore's communication between processes, after
// mindspore.communication: Init, Rank, Size, the collectives AllReduce,
// Broadcast, AllGather and Barrier, and Finalize.
//
// # Backends
//
// The default build is pure Go and has one backend, a single process:
// Size is 1 and every collective is the identity (AllGather a copy). A
// binary built with the build tag mpi (go build -tags mpi) uses Open MPI
// through cgo (Debian: apt-get install -y libopenmpi-dev openmpi-bin) and
// runs as many ranks as mpirun starts (mpirun -np 4 ./spore train).
//
// Init starts MPI only when the process was launched by mpirun (it reads
// OMPI_COMM_WORLD_SIZE); a plain run of the same binary is a single
// process. A binary built without the tag refuses to start under mpirun
// with more than one rank, rather than train N times alone.
//
// Calls to MPI are made from one locked OS thread when the library does not
// grant MPI_THREAD_MULTIPLE, since Go moves goroutines between threads.
// The world communicator returns errors instead of aborting
// (MPI_ERRORS_RETURN), and every error names the MPI call and the rank.
//
// # Collectives in the IR
//
// The tensor collectives are primitives like any op of package ops: they
// run eagerly in PyNative mode and become nodes of the graph under Jit,
// where they show in IR dumps. They are impure, so no compiler pass folds,
// merges or removes one: every rank must issue the same collectives in the
// same order. AllReduce with Sum or Mean is differentiable (its gradient is
// the same all-reduce of the cotangent). AllReduceStart and AllReduceWait
// split an all-reduce into a non-blocking start (MPI_Iallreduce) and its
// completion, so that a compiled plan can overlap communication with
// computation; the data-parallel training step (nn.TrainOneStepCell) uses
// them for its gradient buckets.
//
// # Around the step
//
// AllReduceFloat64s reduces metrics, AllGatherBytes compares what the ranks
// hold, and BroadcastParameters makes every rank start from rank 0's
// weights, after checking that the ranks' parameters agree.
package comm
