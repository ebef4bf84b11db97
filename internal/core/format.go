package core

import (
	"math"
	"strconv"
	"strings"
)

// Printing follows NumPy's str(ndarray) (numpy.array2string) with NumPy's
// default print options, which is what MindSpore's print(tensor) shows:
// precision 8, threshold 1000, edgeitems 3, linewidth 75, suppress False,
// floatmode 'maxprec', sign '-'. The code mirrors numpy/core/arrayprint.py
// (_formatArray, _extendLine, FloatingFormat, IntegerFormat, BoolFormat).
const (
	printPrecision = 8    // digits after the decimal point, at most
	printThreshold = 1000 // summarise arrays with more elements than this
	printEdgeItems = 3    // items kept at each end of a summarised axis
	printLineWidth = 75   // characters per line
)

// String formats t's values as NumPy's str(array) does: nested brackets,
// aligned columns, rows wrapped at 75 characters, and "..." in place of the
// middle of any axis longer than 6 when t has more than 1000 elements.
// Floats show up to 8 digits after the point in the shortest form that
// identifies the value (float32 values as float32), switching to scientific
// notation by NumPy's rules. A rank-0 tensor prints its bare value and an
// empty tensor prints []. A symbolic tensor prints its shape and dtype only.
func (t *Tensor) String() string {
	if t.sym != nil {
		return t.symbolicString()
	}
	if len(t.shape) == 0 {
		return t.scalarString()
	}
	if t.shape.Size() == 0 {
		return "[]"
	}
	summarise := t.shape.Size() > printThreshold
	idx := t.shownIndices(summarise)
	format := t.elemFormatter(idx)
	p := printer{t: t, strides: t.shape.Strides(), format: format, summarise: summarise}
	return p.recurse(0, 0, " ", printLineWidth)
}

// Verbose formats t as MindSpore's repr does:
// Tensor(shape=[2, 3], dtype=Float32, value=\n[[...]]) for an array, and
// Tensor(shape=[], dtype=Float32, value= 3.5) for a scalar.
func (t *Tensor) Verbose() string {
	if t.sym != nil {
		return t.symbolicString()
	}
	head := "Tensor(shape=" + commaShape(t.shape) + ", dtype=" + t.dtype.String() + ", value="
	if len(t.shape) == 0 {
		return head + " " + t.String() + ")"
	}
	return head + "\n" + t.String() + ")"
}

func (t *Tensor) symbolicString() string {
	return "Tensor(shape=" + commaShape(t.shape) + ", dtype=" + t.dtype.String() + ", symbolic)"
}

// commaShape formats s as [64, 10], MindSpore's spelling in a repr.
func commaShape(s Shape) string { return s.join(", ") }

// scalarString formats a rank-0 tensor as NumPy's str of the scalar value:
// floats in shortest round-trip form, positional when 1e-4 <= |v| < 1e16
// (keeping one digit after the point, "3.0"), scientific otherwise ("1e-05").
func (t *Tensor) scalarString() string {
	switch b := t.buf.(type) {
	case []float32:
		return scalarFloat(float64(b[0]), 32)
	case []float64:
		return scalarFloat(b[0], 64)
	case []BF16:
		return scalarHalf(float64(b[0].Float32()), roundBF16)
	case []F16:
		return scalarHalf(float64(b[0].Float32()), roundF16)
	case []int32:
		return strconv.FormatInt(int64(b[0]), 10)
	case []int64:
		return strconv.FormatInt(b[0], 10)
	case []uint8:
		return strconv.FormatUint(uint64(b[0]), 10)
	case []int8:
		return strconv.FormatInt(int64(b[0]), 10)
	case []int16:
		return strconv.FormatInt(int64(b[0]), 10)
	case []uint16:
		return strconv.FormatUint(uint64(b[0]), 10)
	case []uint32:
		return strconv.FormatUint(uint64(b[0]), 10)
	case []uint64:
		return strconv.FormatUint(b[0], 10)
	case []bool:
		if b[0] {
			return "True"
		}
		return "False"
	}
	return "?"
}

func scalarFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	a := math.Abs(v)
	if a == 0 || (a >= 1e-4 && a < 1e16) {
		s := strconv.FormatFloat(v, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(v, 'e', -1, bits)
}

// scalarHalf is scalarFloat for a value of a 16-bit type that round
// rounds to: the same notation, with the shortest digits of that type.
func scalarHalf(v float64, round func(float64) float64) string {
	a := math.Abs(v)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return scalarFloat(v, 64)
	}
	if a == 0 || (a >= 1e-4 && a < 1e16) {
		s := shortHalf(v, 'f', round)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return shortHalf(v, 'e', round)
}

// halfFormatter formats the elements of a 16-bit float buffer, whose
// value of element i is at(i), as floats of that type.
func halfFormatter(idx []int, at func(i int) float64, round func(float64) float64) func(i int) string {
	vals := make([]float64, len(idx))
	for k, i := range idx {
		vals[k] = at(i)
	}
	f := &floatFormat{bits: 64, round: round}
	f.init(vals)
	return func(i int) string { return f.format(at(i)) }
}

// shownIndices returns the flat indices of the elements that will be
// printed, in row-major order: all of them, or NumPy's _leading_trailing
// corners when summarising.
func (t *Tensor) shownIndices(summarise bool) []int {
	strides := t.shape.Strides()
	var out []int
	var walk func(axis, off int)
	walk = func(axis, off int) {
		if axis == len(t.shape) {
			out = append(out, off)
			return
		}
		n := t.shape[axis]
		for i := 0; i < n; i++ {
			if summarise && n > 2*printEdgeItems && i == printEdgeItems {
				i = n - printEdgeItems
			}
			walk(axis+1, off+i*strides[axis])
		}
	}
	walk(0, 0)
	return out
}

// elemFormatter builds the per-element formatter from the printed elements,
// as NumPy's _get_format_function does; every string it returns has the
// same width.
func (t *Tensor) elemFormatter(idx []int) func(i int) string {
	switch b := t.buf.(type) {
	case []float32:
		vals := make([]float64, len(idx))
		for k, i := range idx {
			vals[k] = float64(b[i])
		}
		f := newFloatFormat(vals, 32)
		return func(i int) string { return f.format(float64(b[i])) }
	case []float64:
		vals := make([]float64, len(idx))
		for k, i := range idx {
			vals[k] = b[i]
		}
		f := newFloatFormat(vals, 64)
		return func(i int) string { return f.format(b[i]) }
	case []BF16:
		return halfFormatter(idx, func(i int) float64 { return float64(b[i].Float32()) }, roundBF16)
	case []F16:
		return halfFormatter(idx, func(i int) float64 { return float64(b[i].Float32()) }, roundF16)
	case []int32:
		return intFormatter(idx, func(i int) string { return strconv.FormatInt(int64(b[i]), 10) })
	case []int64:
		return intFormatter(idx, func(i int) string { return strconv.FormatInt(b[i], 10) })
	case []uint8:
		return intFormatter(idx, func(i int) string { return strconv.FormatUint(uint64(b[i]), 10) })
	case []int8:
		return intFormatter(idx, func(i int) string { return strconv.FormatInt(int64(b[i]), 10) })
	case []int16:
		return intFormatter(idx, func(i int) string { return strconv.FormatInt(int64(b[i]), 10) })
	case []uint16:
		return intFormatter(idx, func(i int) string { return strconv.FormatUint(uint64(b[i]), 10) })
	case []uint32:
		return intFormatter(idx, func(i int) string { return strconv.FormatUint(uint64(b[i]), 10) })
	case []uint64:
		return intFormatter(idx, func(i int) string { return strconv.FormatUint(b[i], 10) })
	case []bool:
		// NumPy pads True to the width of False in arrays.
		return func(i int) string {
			if b[i] {
				return " True"
			}
			return "False"
		}
	}
	return func(int) string { return "?" }
}

// intFormatter right-aligns integers to the widest printed one
// (NumPy's IntegerFormat).
func intFormatter(idx []int, str func(i int) string) func(i int) string {
	w := 0
	for _, i := range idx {
		w = max(w, len(str(i)))
	}
	return func(i int) string { return padLeft(str(i), w) }
}

func padLeft(s string, w int) string {
	if len(s) >= w {
		return s
	}
	return strings.Repeat(" ", w-len(s)) + s
}

// floatFormat is NumPy's FloatingFormat for floatmode 'maxprec', sign '-',
// suppress False.
type floatFormat struct {
	bits int // 32 or 64: which shortest representation to use
	// round, set for a 16-bit type, rounds a value to that type: the
	// shortest representations are then that type's (bits is 64).
	round     func(float64) float64
	exp       bool // scientific notation
	padLeft   int  // characters before the decimal point
	padRight  int  // characters after it (positional), or after it including the exponent (scientific)
	precision int  // scientific: digits after the point, for every element
	expSize   int  // scientific: digits in the exponent, for every element
}

// newFloatFormat chooses notation and padding from the printed values, as
// FloatingFormat.fillFormat does.
func newFloatFormat(vals []float64, bits int) *floatFormat {
	f := &floatFormat{bits: bits}
	f.init(vals)
	return f
}

// init chooses notation and padding for the printed values vals.
func (f *floatFormat) init(vals []float64) {
	*f = floatFormat{bits: f.bits, round: f.round}
	var finite []float64
	minV, maxV := math.Inf(1), 0.0
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		finite = append(finite, v)
		if a := math.Abs(v); a != 0 {
			minV = min(minV, a)
			maxV = max(maxV, a)
		}
	}
	if maxV != 0 {
		// NumPy divides in the array's type, so a float32 ratio is rounded
		// (and may overflow) as float32.
		ratio := maxV / minV
		switch {
		case f.round != nil:
			ratio = f.round(float64(float32(maxV) / float32(minV)))
		case f.bits == 32:
			ratio = float64(float32(maxV) / float32(minV))
		}
		f.exp = maxV >= 1e8 || minV < 1e-4 || ratio > 1000
	}

	switch {
	case len(finite) == 0:
		f.padLeft, f.padRight = 0, 0
	case f.exp:
		for _, v := range finite {
			s := f.sciTrimmed(v)
			mant, e, _ := strings.Cut(s, "e")
			ip, fp, _ := strings.Cut(mant, ".")
			f.expSize = max(f.expSize, len(e)-1)
			f.precision = max(f.precision, len(fp))
			f.padLeft = max(f.padLeft, len(ip))
		}
		f.padRight = f.expSize + 2 + f.precision
	default:
		for _, v := range finite {
			ip, fp, _ := strings.Cut(f.positional(v), ".")
			f.padLeft = max(f.padLeft, len(ip))
			f.padRight = max(f.padRight, len(fp))
		}
	}

	if len(finite) != len(vals) {
		neginf := 0
		for _, v := range vals {
			if math.IsInf(v, -1) {
				neginf = 1
			}
		}
		offset := f.padRight + 1
		f.padLeft = max(f.padLeft, len("nan")-offset, len("inf")+neginf-offset)
	}
}

// shortest is strconv's shortest form of v in notation fmtc ('e' or 'f')
// for f's type.
func (f *floatFormat) shortest(v float64, fmtc byte) string {
	if f.round != nil {
		return shortHalf(v, fmtc, f.round)
	}
	return strconv.FormatFloat(v, fmtc, -1, f.bits)
}

// positional is Dragon4 positional in unique mode with at most
// printPrecision fractional digits, trimming trailing zeros but keeping the
// point: "1.", "0.5", "-0.12345679". With a precision given, Dragon4 never
// stops before the units digit, so a value whose shortest form ends in
// zeros before the point prints all its integer digits exactly: float32
// 93780832 prints as "93780832.", not "93780830.".
func (f *floatFormat) positional(v float64) string {
	s := f.shortest(v, 'f')
	_, fp, ok := strings.Cut(s, ".")
	switch {
	case !ok:
		// Shortest form is integral, so the value is an integer (all
		// smaller integers are representable): print it exactly.
		return strconv.FormatFloat(v, 'f', 0, f.bits) + "."
	case len(fp) > printPrecision:
		s = strings.TrimRight(strconv.FormatFloat(v, 'f', printPrecision, f.bits), "0")
	}
	return s
}

// sciTrimmed is Dragon4 scientific in unique mode with at most
// printPrecision digits after the point, trimming trailing zeros but keeping
// the point: "1.e-05", "1.2345679e+08".
func (f *floatFormat) sciTrimmed(v float64) string {
	s := f.shortest(v, 'e')
	mant, e, _ := strings.Cut(s, "e")
	if _, fp, ok := strings.Cut(mant, "."); ok && len(fp) > printPrecision {
		s = strconv.FormatFloat(v, 'e', printPrecision, f.bits)
		mant, e, _ = strings.Cut(s, "e")
		mant = strings.TrimRight(mant, "0")
	}
	if !strings.Contains(mant, ".") {
		mant += "."
	}
	return mant + "e" + e
}

// format renders one value padded to the common width.
func (f *floatFormat) format(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		s := "nan"
		if math.IsInf(v, 1) {
			s = "inf"
		} else if math.IsInf(v, -1) {
			s = "-inf"
		}
		return padLeft(s, f.padLeft+f.padRight+1)
	}
	if f.exp {
		// Unique digits, but exactly f.precision of them after the point:
		// extra digits are the exact value's, as Dragon4 with min_digits
		// prints them.
		s := f.shortest(v, 'e')
		if mant, _, _ := strings.Cut(s, "e"); len(fracPart(mant)) != f.precision {
			s = strconv.FormatFloat(v, 'e', f.precision, f.bits)
		}
		mant, e, _ := strings.Cut(s, "e")
		if !strings.Contains(mant, ".") {
			mant += "."
		}
		sign, digits := e[:1], e[1:]
		if len(digits) < f.expSize {
			digits = strings.Repeat("0", f.expSize-len(digits)) + digits
		}
		ip, fp, _ := strings.Cut(mant, ".")
		return padLeft(ip, f.padLeft) + "." + fp + "e" + sign + digits
	}
	ip, fp, _ := strings.Cut(f.positional(v), ".")
	return padLeft(ip, f.padLeft) + "." + fp + strings.Repeat(" ", f.padRight-len(fp))
}

func fracPart(mant string) string {
	_, fp, _ := strings.Cut(mant, ".")
	return fp
}

// printer lays out the formatted elements as NumPy's _formatArray does.
type printer struct {
	t         *Tensor
	strides   []int
	format    func(i int) string
	summarise bool
}

// recurse formats the sub-array at flat offset off starting at axis, with
// the given hanging indent and remaining line width.
func (p *printer) recurse(axis, off int, hanging string, width int) string {
	if axis == len(p.t.shape) {
		return p.format(off)
	}
	nextHanging := hanging + " "
	nextWidth := width - 1
	n := p.t.shape[axis]
	showSummary := p.summarise && 2*printEdgeItems < n
	leading, trailing := 0, n
	if showSummary {
		leading, trailing = printEdgeItems, printEdgeItems
	}
	child := func(i int) string {
		return p.recurse(axis+1, off+i*p.strides[axis], nextHanging, nextWidth)
	}

	var s strings.Builder
	if axis == len(p.t.shape)-1 {
		elemWidth := width - 1 // room for the closing bracket
		line := hanging
		for i := 0; i < leading; i++ {
			line = extendLine(&s, line, child(i), elemWidth, hanging) + " "
		}
		if showSummary {
			line = extendLine(&s, line, "...", elemWidth, hanging) + " "
		}
		for i := trailing; i > 1; i-- {
			line = extendLine(&s, line, child(n-i), elemWidth, hanging) + " "
		}
		line = extendLine(&s, line, child(n-1), elemWidth, hanging)
		s.WriteString(line)
	} else {
		sep := strings.Repeat("\n", len(p.t.shape)-axis-1)
		for i := 0; i < leading; i++ {
			s.WriteString(hanging + child(i) + sep)
		}
		if showSummary {
			s.WriteString(hanging + "..." + sep)
		}
		for i := trailing; i > 1; i-- {
			s.WriteString(hanging + child(n-i) + sep)
		}
		s.WriteString(hanging + child(n-1))
	}
	return "[" + s.String()[len(hanging):] + "]"
}

// extendLine appends word to line, first flushing line to s when word would
// run past width (unless the line holds only the indent). It returns the
// new current line.
func extendLine(s *strings.Builder, line, word string, width int, indent string) string {
	if len(line)+len(word) > width && len(line) > len(indent) {
		s.WriteString(strings.TrimRight(line, " ") + "\n")
		line = indent
	}
	return line + word
}
