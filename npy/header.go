package npy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// header is what an .npy header declares: the element type (as NumPy's
// descr string), whether the data is in Fortran order, and the shape.
type header struct {
	descr   string
	fortran bool
	shape   []int
}

// maxRank is NumPy's own limit on the number of axes (NPY_MAXDIMS in
// NumPy 2); a header declaring more is refused before anything is built.
const maxRank = 64

// parseHeader parses the Python dict literal of an .npy header, such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//
// NumPy evaluates it with ast.literal_eval; this accepts the subset that
// NumPy writes (and Python 2's long suffix 'L' on integers), with exactly
// the three keys, each once. Anything else is an error that says what was
// found where.
func parseHeader(s string) (header, error) {
	p := &litParser{s: s}
	var h header
	seen := map[string]bool{}
	p.space()
	if !p.eat('{') {
		return h, p.errorf("want '{' to open the header dict")
	}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		if seen[key] {
			return h, p.errorf("key %q appears twice", key)
		}
		seen[key] = true
		p.space()
		if !p.eat(':') {
			return h, p.errorf("want ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if p.peek() == '[' {
				return h, fmt.Errorf("structured dtypes (a list descr) are not supported; save plain arrays")
			}
			if h.descr, err = p.str(); err != nil {
				return h, err
			}
		case "fortran_order":
			if h.fortran, err = p.boolean(); err != nil {
				return h, err
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return h, err
			}
		default:
			return h, p.errorf("unexpected key %q (want descr, fortran_order and shape)", key)
		}
		p.space()
		if p.eat(',') {
			continue
		}
		p.space()
		if !p.eat('}') {
			return h, p.errorf("want ',' or '}' after the value of %q", key)
		}
		break
	}
	if rest := strings.TrimRight(s[p.i:], " \t\r\n\x00"); rest != "" {
		return h, p.errorf("unexpected text after the header dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("header has no %q key", k)
		}
	}
	return h, nil
}

// litParser walks a Python literal.
type litParser struct {
	s string
	i int
}

func (p *litParser) errorf(format string, args ...any) error {
	near := p.s[p.i:]
	if len(near) > 20 {
		near = near[:20] + "..."
	}
	return fmt.Errorf("header at byte %d (%q): %s", p.i, near, fmt.Sprintf(format, args...))
}

func (p *litParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *litParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *litParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes (NumPy's keys and type codes
// never need them).
func (p *litParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("want a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.errorf("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", p.errorf("escapes in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

func (p *litParser) boolean() (bool, error) {
	switch {
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	}
	return false, p.errorf("want True or False")
}

// tuple reads a tuple of non-negative integers: (), (3,), (2, 3).
func (p *litParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, p.errorf("want '(' to open the shape tuple")
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			break
		}
		if len(shape) == maxRank {
			return nil, p.errorf("shape has more than %d axes", maxRank)
		}
		n, err := p.integer()
		if err != nil {
			return nil, err
		}
		shape = append(shape, n)
		p.space()
		if p.eat(',') {
			continue
		}
		if !p.eat(')') {
			return nil, p.errorf("want ',' or ')' in the shape tuple")
		}
		if len(shape) == 1 {
			// (3) is just 3 in Python, not a tuple; NumPy writes (3,).
			return nil, fmt.Errorf("shape (%d) is not a tuple; a one-axis shape is written (%d,)", n, n)
		}
		break
	}
	return shape, nil
}

// integer reads a non-negative decimal integer that fits an int.
func (p *litParser) integer() (int, error) {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == start {
		if p.peek() == '-' {
			return 0, p.errorf("negative extent in shape")
		}
		return 0, p.errorf("want an integer")
	}
	digits := p.s[start:p.i]
	if p.peek() == 'L' { // Python 2's long suffix.
		p.i++
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt {
		p.i = start
		return 0, p.errorf("extent %s is too large", digits)
	}
	return int(n), nil
}

// formatHeader writes the header dict as NumPy 1.24+ does (keys sorted,
// a trailing ", " before '}', spare spaces after it so that the first
// axis can grow in place), so that a file written here is byte for byte
// the file NumPy writes for the same array.
func formatHeader(descr string, shape []int) string {
	var b strings.Builder
	b.WriteString("{'descr': '")
	b.WriteString(descr)
	b.WriteString("', 'fortran_order': False, 'shape': (")
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteString("), }")
	if len(shape) > 0 {
		// NumPy's GROWTH_AXIS_MAX_DIGITS (21) less the digits of the
		// first extent.
		if pad := 21 - len(strconv.Itoa(shape[0])); pad > 0 {
			b.WriteString(strings.Repeat(" ", pad))
		}
	}
	return b.String()
}
