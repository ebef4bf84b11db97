package main

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/tensor"
)

// Sequence and optional values in spore run. A sequence travels as one
// .npz archive whose keys are its positions, "0", "1", ...: given as
// --input NAME=SEQ.npz (or as the next input in order, when the archive's
// keys are all positions and that input is a sequence), and written by
// --output for a sequence output. An optional input is a .npy (holding
// its value) or left out (empty); an optional output writes its value, or
// nothing when it is empty.

// positionKeys returns the archive's arrays in position order when its
// keys are exactly "0".."n-1", and false otherwise.
func positionKeys(keys []string, ts []*tensor.Tensor) ([]*tensor.Tensor, bool) {
	out := make([]*tensor.Tensor, len(keys))
	for k, key := range keys {
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(keys) || strconv.Itoa(i) != key || out[i] != nil {
			return nil, false
		}
		out[i] = ts[k]
	}
	return out, true
}

// readSequence reads a sequence from an .npz of numbered keys.
func readSequence(path string) (*tensor.Tensor, error) {
	keys, ts, err := npy.ReadNPZ(path)
	if err != nil {
		return nil, err
	}
	elems, ok := positionKeys(keys, ts)
	if !ok {
		sort.Strings(keys)
		return nil, fmt.Errorf("a sequence's archive has the keys 0, 1, ..., not %v", keys)
	}
	return onnx.NewSequence(elems...)
}

// readValue reads the file for input in: a sequence from an .npz, an
// optional's value or a tensor from an .npy.
func readValue(in onnx.ValueInfo, path string) (*tensor.Tensor, error) {
	switch in.Kind {
	case onnx.KindSequence:
		return readSequence(path)
	case onnx.KindOptional:
		t, err := npy.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return onnx.NewOptional(t), nil
	case onnx.KindOther:
		return nil, fmt.Errorf("input %q has a type spore cannot hold (a map or a sparse tensor)", in.Name)
	}
	return npy.ReadFile(path)
}

// describeValue summarizes a value for the report: a tensor as before, a
// sequence as its length with one entry per element, an optional as its
// value or "empty".
func describeValue(name string, t *tensor.Tensor) valueJSON {
	switch onnx.KindOf(t) {
	case onnx.KindSequence:
		elems, _ := onnx.SequenceElements(t)
		v := valueJSON{Name: name, Shape: []int{len(elems)}, DType: "sequence"}
		for i, e := range elems {
			v.Elements = append(v.Elements, describeValue(fmt.Sprintf("%s[%d]", name, i), e))
		}
		return v
	case onnx.KindOptional:
		e, _ := onnx.OptionalElement(t)
		if e == nil {
			return valueJSON{Name: name, DType: "optional (empty)"}
		}
		v := describeValue(name, e)
		v.DType = "optional " + v.DType
		return v
	}
	v := valueJSON{Name: name, Shape: shapeOf(t), DType: t.DType().String()}
	v.summarize(t)
	return v
}

// writeValue writes one output to path: a sequence as an .npz of numbered
// keys, an optional's value (nothing for an empty one, which it reports
// as false), a tensor as an .npy.
func writeValue(path string, t *tensor.Tensor) (bool, error) {
	switch onnx.KindOf(t) {
	case onnx.KindSequence:
		elems, _ := onnx.SequenceElements(t)
		keys := make([]string, len(elems))
		for i := range elems {
			keys[i] = strconv.Itoa(i)
		}
		return true, npy.WriteNPZ(path, keys, elems)
	case onnx.KindOptional:
		e, _ := onnx.OptionalElement(t)
		if e == nil {
			return false, nil
		}
		return writeValue(path, e)
	}
	return true, npy.WriteFile(path, t)
}
