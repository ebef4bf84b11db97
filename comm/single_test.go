//go:build !mpi

package comm_test

import (
	"strings"
	"testing"

	"github.com/sporeml/spore/comm"
)

// A binary built without MPI refuses to be one of several ranks.
func TestLaunchedWithoutMPI(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	err := comm.Init()
	if err == nil {
		comm.Finalize()
		t.Fatal("Init under a 2-rank launch without MPI succeeded")
	}
	if !strings.Contains(err.Error(), "-tags mpi") {
		t.Errorf("error %q does not say how to build with MPI", err)
	}
}
