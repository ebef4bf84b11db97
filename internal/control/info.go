package control

import "github.com/sporeml/spore/internal/core"

// Prims is spore.ControlFlowPrims, whose documentation is the reference.
func Prims() (cond, while, scan *core.Prim) { return condPrim, whilePrim, scanPrim }

// ScanLayout is spore.ScanLayout, whose documentation is the reference.
func ScanLayout(attrs any) (carries, scanned int, reverse, ok bool) {
	s, ok := attrs.(*scanAttrs)
	if !ok {
		return 0, 0, false, false
	}
	return s.nc, s.nx, s.reverse, true
}
