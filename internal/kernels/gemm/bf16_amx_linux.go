//go:build amd64 && linux && !noasm

package gemm

import (
	"os"
	"syscall"
	"unsafe"
)

// Linux keeps AMX tile data (XSAVE component 18, XTILEDATA) off by
// default: a process must ask for it with arch_prctl before its first tile
// instruction, or that instruction faults. The grant is per process and
// is checked against every thread's signal stack, which must hold the
// extra 8 KiB of tile state a signal frame then carries; Go's 32 KiB
// signal stacks do, and the kernel refuses the request otherwise, in which
// case the AMX kernel is not offered.
//
// A process whose other (non-Go) threads install signal stacks too small
// for tile state can set SPORE_NOAMX=1: the permission is then not
// requested and the AMX kernel not offered.
const (
	archGetXcompPerm = 0x1022
	archReqXcompPerm = 0x1023
	xfeatureTileData = 18
)

// amxUsable requests the tile state for the process and reports whether
// it was granted. It runs once, at package initialisation.
func amxUsable() bool {
	if os.Getenv("SPORE_NOAMX") != "" {
		return false
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureTileData, 0); e != 0 {
		return false
	}
	var perm uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetXcompPerm, uintptr(unsafe.Pointer(&perm)), 0); e != 0 {
		return false
	}
	return perm&(1<<xfeatureTileData) != 0
}
