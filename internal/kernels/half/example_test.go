package half_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/kernels/half"
)

func Example() {
	// bfloat16 keeps float32's range with 8 significant bits; binary16
	// has 11 significant bits but overflows above 65504.
	for _, x := range []float32{1.0 / 3, 70000} {
		b, h := half.BF16(x), half.F16(x)
		fmt.Printf("%g: bf16 %#04x = %g, fp16 %#04x = %g\n",
			x, b, half.BF16ToFloat32(b), h, half.F16ToFloat32(h))
	}

	// The slice forms convert whole buffers.
	src := []float32{0.1, 0.2, 0.3}
	bits := make([]uint16, len(src))
	back := make([]float32, len(src))
	half.BF16FromFloat32s(bits, src)
	half.BF16ToFloat32s(back, bits)
	fmt.Println(back)
	// Output:
	// 0.33333334: bf16 0x3eab = 0.33398438, fp16 0x3555 = 0.33325195
	// 70000: bf16 0x4789 = 70144, fp16 0x7c00 = +Inf
	// [0.100097656 0.20019531 0.30078125]
}
