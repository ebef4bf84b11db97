package serve

import (
	"math"
	"math/rand"
	"strconv"
	"testing"
	"time"
)

// TestFastFloatMatchesStrconv checks the decoder's float fast path against
// strconv.ParseFloat, bit for bit, on chosen hard cases (float32
// midpoints, subnormals, long mantissas) and on random literals.
func TestFastFloatMatchesStrconv(t *testing.T) {
	cases := []string{
		"0", "-0", "0.0", "-0.0e5", "1", "-1", "0.1", "0.32941177", "1e22", "1e23", "1e-22", "1e-23",
		"16777217", "16777219", "33554435", "-16777217", "8388608.5", "0.5e-44", "1e-45", "1.4e-45",
		"1.17549435e-38", "1.1754942e-38", "3.4028235e38", "3.4028236e38", "1e39", "9007199254740993",
		"9007199254740992", "123456789012345678901234567890", "0.000000000000000000000000000001",
		"1.000000059604644775390625", "1.0000000596046448", "4.9e-324", "1.7976931348623157e308",
		"2.2250738585072014e-308", "100000000000000000000000", "0.1e1", "10e-1", "1E+2", "7e-10",
	}
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 50000; i++ {
		var b []byte
		if r.Intn(2) == 0 {
			b = append(b, '-')
		}
		b = strconv.AppendUint(b, uint64(r.Int63n(1<<uint(r.Intn(62)+1))), 10)
		if r.Intn(2) == 0 {
			b = append(b, '.')
			b = strconv.AppendUint(b, uint64(r.Int63n(1e9)), 10)
		}
		if r.Intn(2) == 0 {
			b = append(b, 'e')
			b = strconv.AppendInt(b, int64(r.Intn(90)-45), 10)
		}
		cases = append(cases, string(b))
		// A float32 value printed shortest, and a midpoint between two.
		f := math.Float32frombits(r.Uint32())
		if !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
			cases = append(cases, strconv.FormatFloat(float64(f), 'g', -1, 32))
			// As Python writes a float32 it holds as a float64.
			cases = append(cases, strconv.FormatFloat(float64(f), 'g', -1, 64))
			// A random 17-digit number near f.
			cases = append(cases, strconv.FormatFloat(float64(f)*(1+(r.Float64()-0.5)*1e-7), 'g', 17, 64))
			g := math.Nextafter32(f, float32(math.Inf(1)))
			mid := (float64(f) + float64(g)) / 2
			cases = append(cases, strconv.FormatFloat(mid, 'g', -1, 64))
		}
	}
	for _, c := range cases {
		for _, bits := range []int{32, 64} {
			s := &jsonScanner{buf: []byte(c), maxDepth: 8}
			got, err := s.float("x", 0, bits, "F")
			want, werr := strconv.ParseFloat(c, bits)
			if (err != nil) != (werr != nil) {
				t.Fatalf("%s as float%d: error %v, strconv's %v", c, bits, err, werr)
			}
			if err == nil && math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%s as float%d: %v (%x), strconv says %v (%x)", c, bits, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
}

// TestIntegerElements checks integer elements at their types' limits.
func TestIntegerElements(t *testing.T) {
	tests := []struct {
		text   string
		lo, hi int64
		want   int64
		ok     bool
	}{
		{"0", 0, 255, 0, true},
		{"255", 0, 255, 255, true},
		{"256", 0, 255, 0, false},
		{"-0", 0, 255, 0, true},
		{"9223372036854775807", math.MinInt64, math.MaxInt64, math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, math.MaxInt64, math.MinInt64, true},
		{"9223372036854775808", math.MinInt64, math.MaxInt64, 0, false},
		{"99999999999999999999999", math.MinInt64, math.MaxInt64, 0, false},
		{"2.5e1", math.MinInt32, math.MaxInt32, 25, true},
		{"2.55e1", math.MinInt32, math.MaxInt32, 0, false},
		{"1e19", math.MinInt64, math.MaxInt64, 0, false},
		{"-2147483648", math.MinInt32, math.MaxInt32, math.MinInt32, true},
		{"-2147483649", math.MinInt32, math.MaxInt32, 0, false},
	}
	for _, tc := range tests {
		s := &jsonScanner{buf: []byte(tc.text), maxDepth: 8}
		got, err := s.integer("x", 0, tc.lo, tc.hi, "INT")
		if (err == nil) != tc.ok || err == nil && got != tc.want {
			t.Errorf("%s in [%d, %d]: %d, %v; want %d, ok %v", tc.text, tc.lo, tc.hi, got, err, tc.want, tc.ok)
		}
	}
}

// TestDecodeParameters checks the Go types that request and input
// parameters reach the backend with.
func TestDecodeParameters(t *testing.T) {
	body := `{"parameters":{"priority":3,"timeout":2500,"ratio":0.5,"big":1e300,"huge":123456789012345678901,"tag":"a\u00e9","flag":true},` +
		`"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4,"note":"n"}}],` +
		`"outputs":[{"name":"y","parameters":{"binary_data":true}}]}`
	req, opt, err := decodeInferRequest(append([]byte(body), 0, 0, 0x80, 0x3f), len(body), "m", "3", Limits{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"priority": int64(3), "timeout": int64(2500), "ratio": 0.5, "big": 1e300, "huge": 123456789012345678901.0, "tag": "aé", "flag": true}
	if len(req.Parameters) != len(want) {
		t.Errorf("parameters %v, want %v", req.Parameters, want)
	}
	for k, v := range want {
		if got := req.Parameters[k]; got != v {
			t.Errorf("parameter %q is %#v, want %#v", k, got, v)
		}
	}
	if opt.timeout != 2500*time.Microsecond {
		t.Errorf("timeout %v", opt.timeout)
	}
	in := req.Inputs[0]
	if in.Parameters["binary_data_size"] != int64(4) || in.Parameters["note"] != "n" {
		t.Errorf("input parameters %v", in.Parameters)
	}
	if got := in.Tensor.Float32s(); len(got) != 1 || got[0] != 1 {
		t.Errorf("input data %v, want [1]", got)
	}
	if req.Model != "m" || req.Version != "3" || len(req.Outputs) != 1 || !req.Outputs[0].Binary || req.Outputs[0].Name != "y" {
		t.Errorf("request %+v", req)
	}
}

func TestRepeated(t *testing.T) {
	many := func(n, dup int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = "t" + strconv.Itoa(i)
		}
		if dup >= 0 {
			s[n-1] = s[dup]
		}
		return s
	}
	tests := []struct {
		names []string
		want  string
		ok    bool
	}{
		{nil, "", false},
		{[]string{"a"}, "", false},
		{[]string{"a", "b", "a"}, "a", true},
		{many(16, -1), "", false},
		{many(16, 3), "t3", true},
		{many(1000, -1), "", false},
		{many(1000, 0), "t0", true},
	}
	for _, tc := range tests {
		got, ok := repeatedName(len(tc.names), func(i int) string { return tc.names[i] })
		if got != tc.want || ok != tc.ok {
			t.Errorf("repeatedName(%d names) = %q, %v; want %q, %v", len(tc.names), got, ok, tc.want, tc.ok)
		}
	}
}
