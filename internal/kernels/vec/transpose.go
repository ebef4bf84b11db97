package vec

import "fmt"

// Transpose sets dst[e·ldd + j] = src[j·lds + e] for j < rows and e <
// cols: the rows×cols matrix at src (row stride lds) transposed into dst
// (row stride ldd). dst must not overlap src. With AVX-512 it moves 16×16
// blocks through registers (a shuffle network), where an element-wise
// loop spends a load and a store on each element; it serves the
// operands of small products (one-tile attention's keys and values).
func Transpose(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if rows < 0 || cols < 0 || ldd < 0 || lds < 0 {
		panic(fmt.Sprintf("vec.Transpose: negative size or stride in rows=%d cols=%d ldd=%d lds=%d", rows, cols, ldd, lds))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if want := (rows-1)*lds + cols; len(src) < want {
		panic(fmt.Sprintf("vec.Transpose: src has %d elements, want %d", len(src), want))
	}
	if want := (cols-1)*ldd + rows; len(dst) < want {
		panic(fmt.Sprintf("vec.Transpose: dst has %d elements, want %d", len(dst), want))
	}
	transpose(dst, ldd, src, lds, rows, cols)
}

// transposeGo is Transpose's pure-Go twin (sizes checked).
func transposeGo[T float32 | float64](dst []T, ldd int, src []T, lds, rows, cols int) {
	for j := range rows {
		for e, v := range src[j*lds : j*lds+cols] {
			dst[e*ldd+j] = v
		}
	}
}
