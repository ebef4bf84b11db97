// Package comm is spore's communication between processes, after
// mindspore.communication: Init, Rank, Size, the collectives AllReduce,
// Broadcast, AllGather, Reduce, ReduceScatter and Barrier, and Finalize.
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
// OMPI_COMM_WORLD_SIZE, or a PMI launcher's PMI_SIZE); a plain run of the
// same binary is a single process. A binary built without the tag refuses
// to start under mpirun with more than one rank, rather than train N times
// alone.
//
// MPI starts on a goroutine locked to its OS thread, since Go moves
// goroutines between threads. When the library grants
// MPI_THREAD_MULTIPLE (Open MPI 4 does), calls are made from any thread;
// otherwise, or with SPORE_MPI_FUNNELED=1 in the environment, every call is
// made from that one thread. The world communicator returns errors instead
// of aborting (MPI_ERRORS_RETURN): the helpers return them as errors, and a
// collective inside a step panics with a *tensor.Error naming the
// collective, the rank and the failed MPI call, which the usual error path
// turns into a message.
//
// # Collectives in the IR
//
// The tensor collectives are primitives like any op of package ops: they
// run eagerly in PyNative mode and become nodes of the graph under Jit,
// where they show in IR dumps. They are impure, so no compiler pass folds,
// merges or removes one: every rank must issue the same collectives in the
// same order. Gradients are the adjoint collectives: AllReduce with Sum or
// Mean differentiates to the same all-reduce of the cotangent (Max is not
// differentiable), Broadcast to Reduce and back, AllGather to ReduceScatter
// and back. AllReduceStart and AllReduceWait
// split an all-reduce into a non-blocking start (MPI_Iallreduce) and its
// completion, so that a compiled plan can overlap communication with
// computation; the data-parallel training step (nn.TrainOneStepCell) uses
// them for its gradient buckets, and the compiler (compile.Schedule) issues
// each start as soon as its inputs are computed and each wait just before
// its result is needed. With the single-process backend the nodes are
// still there, as identities, so the training step has the same nodes at
// any Size. Open MPI 4.1 advances a non-blocking reduction only inside MPI
// calls, and its MPI_Iallreduce is slower than MPI_Allreduce, so by default
// a start performs a blocking MPI_Allreduce where the schedule puts it;
// SPORE_MPI_NONBLOCKING=1 makes it an MPI_Iallreduce completed at the
// wait, for libraries and networks that progress it in the background.
//
// # Around the step
//
// AllReduceFloat64s reduces metrics, AllGatherBytes compares what the ranks
// hold, and BroadcastParameters makes every rank start from rank 0's
// weights, after checking that the ranks' parameters agree.
package comm
