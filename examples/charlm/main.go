// Command charlm trains a small character-level GPT on the Go standard
// library's source, read at run time from $GOROOT/src, then writes Go-like
// code with it.
//
// Training runs in Graph mode: each step (forward, cross-entropy, backward,
// gradient clipping, AdamW with warmup and cosine decay) is one compiled
// plan. Sampling then switches to PyNative mode, where the growing prompt
// needs no compilation per length, and draws each character from the
// softmax of the last position's logits divided by a temperature,
// restricted to the top k.
//
//	go run ./examples/charlm                       # the defaults: 5000 steps, validation loss ≈1.24 nats/char
//	go run ./examples/charlm -steps 300 -dim 64    # a quick look
//
// Between the validation losses (every -eval-every steps) a row with the
// step and the training loss so far comes every -progress (5 s), so that
// a long run shows it is moving.
//
// Every .go file under the source directory (outside testdata) is read in
// lexical order; about one file in ten, chosen by a hash of its path, is
// held out for validation. The loss is reported in nats per character
// (per byte: non-ASCII bytes share one token).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "charlm:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	src                              string
	steps, batch, evalEvery, valBats int
	progress                         time.Duration
	gpt                              gptConfig
	lr, temp                         float64
	topK, sampleLen                  int
	prompt                           string
	seed                             uint64
}

func parseFlags(args []string, out io.Writer) (*options, error) {
	fs := flag.NewFlagSet("charlm", flag.ContinueOnError)
	fs.SetOutput(out)
	o := &options{}
	fs.StringVar(&o.src, "src", "", "directory of .go files to learn from (default $GOROOT/src)")
	fs.IntVar(&o.steps, "steps", 5000, "training steps")
	fs.IntVar(&o.batch, "batch", 16, "sequences per step")
	fs.IntVar(&o.gpt.ctx, "ctx", 128, "context length in characters")
	fs.IntVar(&o.gpt.dim, "dim", 128, "model width")
	fs.IntVar(&o.gpt.layers, "layers", 3, "transformer blocks")
	fs.IntVar(&o.gpt.heads, "heads", 4, "attention heads (must divide -dim)")
	fs.Float64Var(&o.lr, "lr", 3e-3, "peak learning rate (linear warmup over the first 5% of the steps, then cosine decay)")
	fs.IntVar(&o.evalEvery, "eval-every", 500, "steps between validation losses")
	fs.IntVar(&o.valBats, "val-batches", 8, "batches in each validation loss")
	fs.DurationVar(&o.progress, "progress", 5*time.Second, "between validation losses, print the step and the training loss this often (0: never)")
	fs.Float64Var(&o.temp, "temp", 0.8, "sampling temperature (0: always the likeliest character)")
	fs.IntVar(&o.topK, "top-k", 10, "sample among the k likeliest characters (0: all)")
	fs.IntVar(&o.sampleLen, "len", 600, "characters to sample")
	fs.StringVar(&o.prompt, "prompt", "func ", "text to start the sample with")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the weights, batches and sampling")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"-steps", o.steps}, {"-batch", o.batch}, {"-ctx", o.gpt.ctx}, {"-dim", o.gpt.dim}, {"-layers", o.gpt.layers},
		{"-heads", o.gpt.heads}, {"-eval-every", o.evalEvery}, {"-val-batches", o.valBats}} {
		if p.v <= 0 {
			return nil, fmt.Errorf("%s must be positive, got %d", p.name, p.v)
		}
	}
	if o.gpt.dim%o.gpt.heads != 0 {
		return nil, fmt.Errorf("-heads %d does not divide -dim %d", o.gpt.heads, o.gpt.dim)
	}
	if !(o.lr > 0) || math.IsInf(o.lr, 0) {
		return nil, fmt.Errorf("-lr must be a positive finite number, got %v", o.lr)
	}
	if !(o.temp >= 0) || math.IsInf(o.temp, 0) {
		return nil, fmt.Errorf("-temp must be a finite number ≥ 0, got %v", o.temp)
	}
	if o.topK < 0 || o.topK > vocab {
		return nil, fmt.Errorf("-top-k must be in [0, %d], got %d", vocab, o.topK)
	}
	if o.progress < 0 {
		return nil, fmt.Errorf("-progress must not be negative, got %v", o.progress)
	}
	if o.sampleLen < 0 {
		return nil, fmt.Errorf("-len must not be negative, got %d", o.sampleLen)
	}
	if o.prompt == "" {
		return nil, fmt.Errorf("-prompt must not be empty")
	}
	return o, nil
}

func run(args []string, out io.Writer) error {
	o, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	if o.src == "" {
		if o.src, err = goSource(); err != nil {
			return err
		}
	}
	c, err := loadCorpus(o.src, 10)
	if err != nil {
		return err
	}
	if len(c.train) <= o.gpt.ctx || len(c.val) <= o.gpt.ctx {
		return fmt.Errorf("%s: the corpus is shorter than one context of %d characters", o.src, o.gpt.ctx)
	}
	fmt.Fprintf(out, "corpus %s: %d files, %.1f M characters for training; %d files, %.1f M for validation\n",
		o.src, c.trainFiles, float64(len(c.train))/1e6, c.valFiles, float64(len(c.val))/1e6)

	m, err := train(o, c, out)
	if err != nil {
		return err
	}
	text := sample(m, o.prompt, o.sampleLen, o.gpt.ctx, o.temp, o.topK, rand.New(rand.NewPCG(o.seed, 2)))
	fmt.Fprintf(out, "\nsample (PyNative mode, temperature %v, top-k %d):\n%s\n", o.temp, o.topK, text)
	return nil
}

// train trains a new model on c in Graph mode, printing the training and
// validation losses every evalEvery steps, and the step and training loss
// every o.progress in between, and returns it.
func train(o *options, c *corpus, out io.Writer) (*GPT, error) {
	spore.SetContext(spore.WithMode(spore.GraphMode))
	spore.SetSeed(int64(o.seed))
	m := newGPT(o.gpt)
	nParams := 0
	for _, p := range m.TrainableParameters() {
		nParams += p.Size()
	}
	fmt.Fprintf(out, "model: %d blocks, dim %d, %d heads, context %d, %d parameters; batch %d, %d steps, AdamW lr %g, Graph mode\n",
		o.gpt.layers, o.gpt.dim, o.gpt.heads, o.gpt.ctx, nParams, o.batch, o.steps, o.lr)

	warm := max(o.steps/20, 1)
	sched := optim.Constant(o.lr)
	if o.steps > warm {
		sched = optim.Sequential([]int{warm}, optim.LinearWarmup(o.lr, warm), optim.CosineDecay(o.lr/10, o.lr, o.steps-warm))
	}
	opt := optim.NewAdamW(m.TrainableParameters(), optim.AdamConfig{Common: optim.Common{LR: sched, WeightDecay: 0.01}, Beta2: 0.99})
	loss := nn.NewWithLossCell(m, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean))
	step := nn.NewTrainOneStepCell(loss, opt, nn.TrainOneStepConfig{ClipGlobalNorm: 1})

	// The validation batches are drawn once, so every evaluation scores
	// the same text.
	vrng := rand.New(rand.NewPCG(o.seed, 1))
	var vx, vy []*spore.Tensor
	for range o.valBats {
		x, y := batch(c.val, vrng, o.batch, o.gpt.ctx)
		vx, vy = append(vx, x), append(vy, y)
	}
	validate := func() float64 {
		m.SetTrain(false)
		defer m.SetTrain(true)
		s := 0.0
		for i := range vx {
			s += loss.Call(vx[i], vy[i]).Item()
		}
		return s / float64(len(vx))
	}

	rng := rand.New(rand.NewPCG(o.seed, 0))
	fmt.Fprintf(out, "%6s %12s %12s %9s\n", "step", "train loss", "val loss", "time")
	start := time.Now()
	ticks := ticker{every: o.progress, last: start}
	sum, n := 0.0, 0
	for i := 1; i <= o.steps; i++ {
		x, y := batch(c.train, rng, o.batch, o.gpt.ctx)
		l := step.Step(x, y)
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("step %d: the loss is %v, training diverged; try a smaller -lr", i, l)
		}
		sum += l
		n++
		now := time.Now()
		if i%o.evalEvery == 0 || i == o.steps {
			fmt.Fprintf(out, "%6d %12.4f %12.4f %8.0fs\n", i, sum/float64(n), validate(), time.Since(start).Seconds())
			sum, n = 0, 0
			ticks.last = time.Now()
		} else if ticks.due(now) {
			// A row without a validation loss: the mean training loss
			// since the last full row, and the time left at this pace.
			elapsed := now.Sub(start)
			eta := time.Duration(float64(elapsed) / float64(i) * float64(o.steps-i)).Round(time.Second)
			fmt.Fprintf(out, "%6d %12.4f %12s %8.0fs  (step %d/%d, ETA %v)\n", i, sum/float64(n), "-", elapsed.Seconds(), i, o.steps, eta)
		}
	}
	return m, nil
}

// ticker paces the progress rows: due reports whether every has passed
// since the last row (and then counts this one as the last); an every of
// 0 is never due.
type ticker struct {
	every time.Duration
	last  time.Time
}

func (t *ticker) due(now time.Time) bool {
	if t.every <= 0 || now.Sub(t.last) < t.every {
		return false
	}
	t.last = now
	return true
}

// sample continues prompt by length characters in PyNative mode: each
// character is drawn from the model's next-character distribution given
// the last ctx characters, sharpened by temperature and cut to the topK
// likeliest (0: all; temperature 0: the likeliest alone). rng makes it
// reproducible.
func sample(m *GPT, prompt string, length, ctx int, temperature float64, topK int, rng *rand.Rand) string {
	spore.SetContext(spore.WithMode(spore.PyNativeMode))
	m.SetTrain(false)
	toks := make([]int, 0, len(prompt)+length)
	for _, t := range encode(prompt) {
		toks = append(toks, int(t))
	}
	for range length {
		window := toks[max(len(toks)-ctx, 0):]
		ids := make([]int32, len(window))
		for i, t := range window {
			ids[i] = int32(t)
		}
		logits := m.Call(tensor.FromSlice(ids, 1, len(ids))) // [L, vocab]
		last := ops.Slice(logits, []int{len(ids) - 1, 0}, []int{1, vocab})
		toks = append(toks, nextToken(ops.Reshape(last, vocab), temperature, topK, rng))
	}
	return decode(toks)
}

// nextToken draws a token from logits [vocab]: among the topK largest
// (all when topK is 0), with probabilities softmax(logits/temperature);
// the largest when temperature is 0.
func nextToken(logits *spore.Tensor, temperature float64, topK int, rng *rand.Rand) int {
	if topK == 0 {
		topK = logits.Dim(0)
	}
	if temperature == 0 {
		topK = 1
	}
	vals, idx := ops.TopK(logits, topK) // largest first
	if topK == 1 {
		return int(idx.Int64s()[0])
	}
	p := ops.Softmax(ops.DivScalar(vals, temperature), -1).Float64s()
	r := rng.Float64()
	ids := idx.Int64s()
	for i, pi := range p {
		if r -= pi; r < 0 {
			return int(ids[i])
		}
	}
	return int(ids[len(ids)-1]) // rounding left r ≥ 0
}
