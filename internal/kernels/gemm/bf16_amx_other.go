//go:build amd64 && !linux && !noasm

package gemm

// amxUsable reports false: only Linux's permission request for the tile
// state is implemented, so elsewhere the AMX kernel is not offered.
func amxUsable() bool { return false }
