// Package compile is spore's graph compiler: it optimises a traced graph
// (package graph) with a table of passes and builds its execution plan
// (package exec). Jit calls Run once per input signature.
//
// # Pipeline
//
// Passes lists the passes in order, in the style of the Go compiler's SSA
// pass table; each is a func(*graph.Graph) that rewrites the graph in
// place. Each entry declares its ordering constraints (the passes it runs
// after and before, each with its one-line reason), which CheckOrder
// verifies when the package initialises, and its traits: CompileOnly
// passes introduce what a portable graph cannot hold, and exporters skip
// them. At O1 (the default) they are:
//
//	constfold      evaluate pure ops on constants at compile time
//	simplify       exact algebraic identities: x+0, x·1, Neg(Neg(x)),
//	               Reshape chains, no-op Reshape/BroadcastTo/Cast/Transpose
//	transposefold  MatMul(Transpose(a), b) → MatMul with a transpose flag
//	cse            merge identical ops and small constants
//	hoist          move loop-invariant work out of While and Scan bodies
//	               to run once before the loop
//	attention      MatMul → scale → Softmax → MatMul → one fused attention
//	ampgemm        mixed precision's Cast-MatMul-Cast (+ bias + ReLU) of a
//	               weight the graph does not assign → one bfloat16 GEMM on
//	               the weight packed in the plan
//	ampmatmul      the same chains in a training step (assigned weights,
//	               the backward products) → one bfloat16 GEMM rounding its
//	               operands as it packs them, no bfloat16 copies written
//	gemmupdate     p − s·op(a)·op(b) assigned to p → one accumulating GEMM
//	gemmmomentum   SGD momentum's buf·mu + op(a)·op(b), flushed, assigned
//	               to buf → one GEMM updating buf a block of rows at a time
//	convepilogue   stride-1 Conv2D + bias, inference BatchNorm scale and
//	               shift, ReLU, max or average pooling → one Anchor of
//	               the convolution with its pooling that finishes each
//	               plane in cache
//	convbackward   a stride-1 convolution's input and filter gradients of
//	               a max pooling's ReLU gradient → Anchors of the two
//	               gradients reading the pooled gradient (PooledGrad),
//	               which never write the full-size one
//	anchor         a float32 GEMM or convolution the passes above left +
//	               the elementwise ops that finish it (bias, BatchNorm
//	               scale and shift, any activation, a residual Add, a
//	               Cast) → one Anchor that runs them as a program on each
//	               output tile while it is in cache
//	prepack        products with a weight the graph does not assign keep
//	               the weight packed in the plan, repacked when it changes
//	fuse           elementwise chains → one Fused[...] loop in L1 blocks
//	dce            drop what nothing needs (required: runs at O0 too)
//	schedule       start asynchronous collectives as early, and wait for
//	               them as late, as their data allows (required; a no-op
//	               without them)
//
// O2 adds, first, fastmath: floating-point reassociations that are exact
// in real numbers only (x/c → x·(1/c), (x·c1)·c2 → x·(c1·c2)).
//
// Options.Disable skips passes by name, Options.DumpDir writes the IR
// before and after each pass (text and DOT, numbered), and Options.Verify
// runs graph.Verify after every pass, as the tests do. Buffer assignment
// (liveness-planned arena, in-place elementwise updates, gradients
// computed straight into a collective's bucket) happens after the passes,
// in exec.Compile.
//
// # Results and tolerance
//
// At O0 only dce and schedule run (schedule only reorders), so a compiled
// function computes bit for bit what PyNative mode computes. At O1 results
// match PyNative mode within float32 rounding: an elementwise difference of at most about 1e-5 relative
// (|got−want| ≤ 1e-5·(1+|want|) is what the tests check, on the seed MLP's
// inference, its whole SGD training step, and every pass in isolation).
// The differences come from:
//
//   - the fused elementwise kernels' vectorised Exp, Tanh, Sigmoid and GELU
//     (within 1–7 ulp of the correctly rounded values eager mode computes
//     through float64), and GELU in the GEMM epilogue (erf in float32,
//     a few ulp);
//   - x + 0 → x, which keeps a −0 that eager mode would turn into +0.
//
// Additions, multiplications, ReLU and the GEMM itself are evaluated in the
// same order fused as unfused, so the seed MLP's inference is in fact
// bitwise equal at O1. The accumulating GEMM update adds the scaled product
// to the weight inside the GEMM rather than after it (one rounding fewer).
//
// At O2 the same tolerance holds: each fast-math rewrite changes the op it
// replaces by about one ulp (checked on random programs against PyNative
// mode).
//
// # Fused primitives
//
// The fusion passes introduce primitives that exist only in compiled
// graphs: Anchor (a GEMM or convolution whose elementwise epilogue runs
// as a fuse.Program on each output tile, with a VJP that differentiates
// the unfused chain so that a fused graph can still be differentiated;
// its attributes, AnchorAttrs, print the anchor op and the program) and
// one Fused[...] primitive per elementwise group.
//
// Every GEMM and convolution fusion is an Anchor: the bfloat16 products
// (ampgemm, ampmatmul), the in-place updates (gemmupdate, gemmmomentum),
// the pooled convolution (convepilogue) and the pooled gradients
// (convbackward) are Anchors too, whose attributes select a fused step
// (AnchorSpec: the anchor op, Precision float32 or bfloat16, Update none,
// accumulate or momentum, PooledGrad; the pooling in
// ops.ConvEpilogueAttrs) run by its kernel in place of an epilogue
// program; FixedAnchor builds them. The passes that match them decide
// when; the kernels of those steps (ampgemm.go, ampmatmul.go,
// gemmupdate.go, gemmmomentum.go, ops/convfuse.go) are what the Anchor
// runs. The anchor pass's own epilogues are float32; a bfloat16 product
// takes only a bias and ReLU, as its kernel fuses them. compile/ defines
// no fused primitive per combination.
//
// The Fused[...] primitive of an elementwise group is named after its
// members; its attributes (FusedAttrs) print the fuse.Program it runs. Fused groups have no VJP: the passes run after autodiff has
// built the backward graph. Loop fusion knows no op by name: any primitive
// whose definition carries a block body (core.Elementwise) joins a group,
// in any dtype, and the program runs those same bodies. Absorbed lists
// what a fused value took in, for tools that show the compiler at work
// (Options.Observe hands them the graph after every pass).
package compile
