//go:build !mpi

package comm

import "fmt"

// newBackend returns the single-process backend: this build has no MPI.
func newBackend() (backend, error) {
	if n := launchedRanks(); n > 1 {
		return nil, fmt.Errorf("comm: Init: launched as one of %d ranks, but this binary was built without MPI; rebuild it with -tags mpi", n)
	}
	return single{}, nil
}
