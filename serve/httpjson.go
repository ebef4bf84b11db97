package serve

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// This file is a small JSON scanner over a byte slice, written for the
// HTTP front end's request decoder. The protocol puts up to millions of
// numbers in one body; encoding/json would decode each through reflection
// into an []any before they could be converted to the tensor's type, and it
// has no depth limit below 10,000. The scanner validates the JSON grammar
// as it goes, bounds nesting (so a body of a million '[' costs one failed
// step, not a million frames), and lets the decoder parse numbers straight
// into a tensor's buffer.

// jsonScanner reads one JSON value from buf. Every error it returns is a
// 400 *Error naming the byte offset.
type jsonScanner struct {
	buf      []byte
	pos      int
	depth    int
	maxDepth int
	// base is buf's offset in the body, for messages: a tensor's data
	// read after its object is scanned from a slice of the body.
	base int
}

// fail returns a 400 *Error for a syntax error at the current offset.
func (s *jsonScanner) fail(format string, args ...any) *Error {
	e := errorf(http.StatusBadRequest, format, args...)
	e.Msg = "request JSON at byte " + strconv.Itoa(s.base+s.pos) + ": " + e.Msg
	return e
}

// ws skips white space and returns the next byte, or 0 at the end.
func (s *jsonScanner) ws() byte {
	for s.pos < len(s.buf) {
		switch c := s.buf[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// describe names the byte at the current offset for an error message.
func (s *jsonScanner) describe() string {
	if s.pos >= len(s.buf) {
		return "the end of the JSON"
	}
	c := s.buf[s.pos]
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

// expect consumes c after white space, or fails saying what was found.
func (s *jsonScanner) expect(c byte, what string) error {
	if s.ws() != c {
		return s.fail("expected %s, found %s", what, s.describe())
	}
	s.pos++
	return nil
}

// enter consumes an opening bracket, counting the nesting depth.
func (s *jsonScanner) enter() error {
	if s.depth >= s.maxDepth {
		return s.fail("JSON nested deeper than %d levels", s.maxDepth)
	}
	s.depth++
	s.pos++
	return nil
}

// next is called after a value inside an object or array: it consumes a
// ',' and returns true, or consumes the closing bracket and returns false.
func (s *jsonScanner) next(closer byte) (bool, error) {
	switch s.ws() {
	case ',':
		s.pos++
		return true, nil
	case closer:
		s.pos++
		s.depth--
		return false, nil
	}
	return false, s.fail("expected ',' or %q, found %s", closer, s.describe())
}

// objectStart consumes '{' and reports whether the object has a first
// member (false for "{}", which it consumes whole).
func (s *jsonScanner) objectStart(what string) (bool, error) {
	return s.open(what, '{', '}', "an object")
}

// arrayStart consumes '[' and reports whether the array has a first
// element (false for "[]", which it consumes whole).
func (s *jsonScanner) arrayStart(what string) (bool, error) {
	return s.open(what, '[', ']', "an array")
}

// open consumes the opener of a container, kind, and reports whether it
// holds anything (an empty one is consumed whole).
func (s *jsonScanner) open(what string, opener, closer byte, kind string) (bool, error) {
	if s.ws() != opener {
		return false, s.fail("%s must be %s, found %s", what, kind, s.describe())
	}
	if err := s.enter(); err != nil {
		return false, err
	}
	if s.ws() == closer {
		s.pos++
		s.depth--
		return false, nil
	}
	return true, nil
}

// key reads an object member's name and the ':' after it. The returned
// bytes alias buf unless the name has escapes; they are only compared.
func (s *jsonScanner) key() ([]byte, error) {
	if s.ws() != '"' {
		return nil, s.fail("expected a member name in quotes, found %s", s.describe())
	}
	raw, escaped, err := s.stringSpan()
	if err != nil {
		return nil, err
	}
	k := raw[1 : len(raw)-1]
	if escaped {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, s.fail("bad member name: %v", err)
		}
		k = []byte(str)
	}
	if err := s.expect(':', "':' after a member name"); err != nil {
		return nil, err
	}
	return k, nil
}

// stringSpan consumes a string literal (s.buf[s.pos] is '"') and returns
// it with its quotes, and whether it needs unescaping (an escape, or bytes
// that are not valid UTF-8).
func (s *jsonScanner) stringSpan() (raw []byte, escaped bool, err error) {
	start := s.pos
	i := s.pos + 1
	ascii := true
	for i < len(s.buf) {
		c := s.buf[i]
		switch {
		case c == '"':
			s.pos = i + 1
			raw = s.buf[start:s.pos]
			if !escaped && !ascii && !utf8.Valid(raw) {
				escaped = true
			}
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			i++
			if i >= len(s.buf) {
				s.pos = i
				return nil, false, s.fail("unterminated string")
			}
			switch s.buf[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for j := 1; j <= 4; j++ {
					if i+j >= len(s.buf) || !isHex(s.buf[i+j]) {
						s.pos = i
						return nil, false, s.fail(`bad \u escape in a string`)
					}
				}
				i += 5
			default:
				s.pos = i
				return nil, false, s.fail("bad escape in a string")
			}
		case c < 0x20:
			s.pos = i
			return nil, false, s.fail("control character in a string")
		default:
			if c >= 0x80 {
				ascii = false
			}
			i++
		}
	}
	s.pos = i
	return nil, false, s.fail("unterminated string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// str reads a string value; what names it in an error.
func (s *jsonScanner) str(what string) (string, error) {
	if s.ws() != '"' {
		return "", s.fail("%s must be a string, found %s", what, s.describe())
	}
	raw, escaped, err := s.stringSpan()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	// Escapes and invalid UTF-8 are rare in this protocol: let
	// encoding/json decode them (it turns invalid UTF-8 into U+FFFD).
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", s.fail("bad string: %v", err)
	}
	return v, nil
}

// number consumes a JSON number and returns its text and whether it has
// a fraction or an exponent (see num).
func (s *jsonScanner) number() (text []byte, float bool, err error) {
	var n jsonNumber
	err = s.num(&n)
	return n.text, n.float, err
}

// jsonNumber is a number literal, read once: its text, and its value as
// mant × 10^exp, which the decoder turns into a float without reading the
// digits again.
type jsonNumber struct {
	text []byte
	// float says the literal has a fraction or an exponent.
	float bool
	neg   bool
	mant  uint64
	exp   int
	// exact says mant × 10^exp is the literal's value: it has at most 19
	// significant digits.
	exact bool
}

// num consumes a JSON number into *n. It validates the grammar itself, because
// strconv takes forms JSON does not ("0x1p3", "1_0", "+1", "Inf").
func (s *jsonScanner) num(n *jsonNumber) error {
	b := s.buf
	i := s.pos
	*n = jsonNumber{exact: true}
	nd := 0 // significant digits in mant
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && nd < 19 {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			n.mant = n.mant*10 + uint64(c)
			nd++
			i++
		}
		// Digits past the 19th shift the value and, unless zero, make
		// mant an approximation.
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			n.exp++
			n.exact = n.exact && b[i] == '0'
		}
	default:
		s.pos = i
		return s.fail("expected a number, found %s", s.describe())
	}
	if i < len(b) && b[i] == '.' {
		n.float = true
		i++
		d := i
		if n.mant == 0 {
			for i < len(b) && b[i] == '0' {
				i++
			}
		}
		for i < len(b) && nd < 19 {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			n.mant = n.mant*10 + uint64(c)
			nd++
			i++
		}
		// Every fraction digit so far, leading zeros included, moved the
		// point; the ones past the 19th significant digit do not enter
		// mant.
		n.exp -= i - d
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			n.exact = n.exact && b[i] == '0'
		}
		if i == d {
			s.pos = i
			return s.fail("expected a digit after '.', found %s", s.describe())
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		n.float = true
		i++
		neg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			neg = b[i] == '-'
			i++
		}
		d := i
		e := 0
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			if e < 100000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if i == d {
			s.pos = i
			return s.fail("expected a digit in an exponent, found %s", s.describe())
		}
		if neg {
			e = -e
		}
		n.exp += e
	}
	n.text = b[s.pos:i]
	s.pos = i
	return nil
}

// exactPow10 holds the powers of ten that float64 represents exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float64 returns the number's value rounded to float64, and false when
// it cannot be computed exactly by the fast path (Clinger's: an exact
// mantissa times or divided by an exact power of ten is one correctly
// rounded operation), for strconv to do instead.
func (n *jsonNumber) float64() (float64, bool) {
	if !n.exact || n.mant >= 1<<53 {
		return 0, false
	}
	f := float64(n.mant)
	switch {
	case n.mant == 0:
	case n.exp == 0:
	case 0 < n.exp && n.exp <= 22:
		f *= exactPow10[n.exp]
	case -22 <= n.exp && n.exp < 0:
		f /= exactPow10[-n.exp]
	default:
		return 0, false
	}
	if n.neg {
		f = -f
	}
	return f, true
}

// float32 returns the number's value rounded to float32, and false when
// the fast paths cannot. Rounding the correctly rounded float64 again is
// exact unless the float64 lies on a midpoint between two float32s (then
// the first rounding may have decided the second), or outside float32's
// normal range; those go to strconv.
//
// Clients such as Python's json write float32 values as their float64
// digits (0.32941176470588235), too many for an exact mantissa. For them
// the value is approximated in float64 within a few units in its last
// place (the mantissa's rounding, the division's, and the digits past the
// 19th), and the float32 rounding of the approximation is the true one
// unless the approximation lies within that error of a float32 midpoint,
// which the low bits tell.
func (n *jsonNumber) float32() (float32, bool) {
	f, ok := n.float64()
	if ok {
		if math.Float64bits(f)&(1<<29-1) == 1<<28 {
			return 0, false
		}
	} else {
		if n.mant < 1<<53 || n.exp < -22 || n.exp > 22 {
			return 0, false
		}
		f = float64(n.mant)
		if n.exp >= 0 {
			f *= exactPow10[n.exp]
		} else {
			f /= exactPow10[-n.exp]
		}
		if low := math.Float64bits(f) & (1<<29 - 1); low > 1<<28-16 && low < 1<<28+16 {
			return 0, false
		}
		if n.neg {
			f = -f
		}
	}
	if a := math.Abs(f); a != 0 && (a < 0x1p-126 || a > math.MaxFloat32) {
		return 0, false
	}
	return float32(f), true
}

// literal consumes one of true, false and null, whose first byte is at
// the current offset.
func (s *jsonScanner) literal() (any, error) {
	for _, l := range [...]struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(s.buf)-s.pos >= len(l.text) && string(s.buf[s.pos:s.pos+len(l.text)]) == l.text {
			s.pos += len(l.text)
			return l.v, nil
		}
	}
	return nil, s.fail("unexpected %s", s.describe())
}

// value reads any JSON value into the types encoding/json uses for an
// interface, except that an integer literal that fits an int64 becomes an
// int64 (as gRPC's int64_param does), so that a "timeout" or "priority"
// keeps its exact value; other numbers are float64.
func (s *jsonScanner) value() (any, error) {
	switch c := s.ws(); {
	case c == '{':
		m := map[string]any{}
		more, err := s.objectStart("a value")
		for more && err == nil {
			var k string
			if k, err = s.str("a member name"); err != nil {
				break
			}
			if err = s.expect(':', "':' after a member name"); err != nil {
				break
			}
			if m[k], err = s.value(); err != nil {
				break
			}
			more, err = s.next('}')
		}
		return m, err
	case c == '[':
		a := []any{}
		more, err := s.arrayStart("a value")
		for more && err == nil {
			var v any
			if v, err = s.value(); err != nil {
				break
			}
			a = append(a, v)
			more, err = s.next(']')
		}
		return a, err
	case c == '"':
		return s.str("a value")
	case c == '-' || '0' <= c && c <= '9':
		text, float, err := s.number()
		if err != nil {
			return nil, err
		}
		if !float {
			if i, err := strconv.ParseInt(string(text), 10, 64); err == nil {
				return i, nil
			}
		}
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return nil, s.fail("number %s is out of range", text)
		}
		return f, nil
	default:
		return s.literal()
	}
}

// skip consumes one JSON value of any kind, validating it, without
// building it: the decoder skips members it does not know.
func (s *jsonScanner) skip() error {
	switch c := s.ws(); {
	case c == '{':
		more, err := s.objectStart("a value")
		for more && err == nil {
			if _, err = s.key(); err != nil {
				break
			}
			if err = s.skip(); err != nil {
				break
			}
			more, err = s.next('}')
		}
		return err
	case c == '[':
		more, err := s.arrayStart("a value")
		for more && err == nil {
			if err = s.skip(); err != nil {
				break
			}
			more, err = s.next(']')
		}
		return err
	case c == '"':
		_, _, err := s.stringSpan()
		return err
	case c == '-' || '0' <= c && c <= '9':
		_, _, err := s.number()
		return err
	default:
		_, err := s.literal()
		return err
	}
}

// end checks that nothing but white space follows the value.
func (s *jsonScanner) end() error {
	if s.ws() != 0 {
		return s.fail("unexpected %s after the end of the JSON value", s.describe())
	}
	return nil
}
