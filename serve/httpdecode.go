package serve

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

// This file decodes the body of a POST .../infer: the JSON request, and
// the binary tensor contents that Triton's binary-data extension puts
// after it.

// httpOptions are what the HTTP front end reads from a request's
// parameters for itself.
type httpOptions struct {
	// timeout is the "timeout" request parameter (Triton's, in
	// microseconds); 0 when the request names none.
	timeout time.Duration
	// binaryAll is the "binary_data_output" request parameter: every
	// output is returned as binary data.
	binaryAll bool
}

// httpPendingInput is one input while its JSON object is being read: its
// data may come before its shape and datatype.
type httpPendingInput struct {
	in       InferInput
	hasShape bool
	// data is the span of the "data" value when it came before the shape
	// or datatype, at offset dataAt of the body; decoded is set once the
	// tensor is built from it.
	data    []byte
	dataAt  int
	hasData bool
	decoded bool
	// binarySize is parameters.binary_data_size, or -1.
	binarySize int64
}

// decodeInferRequest decodes an inference request body. jsonLen is the
// Inference-Header-Content-Length (the length of the JSON header, the
// binary contents of the inputs following it), or -1 when the whole body
// is JSON. Every error is a 400 *Error naming what was wrong.
func decodeInferRequest(body []byte, jsonLen int, model, version string, lim Limits) (*InferRequest, httpOptions, error) {
	var opt httpOptions
	header, binary := body, []byte(nil)
	if jsonLen >= 0 {
		if jsonLen > len(body) {
			return nil, opt, errorf(http.StatusBadRequest, "Inference-Header-Content-Length is %d, but the body has only %d bytes", jsonLen, len(body))
		}
		header, binary = body[:jsonLen], body[jsonLen:]
	}
	s := &jsonScanner{buf: header, maxDepth: lim.MaxJSONDepth}
	req := &InferRequest{Model: model, Version: version}
	var pending []httpPendingInput
	var seen [4]bool // id, parameters, inputs, outputs
	more, err := s.objectStart("the request")
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			break
		}
		f := -1
		switch string(k) {
		case "id":
			f = 0
		case "parameters":
			f = 1
		case "inputs":
			f = 2
		case "outputs":
			f = 3
		}
		if f >= 0 {
			if seen[f] {
				return nil, opt, s.fail("the request has %q twice", k)
			}
			seen[f] = true
		}
		switch f {
		case 0:
			req.ID, err = s.str(`"id"`)
		case 1:
			req.Parameters, err = s.params(`the request's "parameters"`)
		case 2:
			pending, err = s.inputs(pending, lim)
		case 3:
			req.Outputs, err = s.outputs()
		default:
			err = s.skip()
		}
		if err == nil {
			more, err = s.next('}')
		}
	}
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return nil, opt, err
	}
	if opt, err = httpRequestOptions(req.Parameters); err != nil {
		return nil, opt, err
	}
	if opt.binaryAll {
		// As Triton: binary_data_output is the default for the outputs
		// that do not say binary_data themselves.
		for i := range req.Outputs {
			if _, ok := req.Outputs[i].Parameters["binary_data"]; !ok {
				req.Outputs[i].Binary = true
			}
		}
	}
	if len(pending) == 0 {
		return nil, opt, errorf(http.StatusBadRequest, `the request has no "inputs"`)
	}
	if err := httpBinaryInputs(pending, binary, jsonLen >= 0, lim); err != nil {
		return nil, opt, err
	}
	req.Inputs = make([]InferInput, len(pending))
	if name, ok := repeatedName(len(pending), func(i int) string { return pending[i].in.Name }); ok {
		return nil, opt, errorf(http.StatusBadRequest, "input %q appears twice in the request", name)
	}
	for i := range pending {
		p := &pending[i]
		if !p.decoded {
			ds := &jsonScanner{buf: p.data, maxDepth: lim.MaxJSONDepth, base: p.dataAt}
			if err := ds.tensorData(&p.in, lim); err != nil {
				return nil, opt, err
			}
		}
		req.Inputs[i] = p.in
	}
	if name, ok := repeatedName(len(req.Outputs), func(i int) string { return req.Outputs[i].Name }); ok {
		return nil, opt, errorf(http.StatusBadRequest, "output %q is asked for twice", name)
	}
	return req, opt, nil
}

// repeatedName returns a name that occurs twice among the n names name(i).
// A request names a few tensors, for which comparing pairs is cheaper
// than building a map; a long list (which a large body could hold) gets
// the map, so that the cost stays linear.
func repeatedName(n int, name func(int) string) (string, bool) {
	if n <= 16 {
		for i := 1; i < n; i++ {
			for j := 0; j < i; j++ {
				if name(i) == name(j) {
					return name(i), true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		if seen[name(i)] {
			return name(i), true
		}
		seen[name(i)] = true
	}
	return "", false
}

// httpRequestOptions reads the request parameters the front end acts on.
func httpRequestOptions(params map[string]any) (httpOptions, error) {
	var opt httpOptions
	if v, ok := params["binary_data_output"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return opt, errorf(http.StatusBadRequest, `request parameter "binary_data_output" must be true or false, not %v`, v)
		}
		opt.binaryAll = b
	}
	if v, ok := params["timeout"]; ok {
		var us float64
		switch v := v.(type) {
		case int64:
			us = float64(v)
		case float64:
			us = v
		default:
			return opt, errorf(http.StatusBadRequest, `request parameter "timeout" must be a number of microseconds, not %q`, fmt.Sprint(v))
		}
		// A year is far beyond any deadline a server keeps; above it the
		// conversion to a Duration would overflow.
		if us < 0 || us > 365*24*3600*1e6 {
			return opt, errorf(http.StatusBadRequest, `request parameter "timeout" is %v microseconds; it must be between 0 and a year`, v)
		}
		opt.timeout = time.Duration(us * float64(time.Microsecond))
	}
	return opt, nil
}

// params reads a "parameters" object. The protocol's parameter values
// are bools, numbers and strings; a nested value is refused, which also
// keeps a body from building a large []any.
func (s *jsonScanner) params(what string) (map[string]any, error) {
	m := map[string]any{}
	more, err := s.objectStart(what)
	for more && err == nil {
		var k string
		if k, err = s.str("a parameter name"); err != nil {
			break
		}
		if err = s.expect(':', "':' after a parameter name"); err != nil {
			break
		}
		if c := s.ws(); c == '{' || c == '[' || c == 'n' {
			return nil, s.fail("%s: parameter %q must be a bool, number or string", what, k)
		}
		if m[k], err = s.value(); err != nil {
			break
		}
		more, err = s.next('}')
	}
	return m, err
}

// inputs reads the "inputs" array.
func (s *jsonScanner) inputs(pending []httpPendingInput, lim Limits) ([]httpPendingInput, error) {
	more, err := s.arrayStart(`"inputs"`)
	for more && err == nil {
		pending = append(pending, httpPendingInput{binarySize: -1})
		if err = s.input(&pending[len(pending)-1], len(pending)-1, lim); err != nil {
			break
		}
		more, err = s.next(']')
	}
	return pending, err
}

// input reads one object of "inputs"; i is its index, for messages.
func (s *jsonScanner) input(p *httpPendingInput, i int, lim Limits) error {
	what := "inputs[" + strconv.Itoa(i) + "]"
	var seen [5]bool
	more, err := s.objectStart(what)
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return err
		}
		f := -1
		switch string(k) {
		case "name":
			f = 0
		case "shape":
			f = 1
		case "datatype":
			f = 2
		case "parameters":
			f = 3
		case "data":
			f = 4
		}
		if f >= 0 {
			if seen[f] {
				return s.fail("%s has %q twice", what, k)
			}
			seen[f] = true
		}
		switch f {
		case 0:
			p.in.Name, err = s.str(what + `.name`)
		case 1:
			p.in.Shape, err = s.shape(what)
			p.hasShape = true
		case 2:
			p.in.Datatype, err = s.str(what + `.datatype`)
		case 3:
			p.in.Parameters, err = s.params(what + `.parameters`)
		case 4:
			p.hasData = true
			if p.hasShape && p.in.Datatype != "" && p.in.Name != "" {
				// The usual order: decode straight into the tensor.
				err = s.tensorData(&p.in, lim)
				p.decoded = err == nil
			} else {
				s.ws()
				start := s.pos
				err = s.skip()
				p.data, p.dataAt = s.buf[start:s.pos], start
			}
		default:
			err = s.skip()
		}
		if err == nil {
			more, err = s.next('}')
		}
	}
	if err != nil {
		return err
	}
	for f, name := range [...]string{"name", "shape", "datatype"} {
		if !seen[f] {
			return errorf(http.StatusBadRequest, "%s has no %q", what, name)
		}
	}
	if p.in.Name == "" {
		return errorf(http.StatusBadRequest, "%s has an empty name", what)
	}
	// Elements bounds the product of the dimensions; a zero among them
	// would let the others be anything, and the strides of such a shape
	// overflow in the code that later walks it.
	for _, d := range p.in.Shape {
		if d > lim.MaxElements {
			return errorf(http.StatusBadRequest, "input %q: shape %v has a dimension over the limit of %d elements", p.in.Name, p.in.Shape, lim.MaxElements)
		}
	}
	if _, err := DTypeOf(p.in.Datatype); err != nil {
		return errorf(http.StatusBadRequest, "input %q: %v", p.in.Name, err)
	}
	for _, k := range [...]string{"shared_memory_region", "shared_memory_byte_size", "shared_memory_offset"} {
		if _, ok := p.in.Parameters[k]; ok {
			return errorf(http.StatusBadRequest, "input %q: parameter %q: the shared-memory extension is not supported by this server", p.in.Name, k)
		}
	}
	if v, ok := p.in.Parameters["binary_data_size"]; ok {
		n, isInt := v.(int64)
		if !isInt || n < 0 {
			return errorf(http.StatusBadRequest, "input %q: parameters.binary_data_size must be a non-negative integer, not %v", p.in.Name, v)
		}
		p.binarySize = n
		if p.hasData {
			return errorf(http.StatusBadRequest, `input %q has both "data" and parameters.binary_data_size; send one`, p.in.Name)
		}
	} else if !p.hasData {
		return errorf(http.StatusBadRequest, `input %q has no "data" (nor parameters.binary_data_size for binary data)`, p.in.Name)
	}
	if !p.hasData {
		p.decoded = true // filled from the binary section
	}
	return nil
}

// shape reads an input's "shape": an array of non-negative integers.
func (s *jsonScanner) shape(what string) ([]int64, error) {
	shape := []int64{}
	more, err := s.arrayStart(what + ".shape")
	for more && err == nil {
		if c := s.ws(); c != '-' && (c < '0' || c > '9') {
			return nil, s.fail("%s.shape must hold integers, found %s", what, s.describe())
		}
		var text []byte
		var float bool
		if text, float, err = s.number(); err != nil {
			return nil, err
		}
		d, perr := strconv.ParseInt(string(text), 10, 64)
		if float || perr != nil {
			return nil, s.fail("%s.shape holds %s, not an integer dimension", what, text)
		}
		if d < 0 {
			return nil, s.fail("%s.shape holds %d; a dimension cannot be negative", what, d)
		}
		if len(shape) >= 64 {
			return nil, s.fail("%s.shape has more than 64 dimensions", what)
		}
		shape = append(shape, d)
		more, err = s.next(']')
	}
	return shape, err
}

// outputs reads the "outputs" array.
func (s *jsonScanner) outputs() ([]RequestedOutput, error) {
	outs := []RequestedOutput{}
	more, err := s.arrayStart(`"outputs"`)
	for more && err == nil {
		what := "outputs[" + strconv.Itoa(len(outs)) + "]"
		var o RequestedOutput
		hasName := false
		var m bool
		m, err = s.objectStart(what)
		for m && err == nil {
			var k []byte
			if k, err = s.key(); err != nil {
				return nil, err
			}
			switch string(k) {
			case "name":
				o.Name, err = s.str(what + ".name")
				hasName = true
			case "parameters":
				o.Parameters, err = s.params(what + ".parameters")
			default:
				err = s.skip()
			}
			if err == nil {
				m, err = s.next('}')
			}
		}
		if err != nil {
			return nil, err
		}
		if !hasName || o.Name == "" {
			return nil, errorf(http.StatusBadRequest, "%s has no name", what)
		}
		if v, ok := o.Parameters["binary_data"]; ok {
			b, isBool := v.(bool)
			if !isBool {
				return nil, errorf(http.StatusBadRequest, "output %q: parameters.binary_data must be true or false, not %v", o.Name, v)
			}
			o.Binary = b
		}
		for _, k := range [...]string{"classification", "shared_memory_region", "shared_memory_byte_size", "shared_memory_offset"} {
			if _, ok := o.Parameters[k]; ok {
				return nil, errorf(http.StatusBadRequest, "output %q: parameter %q: that extension is not supported by this server", o.Name, k)
			}
		}
		outs = append(outs, o)
		more, err = s.next(']')
	}
	return outs, err
}

// httpBinaryInputs gives each input that declares parameters.binary_data_size
// its bytes from the binary section, in order; the sizes must account for
// the section exactly.
func httpBinaryInputs(pending []httpPendingInput, binary []byte, hasHeader bool, lim Limits) error {
	var total int64
	for i := range pending {
		if n := pending[i].binarySize; n >= 0 {
			if !hasHeader {
				return errorf(http.StatusBadRequest, "input %q declares binary_data_size, but the request has no Inference-Header-Content-Length header saying where its binary data starts", pending[i].in.Name)
			}
			if total += n; total > int64(len(binary)) {
				break
			}
		}
	}
	if total != int64(len(binary)) {
		return errorf(http.StatusBadRequest, "the inputs' binary_data_size add up to %d bytes, but the body has %d bytes after its %s", total, len(binary), "JSON header (Inference-Header-Content-Length)")
	}
	off := 0
	for i := range pending {
		p := &pending[i]
		if p.binarySize < 0 {
			continue
		}
		raw := binary[off : off+int(p.binarySize)]
		off += int(p.binarySize)
		t, err := FromRaw("input "+strconv.Quote(p.in.Name), p.in.Datatype, p.in.Shape, raw, lim.MaxElements)
		if err != nil {
			return err
		}
		p.in.Tensor = t
	}
	return nil
}

// tensorData decodes an input's "data" (at the scanner's offset) into a
// new tensor of the input's shape and datatype. The data is flat, or
// nested as deep as the shape with each array as long as its dimension,
// in row-major order.
func (s *jsonScanner) tensorData(in *InferInput, lim Limits) error {
	what := "input " + strconv.Quote(in.Name)
	dt, err := DTypeOf(in.Datatype)
	if err != nil {
		return errorf(http.StatusBadRequest, "%s: %v", what, err)
	}
	n, err := Elements(what, in.Shape, lim.MaxElements)
	if err != nil {
		return err
	}
	if s.ws() != '[' {
		return s.fail(`%s: "data" must be an array, found %s`, what, s.describe())
	}
	// Each element takes at least two bytes of JSON (a digit and a comma),
	// so a shape that needs more than the rest of the body can hold is
	// refused before its buffer is allocated.
	if room := (len(s.buf) - s.pos) / 2; n > room {
		return errorf(http.StatusBadRequest, "%s: shape %v has %d elements, but its data cannot hold more than %d (%d bytes of JSON are left, and each element takes two)", what, in.Shape, n, room, len(s.buf)-s.pos)
	}
	dims := make([]int, len(in.Shape))
	for i, d := range in.Shape {
		dims[i] = int(d)
	}
	t := tensor.New(dt, dims...)
	d := jsonDataDecoder{s: s, what: what, shape: in.Shape, n: n}
	switch buf := t.Data().(type) {
	case []float32:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).float32)
	case []float64:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).float64)
	case []core.F16:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).f16)
	case []core.BF16:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).bf16)
	case []int32:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).int32)
	case []int64:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).int64)
	case []uint8:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).uint8)
	case []bool:
		err = decodeJSONLeaves(&d, buf, (*jsonScanner).bool)
	default:
		err = errorf(http.StatusBadRequest, "%s: datatype %s cannot be sent as JSON here", what, in.Datatype)
	}
	if err != nil {
		return err
	}
	in.Tensor = t
	return nil
}

// jsonDataDecoder walks a "data" array.
type jsonDataDecoder struct {
	s     *jsonScanner
	what  string
	shape []int64
	n     int
	i     int // elements written so far
}

// decodeJSONLeaves decodes the data array into buf (of the shape's element
// count), with leaf parsing one element.
func decodeJSONLeaves[T any](d *jsonDataDecoder, buf []T, leaf func(*jsonScanner, string, int) (T, error)) error {
	s := d.s
	more, err := s.arrayStart(d.what + ` "data"`)
	if err != nil {
		return err
	}
	if more && s.ws() == '[' {
		// Nested: one level per dimension.
		return nestedJSONLeaves(d, buf, leaf, 0, more)
	}
	for more {
		if d.i >= len(buf) {
			return s.fail("%s: data has more than the %d elements shape %v holds", d.what, d.n, d.shape)
		}
		if buf[d.i], err = leaf(s, d.what, d.i); err != nil {
			return err
		}
		d.i++
		if more, err = s.next(']'); err != nil {
			return err
		}
	}
	if d.i != d.n {
		return errorf(http.StatusBadRequest, "%s: data has %d elements, shape %v needs %d", d.what, d.i, d.shape, d.n)
	}
	return nil
}

// nestedJSONLeaves decodes an array at nesting level (its '[' consumed; more
// says it is not empty) that must have shape[level] elements.
func nestedJSONLeaves[T any](d *jsonDataDecoder, buf []T, leaf func(*jsonScanner, string, int) (T, error), level int, more bool) error {
	s := d.s
	if level >= len(d.shape) {
		return s.fail("%s: data is nested deeper than shape %v", d.what, d.shape)
	}
	want := d.shape[level]
	inner := level < len(d.shape)-1
	var count int64
	var err error
	for more {
		if count++; count > want {
			return s.fail("%s: data has more than %d elements at depth %d, as shape %v says", d.what, want, level+1, d.shape)
		}
		if inner {
			if s.ws() != '[' {
				return s.fail("%s: data must be nested %d deep for shape %v, or flat; found %s", d.what, len(d.shape), d.shape, s.describe())
			}
			var m bool
			if m, err = s.arrayStart(d.what + " nested data"); err != nil {
				return err
			}
			if err = nestedJSONLeaves(d, buf, leaf, level+1, m); err != nil {
				return err
			}
		} else {
			if s.ws() == '[' {
				return s.fail("%s: data is nested deeper than shape %v", d.what, d.shape)
			}
			if buf[d.i], err = leaf(s, d.what, d.i); err != nil {
				return err
			}
			d.i++
		}
		if more, err = s.next(']'); err != nil {
			return err
		}
	}
	if count != want {
		return s.fail("%s: data has %d elements at depth %d, shape %v says %d", d.what, count, level+1, d.shape, want)
	}
	return nil
}

// nonFinite parses the strings a float element may be instead of a
// number, since JSON has no NaN or infinities: "NaN", "Infinity" and
// "-Infinity" (what this server writes for them), or "inf" and "-inf".
func (s *jsonScanner) nonFinite(what string, i int, dt string) (float64, error) {
	start := s.pos
	raw, _, err := s.stringSpan()
	if err != nil {
		return 0, err
	}
	switch string(raw) {
	case `"NaN"`, `"nan"`:
		return math.NaN(), nil
	case `"Infinity"`, `"inf"`, `"Inf"`:
		return math.Inf(1), nil
	case `"-Infinity"`, `"-inf"`, `"-Inf"`:
		return math.Inf(-1), nil
	}
	s.pos = start
	return 0, s.fail(`%s: element %d is the string %s; %s takes numbers, or "NaN", "Infinity", "-Infinity"`, what, i, raw, dt)
}

// float parses a float element: a number within the datatype's range
// (bits 32 or 64), or one of nonFinite's strings.
func (s *jsonScanner) float(what string, i int, bits int, dt string) (float64, error) {
	switch c := s.ws(); {
	case c == '"':
		return s.nonFinite(what, i, dt)
	case c != '-' && (c < '0' || c > '9'):
		return 0, s.fail("%s: element %d is %s, not a number (datatype %s)", what, i, s.describe(), dt)
	}
	var n jsonNumber
	if err := s.num(&n); err != nil {
		return 0, err
	}
	if bits == 32 {
		if f, ok := n.float32(); ok {
			return float64(f), nil
		}
	} else if f, ok := n.float64(); ok {
		return f, nil
	}
	f, err := strconv.ParseFloat(string(n.text), bits)
	if err != nil {
		return 0, s.fail("%s: element %d, %s, is out of the range of %s", what, i, n.text, dt)
	}
	return f, nil
}

func (s *jsonScanner) float32(what string, i int) (float32, error) {
	f, err := s.float(what, i, 32, "FP32")
	return float32(f), err
}

func (s *jsonScanner) float64(what string, i int) (float64, error) {
	return s.float(what, i, 64, "FP64")
}

// f16 and bf16 parse a number and round it to the 16-bit type (through
// float32, which for a decimal text can differ from rounding the exact
// value by one unit in the last place in rare ties).
func (s *jsonScanner) f16(what string, i int) (core.F16, error) {
	f, err := s.float(what, i, 32, "FP16")
	h := core.F16From(float32(f))
	if err == nil && math.IsInf(float64(h.Float32()), 0) && !math.IsInf(f, 0) {
		return 0, s.fail("%s: element %d, %v, is out of the range of FP16 (±65504)", what, i, f)
	}
	return h, err
}

func (s *jsonScanner) bf16(what string, i int) (core.BF16, error) {
	f, err := s.float(what, i, 32, "BF16")
	h := core.BF16From(float32(f))
	if err == nil && math.IsInf(float64(h.Float32()), 0) && !math.IsInf(f, 0) {
		return 0, s.fail("%s: element %d, %v, is out of the range of BF16", what, i, f)
	}
	return h, err
}

// integer parses an integer element within [lo, hi]. A number written
// with a fraction or exponent is taken when its value is a whole number
// ("2.0", "1e3").
func (s *jsonScanner) integer(what string, i int, lo, hi int64, dt string) (int64, error) {
	if c := s.ws(); c != '-' && (c < '0' || c > '9') {
		return 0, s.fail("%s: element %d is %s, not an integer (datatype %s)", what, i, s.describe(), dt)
	}
	var n jsonNumber
	if err := s.num(&n); err != nil {
		return 0, err
	}
	text, float := n.text, n.float
	var v int64
	var err error
	switch {
	case !float && n.exact && n.mant <= math.MaxInt64:
		v = int64(n.mant)
		if n.neg {
			v = -v
		}
	case !float:
		v, err = strconv.ParseInt(string(text), 10, 64)
	default:
		var f float64
		f, err = strconv.ParseFloat(string(text), 64)
		if err == nil && (f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63) {
			return 0, s.fail("%s: element %d, %s, is not an integer (datatype %s)", what, i, text, dt)
		}
		v = int64(f)
	}
	if err != nil || v < lo || v > hi {
		return 0, s.fail("%s: element %d, %s, is out of the range of %s", what, i, text, dt)
	}
	return v, nil
}

func (s *jsonScanner) int32(what string, i int) (int32, error) {
	v, err := s.integer(what, i, math.MinInt32, math.MaxInt32, "INT32")
	return int32(v), err
}

func (s *jsonScanner) int64(what string, i int) (int64, error) {
	return s.integer(what, i, math.MinInt64, math.MaxInt64, "INT64")
}

func (s *jsonScanner) uint8(what string, i int) (uint8, error) {
	v, err := s.integer(what, i, 0, math.MaxUint8, "UINT8")
	return uint8(v), err
}

func (s *jsonScanner) bool(what string, i int) (bool, error) {
	if c := s.ws(); c == 't' || c == 'f' {
		v, err := s.literal()
		if b, ok := v.(bool); ok && err == nil {
			return b, nil
		}
	}
	return false, s.fail("%s: element %d is %s, not true or false (datatype BOOL)", what, i, s.describe())
}
