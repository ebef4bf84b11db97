package comm

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// BroadcastParameters overwrites every parameter with root's value, in
// place, so that all ranks start training from the same weights. It first
// checks that every rank holds the same number of parameters with the same
// names, shapes and dtypes, and returns one error on every rank, naming the
// first parameter and rank that differ, when they do not: a mismatched
// broadcast would otherwise corrupt memory or never return.
func BroadcastParameters(params []*tensor.Tensor, root int) error {
	b := active()
	if root < 0 || root >= b.size() {
		return fmt.Errorf("comm: BroadcastParameters: root rank %d is out of range for %d ranks", root, b.size())
	}
	for i, p := range params {
		if p == nil {
			return fmt.Errorf("comm: BroadcastParameters: parameter %d is nil", i)
		}
		if p.IsSymbolic() {
			return fmt.Errorf("comm: BroadcastParameters: parameter %d (%q) is symbolic: call it outside traced code", i, p.Name())
		}
	}
	if err := sameParameters(params, root); err != nil {
		return err
	}
	for _, p := range params {
		err := b.broadcast(p.Data(), root)
		// Written in place, not through Assign: count the write, so that
		// compiled plans holding packed copies of p repack it.
		core.TouchParam(p)
		if err != nil {
			return wrap(fmt.Sprintf("BroadcastParameters (parameter %q)", p.Name()), err)
		}
	}
	return nil
}

// sameParameters compares every rank's parameter list with root's.
func sameParameters(params []*tensor.Tensor, root int) error {
	descs := make([]string, len(params))
	var mine bytes.Buffer
	for i, p := range params {
		descs[i] = fmt.Sprintf("%q %v %v", p.Name(), p.Shape(), p.DType())
		mine.WriteString(descs[i])
		mine.WriteByte('\n')
	}
	all, err := AllGatherBytes(mine.Bytes())
	if err != nil {
		return err
	}
	want := bytes.Split(all[root], []byte{'\n'})
	for r, got := range all {
		if r == root || bytes.Equal(got, all[root]) {
			continue
		}
		lines := bytes.Split(got, []byte{'\n'})
		if len(lines) != len(want) {
			return fmt.Errorf("comm: BroadcastParameters: rank %d has %d parameters, rank %d has %d", r, len(lines)-1, root, len(want)-1)
		}
		for i := range lines {
			if !bytes.Equal(lines[i], want[i]) {
				return fmt.Errorf("comm: BroadcastParameters: parameter %d differs between ranks: rank %d has %s, rank %d has %s", i, r, lines[i], root, want[i])
			}
		}
		return errors.New("comm: BroadcastParameters: parameter lists differ between ranks")
	}
	return nil
}
