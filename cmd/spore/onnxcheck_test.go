package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pb is a protocol-buffer message being encoded: enough of the wire format
// (varints, length-delimited fields, packed repeated numbers) to write the
// small ONNX models these tests need, without the onnx package's internal
// protobuf types.
type pb []byte

func (m pb) key(field, wire int) pb { return binary.AppendUvarint(m, uint64(field<<3|wire)) }

// int is a varint field (int32, int64, enum).
func (m pb) int(field int, v int64) pb { return binary.AppendUvarint(m.key(field, 0), uint64(v)) }

// bytes is a length-delimited field: a string, bytes, or a sub-message.
func (m pb) bytes(field int, b []byte) pb {
	return append(binary.AppendUvarint(m.key(field, 2), uint64(len(b))), b...)
}

func (m pb) str(field int, s string) pb { return m.bytes(field, []byte(s)) }

// ints is a packed repeated varint field.
func (m pb) ints(field int, vs ...int64) pb {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return m.bytes(field, b)
}

// floats is a packed repeated float field.
func (m pb) floats(field int, vs ...float32) pb {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return m.bytes(field, b)
}

// ONNX element types.
const (
	onnxFloat = 1
	onnxInt64 = 7
)

// onnxValue is a ValueInfoProto: dims are fixed sizes, or names (dynamic
// dimensions); a nil dims declares no shape at all.
func onnxValue(name string, elem int64, dims ...any) pb {
	tt := pb(nil).int(1, elem)
	if dims != nil {
		var shape pb
		for _, d := range dims {
			switch d := d.(type) {
			case int:
				shape = shape.bytes(1, pb(nil).int(1, int64(d)))
			case string:
				shape = shape.bytes(1, pb(nil).str(2, d))
			}
		}
		tt = tt.bytes(2, shape)
	}
	return pb(nil).str(1, name).bytes(2, pb(nil).bytes(1, tt))
}

// onnxNode is a NodeProto without attributes.
func onnxNode(op, name string, ins, outs []string) pb {
	n := pb(nil)
	for _, in := range ins {
		n = n.str(1, in)
	}
	for _, out := range outs {
		n = n.str(2, out)
	}
	return n.str(3, name).str(4, op)
}

// onnxFloats and onnxInt64s are initializers (TensorProto).
func onnxFloats(name string, dims []int64, vs ...float32) pb {
	return pb(nil).ints(1, dims...).int(2, onnxFloat).floats(4, vs...).str(8, name)
}

func onnxInt64s(name string, dims []int64, vs ...int64) pb {
	return pb(nil).ints(1, dims...).int(2, onnxInt64).ints(7, vs...).str(8, name)
}

// onnxModel writes a model of one graph at opset 17 to dir/name and
// returns its path.
func onnxModel(t *testing.T, dir, name string, nodes, inits, inputs, outputs []pb) string {
	t.Helper()
	g := pb(nil)
	for _, n := range nodes {
		g = g.bytes(1, n)
	}
	g = g.str(2, strings.TrimSuffix(name, ".onnx"))
	for _, in := range inits {
		g = g.bytes(5, in)
	}
	for _, in := range inputs {
		g = g.bytes(11, in)
	}
	for _, out := range outputs {
		g = g.bytes(12, out)
	}
	m := pb(nil).int(1, 8).str(2, "spore tests").bytes(7, g).bytes(8, pb(nil).str(1, "").int(2, 17))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, m, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// spore onnx check traces the graph at the declared input shapes: a model
// whose ops spore has but whose shapes do not fit (which spore run would
// refuse) fails the check, naming the node; one that fits lists its
// outputs' traced shapes; one whose inputs declare no shape says its
// shapes were not checked. An output without a declared shape does not
// print as a scalar's "[]".
func TestOnnxCheckShapes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name                  string
		nodes, inits, ins, os []pb
		code                  int
		want                  []string // in stdout
		err                   string   // in the one line on stderr
	}{
		{"matmul [2,3]x[4,5]",
			[]pb{onnxNode("MatMul", "mm", []string{"a", "b"}, []string{"y"})}, nil,
			[]pb{onnxValue("a", onnxFloat, 2, 3), onnxValue("b", onnxFloat, 4, 5)}, []pb{onnxValue("y", onnxFloat)}, 1,
			[]string{"output  y (shape not declared) Float32", `shapes: do not fit: node "mm" (MatMul): MatMul: inner dimensions differ: [2 3] x [4 5]`, "spore can load this model but not run it"},
			`spore cannot run it at its declared input shapes: node "mm" (MatMul): MatMul: inner dimensions differ`},
		{"reshape to [-1,-1]",
			[]pb{onnxNode("Reshape", "rs", []string{"x", "shape"}, []string{"y"})}, []pb{onnxInt64s("shape", []int64{2}, -1, -1)},
			[]pb{onnxValue("x", onnxFloat, 2, 6)}, []pb{onnxValue("y", onnxFloat, "N", "M")}, 1,
			[]string{"output  y [N M] Float32", "shapes: do not fit", "has more than one -1"},
			"has more than one -1"},
		{"dynamic batch that fits",
			[]pb{onnxNode("MatMul", "mm", []string{"x", "w"}, []string{"y"})}, []pb{onnxFloats("w", []int64{3, 5}, make([]float32, 15)...)},
			[]pb{onnxValue("x", onnxFloat, "N", 3)}, []pb{onnxValue("y", onnxFloat)}, 0,
			[]string{"input   x [N 3] Float32", "output  y (shape not declared) Float32", "shapes: fit at the declared input shapes (dynamic dimensions as 1); outputs y [1 5] Float32", "spore can load this model, and its shapes fit"},
			""},
		{"input without a shape",
			[]pb{onnxNode("Relu", "relu", []string{"x"}, []string{"y"})}, nil,
			[]pb{onnxValue("x", onnxFloat)}, []pb{onnxValue("y", onnxFloat)}, 0,
			[]string{"input   x (shape not declared) Float32", `shapes: not checked: input "x" declares no shape`, "spore can load this model (ops supported; shapes not checked)"},
			""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := onnxModel(t, dir, fmt.Sprintf("m%d.onnx", i), tc.nodes, tc.inits, tc.ins, tc.os)
			stdout, stderr, code := runCLI(t, "onnx", "check", path)
			if code != tc.code || !strings.Contains(stderr, tc.err) || (tc.err == "") != (stderr == "") || strings.Count(stderr, "\n") > 1 {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q\n%s", code, stderr, tc.code, tc.err, stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("report lacks %q:\n%s", w, stdout)
				}
			}
			if strings.Contains(stdout, "[]") || strings.Contains(stdout, "(at ") {
				t.Errorf("report shows an undeclared shape as [] or a source line:\n%s", stdout)
			}
		})
	}
}
