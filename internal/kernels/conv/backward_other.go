//go:build !amd64 || noasm

package conv

// Without assembly DotRows is its pure-Go twin.

// dotRowsAsm reports whether DotRows runs assembly: never in this build.
const dotRowsAsm = false

func dotRows(part []float32, ldp int, a []float32, lda, ma int, b []float32, ldb, nb, n int) {
	dotRowsGo(part, ldp, a, lda, ma, b, ldb, nb, n)
}
