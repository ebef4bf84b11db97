package serve

import (
	"math"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// This file encodes the HTTP front end's responses by appending to a
// byte slice (pooled by the handler): numbers with strconv's Append
// functions, strings with appendJSONString. An inference response holds one
// number per output element, and reflection per element would cost more
// than the model on small networks.

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONFloat appends a float element: the shortest decimal that reads
// back as the same value of its type (bits 32 or 64). JSON has no NaN or
// infinities, so they are written as the strings "NaN", "Infinity" and
// "-Infinity", which the decoder takes back.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendJSONHalf appends a 16-bit float element (v, exactly) with the
// fewest digits that round back to the same 16-bit value: "0.1", not the
// float32 digits "0.099975586".
func appendJSONHalf(b []byte, v float32, round func(float32) float32) []byte {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendJSONFloat(b, f, 32)
	}
	var tmp [32]byte
	for prec := 1; prec < 9; prec++ {
		t := strconv.AppendFloat(tmp[:0], f, 'g', prec, 64)
		back, err := strconv.ParseFloat(string(t), 32)
		if err == nil && round(float32(back)) == v {
			// Reformat the short decimal as 'g' would the shortest
			// float64: "2000", not "2e+03".
			d, _ := strconv.ParseFloat(string(t), 64)
			return strconv.AppendFloat(b, d, 'g', -1, 64)
		}
	}
	return strconv.AppendFloat(b, f, 'g', -1, 32)
}

func roundToF16(f float32) float32  { return core.F16From(f).Float32() }
func roundToBF16(f float32) float32 { return core.BF16From(f).Float32() }

// appendJSONData appends t's elements as a flat JSON array.
func appendJSONData(b []byte, t *tensor.Tensor) []byte {
	b = append(b, '[')
	switch d := t.Data().(type) {
	case []float32:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONFloat(b, float64(v), 32)
		}
	case []float64:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONFloat(b, v, 64)
		}
	case []core.F16:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONHalf(b, v.Float32(), roundToF16)
		}
	case []core.BF16:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONHalf(b, v.Float32(), roundToBF16)
		}
	case []int32:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(v), 10)
		}
	case []int64:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, v, 10)
		}
	case []uint8:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(v), 10)
		}
	case []bool:
		for i, v := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendBool(b, v)
		}
	}
	return append(b, ']')
}

// appendJSONShape appends a shape as a JSON array.
func appendJSONShape(b []byte, shape []int64) []byte {
	b = append(b, '[')
	for i, d := range shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, d, 10)
	}
	return append(b, ']')
}

// appendInferResponse appends resp to b: the JSON, then the raw contents
// of the outputs sent as binary data, in the order of the JSON. It
// returns the extended buffer and the length of the JSON part (the
// response's Inference-Header-Content-Length when binary outputs follow),
// or a 500 *Error when the response is not self-consistent.
func appendInferResponse(b []byte, resp *InferResponse, req *InferRequest, opt httpOptions) ([]byte, int, bool, error) {
	start := len(b)
	binary := make([]bool, len(resp.Outputs))
	anyBinary := false
	for i, o := range resp.Outputs {
		if o.Tensor == nil {
			return b, 0, false, errorf(http.StatusInternalServerError, "the model's output %q has no tensor", o.Name)
		}
		if o.Tensor.IsSymbolic() {
			return b, 0, false, errorf(http.StatusInternalServerError, "the model's output %q has no value (a symbolic tensor)", o.Name)
		}
		if _, err := DTypeOf(Datatype(o.Tensor.DType())); err != nil {
			return b, 0, false, errorf(http.StatusInternalServerError, "the model's output %q has dtype %v, which the protocol cannot carry", o.Name, o.Tensor.DType())
		}
		if o.Shape != nil {
			if n, err := Elements("output "+strconv.Quote(o.Name), o.Shape, math.MaxInt64); err != nil || n != o.Tensor.Size() {
				return b, 0, false, errorf(http.StatusInternalServerError, "the model's output %q has shape %v but %d elements", o.Name, o.Shape, o.Tensor.Size())
			}
		}
		// An output's own binary_data wins over the request's
		// binary_data_output, as in Triton.
		binary[i] = o.Binary || opt.binaryAll
		for _, r := range req.Outputs {
			if _, explicit := r.Parameters["binary_data"]; r.Name == o.Name && explicit {
				binary[i] = r.Binary
			}
		}
		anyBinary = anyBinary || binary[i]
	}
	b = append(b, `{"model_name":`...)
	b = appendJSONString(b, resp.ModelName)
	b = append(b, `,"model_version":`...)
	b = appendJSONString(b, resp.ModelVersion)
	if resp.ID != "" {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, resp.ID)
	}
	b = append(b, `,"outputs":[`...)
	for i, o := range resp.Outputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, o.Name)
		b = append(b, `,"datatype":`...)
		b = appendJSONString(b, Datatype(o.Tensor.DType()))
		b = append(b, `,"shape":`...)
		if o.Shape != nil {
			b = appendJSONShape(b, o.Shape)
		} else {
			b = append(b, '[')
			for j, d := range o.Tensor.Shape() {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(d), 10)
			}
			b = append(b, ']')
		}
		if binary[i] {
			b = append(b, `,"parameters":{"binary_data_size":`...)
			b = strconv.AppendInt(b, int64(o.Tensor.Size()*o.Tensor.DType().Size()), 10)
			b = append(b, '}')
		} else {
			b = append(b, `,"data":`...)
			b = appendJSONData(b, o.Tensor)
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	jsonLen := len(b) - start
	for i, o := range resp.Outputs {
		if binary[i] {
			b = AppendRaw(b, o.Tensor)
		}
	}
	return b, jsonLen, anyBinary, nil
}

// appendJSONError appends the protocol's error body, {"error": msg}.
func appendJSONError(b []byte, msg string) []byte {
	b = append(b, `{"error":`...)
	b = appendJSONString(b, msg)
	return append(b, '}')
}
