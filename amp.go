package spore

import "github.com/sporeml/spore/internal/amp"

// AmpLevel is a level of automatic mixed precision, spelt as MindSpore's
// amp_level ("O0", "O2", "O3"). Parameters stay Float32 at every level
// (fp32 master weights): a level only decides which ops compute in
// bfloat16, by casting their operands as they are applied (see
// AmpScope), so that gradients reach the Float32 parameters through the
// casts' VJPs and optimisers update them in float32.
type AmpLevel = amp.Level

// The levels. MindSpore's O1 (a list of ops in float16, the rest in
// float32) is not built; ParseAmpLevel refuses it.
const (
	// AmpO0 runs everything in Float32: the plain network, bit for bit.
	AmpO0 = amp.O0
	// AmpO2 runs MatMul and Conv2D in bfloat16 — Float32 operands rounded
	// to bfloat16, products accumulated in float32, the result rounded to
	// bfloat16 and cast back to Float32 — and everything else (bias adds,
	// activations, softmax, BatchNorm and LayerNorm, the loss) in Float32.
	AmpO2 = amp.O2
	// AmpO3 runs every op that has a BFloat16 kernel in bfloat16, casting
	// Float32 operands at each such op and back where an op has no
	// BFloat16 kernel. Parameters and their updates stay Float32, and the
	// network's result comes back Float32.
	AmpO3 = amp.O3
)

// ParseAmpLevel reads a level as MindSpore spells it ("O0", "O2", "O3");
// the empty string is O0.
func ParseAmpLevel(s string) (AmpLevel, error) { return amp.Parse(s) }

// AmpScope makes level the mixed precision of every op the calling
// goroutine applies until the returned function is called: eagerly, the
// casts run; while tracing, they land in the graph, where the compiler
// fuses them into the GEMM. Scopes nest, the innermost winning; O0 (or
// "") inside a mixed region runs in full precision. An invalid level
// panics with an *Error.
func AmpScope(level AmpLevel) (end func()) { return amp.Scope(level) }
