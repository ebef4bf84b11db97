//go:build !amd64 || noasm

package vec

// Without assembly every kernel is its pure-Go twin.

// useAsm is false: there is no assembly in this build.
const useAsm = false

func add(dst, a, b []float32)               { addGo(dst, a, b) }
func sub(dst, a, b []float32)               { subGo(dst, a, b) }
func mul(dst, a, b []float32)               { mulGo(dst, a, b) }
func div(dst, a, b []float32)               { divGo(dst, a, b) }
func addScalar(dst, a []float32, s float32) { addScalarGo(dst, a, s) }
func mulScalar(dst, a []float32, s float32) { mulScalarGo(dst, a, s) }
func relu(dst, x []float32)                 { reluGo(dst, x) }
func axpy(dst, x []float32, a float32)      { axpyGo(dst, x, a) }
func reluGrad(dst, x, g []float32)          { reluGradGo(dst, x, g) }
func exp(dst, x []float32)                  { expGo(dst, x) }
func tanh(dst, x []float32)                 { tanhGo(dst, x) }
func sigmoid(dst, x []float32)              { sigmoidGo(dst, x) }
func gelu(dst, x []float32)                 { geluGo(dst, x) }
func erf(dst, x []float32)                  { erfGo(dst, x) }
func sumLeaf(x []float32) float32           { return sumLeafGo(x) }
func dotLeaf(a, b []float32) float32        { return dotLeafGo(a, b) }
func max32(x []float32) float32             { return maxGo(x) }

func expShiftSum(dst, x []float32, shift float32) float32 {
	return expShiftSumGo(dst, x, shift)
}
