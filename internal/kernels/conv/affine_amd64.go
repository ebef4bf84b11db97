//go:build amd64 && !noasm

package conv

// affineAVX512 is affineGo on n elements at dst.
//
//go:noescape
func affineAVX512(dst *float32, n int, bias, scale, shift, floor float32)
