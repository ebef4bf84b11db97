package tensor

import "fmt"

// String formats t's values like NumPy (placeholder until the full formatter lands).
func (t *Tensor) String() string {
	if t.sym != nil {
		return fmt.Sprintf("Tensor(shape=%v, dtype=%v, symbolic)", t.shape, t.dtype)
	}
	return fmt.Sprint(t.buf)
}

// Verbose formats t as Tensor(shape=[...], dtype=..., value=...).
func (t *Tensor) Verbose() string {
	return fmt.Sprintf("Tensor(shape=%v, dtype=%v, value=%s)", t.shape, t.dtype, t.String())
}
