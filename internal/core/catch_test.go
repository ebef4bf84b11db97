package core

import (
	"errors"
	"strings"
	"testing"
)

// Catch returns an error panic as it is (so a caller can errors.As it to
// *Error), other panics as text after the prefix, and leaves err alone
// when nothing panics.
func TestCatch(t *testing.T) {
	sentinel := errors.New("sentinel")
	cases := []struct {
		name  string
		panic any
		want  string
		is    error
	}{
		{"no panic", nil, "", nil},
		{"an error", sentinel, "sentinel", sentinel},
		{"an *Error", Errorf("Op", "bad %d", 3), "Op: bad 3", nil},
		{"a string", "boom", "pre: boom", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := func() (err error) {
				defer Catch(&err, "pre: ")
				if c.panic != nil {
					panic(c.panic)
				}
				return nil
			}()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("err %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("err %v, want one containing %q", err, c.want)
			case c.is != nil && !errors.Is(err, c.is):
				t.Fatalf("err %v is not the value panicked with", err)
			}
			var e *Error
			if c.name == "an *Error" && !errors.As(err, &e) {
				t.Fatalf("err %T is not an *Error", err)
			}
		})
	}
}
