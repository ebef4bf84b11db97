package spore

import "github.com/sporeml/spore/internal/core"

// ControlFlowPrims returns the primitives that Cond, While and Scan trace
// to, so that code walking a traced graph (an exporter translating them to
// another format's control flow) recognises them by handle. Their regions
// are laid out as Cond, While and Scan document: Cond's Args are the
// predicate, then the operands and captures, with regions then and else;
// While's regions are the condition and the body, leading with the
// carries; Scan's region is the body, leading with the carries and one
// slice of each scanned input (see ScanLayout).
func ControlFlowPrims() (cond, while, scan *core.Prim) { return condPrim, whilePrim, scanPrim }

// ScanLayout returns the layout of a Scan node from its attributes: how
// many of its leading inputs (and results) are carries, how many of the
// inputs that follow are scanned along their leading axis, and whether it
// visits the steps last to first (ScanReverse). ok is false when attrs are
// not a Scan node's.
func ScanLayout(attrs any) (carries, scanned int, reverse, ok bool) {
	s, ok := attrs.(*scanAttrs)
	if !ok {
		return 0, 0, false, false
	}
	return s.nc, s.nx, s.reverse, true
}
