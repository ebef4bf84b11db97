package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"testing"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// The fuzz targets run the HTTP front end's request decoders on arbitrary
// bodies. CI runs them for a count of inputs:
//
//	go test ./serve -run '^$' -fuzz '^FuzzDecodeJSON$' -fuzztime 2000x
//	go test ./serve -run '^$' -fuzz '^FuzzDecodeBinary$' -fuzztime 2000x
//
// Each checks that the decoder never panics, that it refuses with a 400
// *Error, and that what it accepts is self-consistent: valid JSON, every
// input's tensor of the declared datatype and shape, and the same tensors
// again when the request is encoded and decoded once more.

// fuzzLimits are small, so that the fuzzer explores the limits rather
// than allocating up to the defaults.
var fuzzLimits = Limits{MaxBodyBytes: 1 << 20, MaxElements: 1 << 12, MaxJSONDepth: 16}.WithDefaults()

// jsonSeeds are requests, good and bad, that the fuzzers start from.
var jsonSeeds = []string{
	`{"inputs":[{"name":"x","shape":[2,2],"datatype":"FP32","data":[1,2.5,-3,0.1]}]}`,
	`{"id":"a","inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[[1,2,3],[4,5,6]]}],"outputs":[{"name":"y","parameters":{"binary_data":true}}]}`,
	`{"inputs":[{"data":[[1],[2]],"datatype":"INT64","shape":[2,1],"name":"x"}]}`,
	`{"inputs":[{"name":"b","shape":[3],"datatype":"BOOL","data":[true,false,true]},{"name":"u","shape":[1],"datatype":"UINT8","data":[255]}]}`,
	`{"inputs":[{"name":"h","shape":[2],"datatype":"FP16","data":[0.1,"NaN"]},{"name":"g","shape":[1],"datatype":"BF16","data":["-Infinity"]}]}`,
	`{"parameters":{"timeout":1000,"binary_data_output":true},"inputs":[{"name":"i","shape":[1],"datatype":"INT32","data":[1e3]},{"name":"d","shape":[],"datatype":"FP64","data":[-0.5e-300]}]}`,
	`{"inputs":[{"name":"x","shape":[2,0],"datatype":"FP32","data":[[],[]]}]}`,
	`{"inputs":[{"name":"\u00e9","shape":[1],"datatype":"FP32","data":[1]}],"x":[{"y":null}]}`,
	`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1]}]}`,
	`[[[[[[[[[[[[[[[[[[[[[[`,
}

// binarySeeds are binary-data requests: a JSON header and raw contents.
var binarySeeds = []struct{ header, raw string }{
	{`{"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}`, "\x00\x00\x80\x3f\x00\x00\x00\x40"},
	{`{"inputs":[{"name":"a","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}},{"name":"j","shape":[1],"datatype":"UINT8","data":[3]},{"name":"b","shape":[2],"datatype":"BOOL","parameters":{"binary_data_size":2}}]}`, "\x15\x00\x00\x00\x00\x00\x00\x00\x01\x00"},
	{`{"inputs":[{"name":"h","shape":[2],"datatype":"FP16","parameters":{"binary_data_size":4}}]}`, "\x00\x3c\x00\x7e"},
	{`{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}`, "1234"},
	{`{"inputs":[{"name":"x","shape":[0],"datatype":"INT32","parameters":{"binary_data_size":0}}]}`, ""},
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	for _, s := range binarySeeds {
		f.Add([]byte(s.header))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, _, err := decodeInferRequest(body, -1, "m", "1", fuzzLimits)
		if err != nil {
			checkHTTPRefusal(t, err)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		checkInputsConsistent(t, req)
		// Encoded again (flat data, NaN as a string) and decoded, the
		// request must come back the same.
		again, _, err := decodeInferRequest(encodeJSONRequest(req), -1, "m", "1", fuzzLimits)
		if err != nil {
			t.Fatalf("re-encoded request %q refused: %v", encodeJSONRequest(req), err)
		}
		sameJSONInputs(t, req, again)
	})
}

func FuzzDecodeBinary(f *testing.F) {
	for _, s := range binarySeeds {
		f.Add([]byte(s.header), []byte(s.raw))
	}
	for _, s := range jsonSeeds[:3] {
		f.Add([]byte(s), []byte{1, 2, 3, 4})
	}
	f.Fuzz(func(t *testing.T, header, raw []byte) {
		body := append(append([]byte{}, header...), raw...)
		req, _, err := decodeInferRequest(body, len(header), "m", "", fuzzLimits)
		if err != nil {
			checkHTTPRefusal(t, err)
			return
		}
		if !json.Valid(header) {
			t.Fatalf("accepted a header that is not JSON: %q", header)
		}
		checkInputsConsistent(t, req)
		// The binary inputs, in order, hold exactly the raw section.
		var back []byte
		for _, in := range req.Inputs {
			if _, ok := in.Parameters["binary_data_size"]; ok {
				back = AppendRaw(back, in.Tensor)
			}
		}
		if !bytes.Equal(back, raw) {
			t.Fatalf("the binary inputs hold %x, the body's binary section is %x", back, raw)
		}
	})
}

// checkHTTPRefusal checks that a refused request got a 400 *Error with a
// message.
func checkHTTPRefusal(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Msg == "" {
		t.Fatalf("refused with %#v, want a 400 *Error with a message", err)
	}
}

// checkInputsConsistent checks that every input's tensor has the input's
// datatype and shape.
func checkInputsConsistent(t *testing.T, req *InferRequest) {
	t.Helper()
	if len(req.Inputs) == 0 {
		t.Fatal("accepted a request with no inputs")
	}
	for _, in := range req.Inputs {
		dt, err := DTypeOf(in.Datatype)
		if err != nil {
			t.Fatalf("input %q accepted with datatype %q: %v", in.Name, in.Datatype, err)
		}
		n, err := Elements(in.Name, in.Shape, fuzzLimits.MaxElements)
		if err != nil {
			t.Fatalf("input %q accepted with shape %v: %v", in.Name, in.Shape, err)
		}
		if in.Tensor == nil {
			t.Fatalf("input %q has no tensor", in.Name)
		}
		got := in.Tensor.Shape()
		if in.Tensor.DType() != dt || in.Tensor.Size() != n || len(got) != len(in.Shape) {
			t.Fatalf("input %q: tensor %v %v for %s%v", in.Name, in.Tensor.DType(), got, in.Datatype, in.Shape)
		}
		for i, d := range in.Shape {
			if int64(got[i]) != d {
				t.Fatalf("input %q: tensor shape %v for %v", in.Name, got, in.Shape)
			}
		}
	}
}

// encodeJSONRequest writes req as a JSON request with flat data, as a client
// would.
func encodeJSONRequest(req *InferRequest) []byte {
	b := []byte(`{"id":`)
	b = appendJSONString(b, req.ID)
	b = append(b, `,"inputs":[`...)
	for i, in := range req.Inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, in.Name)
		b = append(b, `,"datatype":`...)
		b = appendJSONString(b, in.Datatype)
		b = append(b, `,"shape":`...)
		b = appendJSONShape(b, in.Shape)
		b = append(b, `,"data":`...)
		b = appendJSONData(b, in.Tensor)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// sameJSONInputs checks that two decodings hold the same tensors, bit for bit
// (any NaN equal to any NaN).
func sameJSONInputs(t *testing.T, a, b *InferRequest) {
	t.Helper()
	if a.ID != b.ID || len(a.Inputs) != len(b.Inputs) {
		t.Fatalf("id %q, %d inputs came back as %q, %d", a.ID, len(a.Inputs), b.ID, len(b.Inputs))
	}
	for i := range a.Inputs {
		x, y := a.Inputs[i], b.Inputs[i]
		if x.Name != y.Name || x.Datatype != y.Datatype || !reflect.DeepEqual(x.Shape, y.Shape) {
			t.Fatalf("input %q %s%v came back as %q %s%v", x.Name, x.Datatype, x.Shape, y.Name, y.Datatype, y.Shape)
		}
		yb := tensorElementBits(y.Tensor)
		for j, v := range tensorElementBits(x.Tensor) {
			if w := yb[j]; v != w {
				t.Fatalf("input %q element %d: %s came back as %s", x.Name, j, v, w)
			}
		}
	}
}

// tensorElementBits returns t's elements as exact strings: floats by their bits,
// with every NaN the same.
func tensorElementBits(t *tensor.Tensor) []string {
	var out []string
	f := func(isNaN bool, bits uint64) {
		if isNaN {
			out = append(out, "NaN")
		} else {
			out = append(out, strconv.FormatUint(bits, 16))
		}
	}
	switch d := t.Data().(type) {
	case []float32:
		for _, v := range d {
			f(v != v, uint64(math.Float32bits(v)))
		}
	case []float64:
		for _, v := range d {
			f(v != v, math.Float64bits(v))
		}
	case []core.F16:
		for _, v := range d {
			f(v.Float32() != v.Float32(), uint64(v))
		}
	case []core.BF16:
		for _, v := range d {
			f(v.Float32() != v.Float32(), uint64(v))
		}
	default:
		b := AppendRaw(nil, t)
		for _, c := range b {
			out = append(out, strconv.Itoa(int(c)))
		}
	}
	return out
}

// FuzzFloat checks the decoder's float parsing against strconv, bit for
// bit, for float32 and float64 (run as the others, with -fuzz FuzzFloat).
func FuzzFloat(f *testing.F) {
	for _, s := range []string{"0.32941176470588235", "16777217", "1e-45", "3.4028235e38", "-0", "123456789012345678901", "0.1e-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, bits := range []int{32, 64} {
			s := &jsonScanner{buf: []byte(text), maxDepth: 1}
			got, err := s.float("x", 0, bits, "F")
			if err != nil || s.pos != len(text) || text[0] != '-' && (text[0] < '0' || text[0] > '9') {
				return // not a whole JSON number; the grammar is another test's
			}
			want, werr := strconv.ParseFloat(text, bits)
			if werr != nil || math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%q as float%d: %v (%x), strconv says %v (%x), %v", text, bits, got, math.Float64bits(got), want, math.Float64bits(want), werr)
			}
		}
	})
}
