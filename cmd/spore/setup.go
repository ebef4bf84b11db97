package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// The models' input: both take MNIST's 28×28 single-channel images and
// tell its 10 classes apart.
const (
	imageSize = 28
	classes   = 10
)

// newModel builds the named network with weights from the framework seed.
func newModel(name string) (nn.Layer, error) {
	switch name {
	case "mlp":
		return models.NewNetwork(), nil
	case "lenet":
		return models.NewLeNet5(classes), nil
	case "vit":
		return models.NewViT(classes), nil
	}
	return nil, usagef("unknown --model %q (want %s)", name, orList(modelNames))
}

// modelDefaults are the training settings a model gets unless flags say
// otherwise.
type modelDefaults struct {
	epochs, batch       int
	lr                  float64
	optimizer, schedule string
}

// The models in the order help texts list them, with their defaults:
// enough for the MLP to pass 97% on MNIST, LeNet-5 98.5% and the ViT 97.5%
// (in Graph mode, in a few minutes on two cores). A transformer wants
// Adam-style updates with a warmup; the convolutional and dense networks
// train well with plain momentum.
var (
	modelNames = []string{"mlp", "lenet", "vit"}
	defaults   = map[string]modelDefaults{
		"mlp":   {epochs: 3, batch: 64, lr: 0.01, optimizer: "momentum", schedule: "constant"},
		"lenet": {epochs: 5, batch: 64, lr: 0.01, optimizer: "momentum", schedule: "constant"},
		"vit":   {epochs: 4, batch: 64, lr: 0.002, optimizer: "adamw", schedule: "cosine"},
	}
)

// defaultsHelp lists one default per model for a flag's help:
// "3 for mlp, 5 for lenet, 4 for vit".
func defaultsHelp(field func(modelDefaults) string) string {
	var parts []string
	for _, m := range modelNames {
		parts = append(parts, field(defaults[m])+" for "+m)
	}
	return strings.Join(parts, ", ")
}

// applyDefaults fills the flags not given on the command line, or given
// as 0 where the help says 0 means the model's default (--epochs,
// --batch), with the model's defaults. --lr given explicitly is kept, even
// when it is zero, so that it is refused as such.
func (f *trainFlags) applyDefaults(fs *flags) error {
	for _, c := range []struct {
		flag, zero string
		v          int
	}{
		{"--epochs", "the model's default", f.epochs},
		{"--batch", "the model's default", f.batch},
		{"--steps", "whole epochs", f.steps},
	} {
		if c.v < 0 {
			return usagef("%s %d must not be negative (0: %s)", c.flag, c.v, c.zero)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	d, ok := defaults[f.model]
	if !ok {
		return usagef("unknown --model %q (want %s)", f.model, orList(modelNames))
	}
	if f.epochs == 0 {
		f.epochs = d.epochs
	}
	if f.batch == 0 {
		f.batch = d.batch
	}
	if !set["lr"] {
		f.lr = d.lr
	}
	if !(f.lr > 0) || math.IsInf(f.lr, 0) {
		return usagef("--lr must be a positive finite number, got %v", f.lr)
	}
	if f.optimizer == "" {
		f.optimizer = d.optimizer
	}
	if _, err := newOptimizer(f.optimizer, nil, f.lr); err != nil {
		return err
	}
	if f.schedule == "" {
		f.schedule = d.schedule
	}
	if f.schedule != "constant" && f.schedule != "cosine" {
		return usagef("unknown --schedule %q (want constant or cosine)", f.schedule)
	}
	return nil
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// newSchedule returns the named learning-rate schedule for a run of total
// steps: constant, or cosine — a linear warmup from 0 over the first 5% of
// the steps, then half a cosine down to 0 at the last step. The optimiser
// counts its steps from the start of training, checkpoints included, so
// the cosine schedule is shifted to start at the step the run starts from
// (a resumed run warms up and decays again over its own steps rather than
// finding its rate already at 0): start sets that step, before the first
// training step. name has been checked by applyDefaults.
func newSchedule(name string, lr float64, total int) (sched optim.Schedule, start func(step int)) {
	if name != "cosine" || total < 2 {
		return optim.Constant(lr), func(int) {}
	}
	warm := max(total/20, 1)
	s := &shifted{s: optim.Sequential([]int{warm}, optim.LinearWarmup(lr, warm), optim.CosineDecay(0, lr, total-warm))}
	return s, func(step int) { s.from = float64(step) }
}

// shifted is a schedule started at step from: s at step − from.
type shifted struct {
	s    optim.Schedule
	from float64
}

func (s *shifted) At(step *tensor.Tensor) *tensor.Tensor {
	if s.from == 0 {
		return s.s.At(step)
	}
	return s.s.At(ops.Maximum(ops.SubScalar(step, s.from), ops.ScalarLike(step, 0)))
}

// newOptimizer builds the named optimiser over params with a constant
// rate; nil params only checks the name and rate.
func newOptimizer(name string, params []*tensor.Tensor, lr float64) (optim.Optimizer, error) {
	if !(lr > 0) || math.IsInf(lr, 0) {
		return nil, usagef("--lr must be a positive finite number, got %v", lr)
	}
	if params == nil {
		if !slices.Contains([]string{"sgd", "momentum", "nesterov", "adam", "adamw"}, name) {
			return nil, usagef("unknown --optimizer %q (want sgd, momentum, nesterov, adam or adamw)", name)
		}
		return nil, nil
	}
	return newOptimizerWith(name, params, optim.Constant(lr))
}

// newOptimizerWith builds the named optimiser over params with a
// learning-rate schedule.
func newOptimizerWith(name string, params []*tensor.Tensor, lr optim.Schedule) (optim.Optimizer, error) {
	c := optim.Common{LR: lr}
	switch name {
	case "sgd":
		return optim.NewSGD(params, optim.SGDConfig{Common: c}), nil
	case "momentum":
		return optim.NewSGD(params, optim.SGDConfig{Common: c, Momentum: 0.9}), nil
	case "nesterov":
		return optim.NewSGD(params, optim.SGDConfig{Common: c, Momentum: 0.9, Nesterov: true}), nil
	case "adam":
		return optim.NewAdam(params, optim.AdamConfig{Common: c}), nil
	case "adamw":
		return optim.NewAdamW(params, optim.AdamConfig{Common: c}), nil
	}
	return nil, usagef("unknown --optimizer %q (want sgd, momentum, nesterov, adam or adamw)", name)
}

// setMode sets the global execution mode from a flag value.
func setMode(name string) error {
	switch name {
	case "graph":
		spore.SetContext(spore.WithMode(spore.GraphMode))
	case "pynative":
		spore.SetContext(spore.WithMode(spore.PyNativeMode))
	default:
		return usagef("unknown --mode %q (want graph or pynative)", name)
	}
	return nil
}

// The two splits of an MNIST-format directory, by file-name prefix.
const (
	trainSplit = "train"
	testSplit  = "t10k"
)

// loadSplit returns one split, trainSplit or testSplit: of the embedded
// MNIST, or of the IDX files (gzipped or not) in dir, e.g. Fashion-MNIST.
// Only that split's two files are read. The images must be 28×28 and the
// labels 0-9, what the models take, so that bad files are refused here,
// before any training, rather than in the middle of it.
func loadSplit(dir, split string) (*dataset.Dataset, error) {
	var x, y *tensor.Tensor
	var err error
	where := "MNIST"
	switch {
	case dir == "" && split == trainSplit:
		x, y, err = mnist.TrainTensors(mnist.Normalize())
	case dir == "":
		x, y, err = mnist.TestTensors(mnist.Normalize())
	default:
		where = "--data " + dir
		var images, labels string
		if images, err = findIDX(dir, split+"-images-idx3-ubyte"); err != nil {
			return nil, err
		}
		if labels, err = findIDX(dir, split+"-labels-idx1-ubyte"); err != nil {
			return nil, err
		}
		x, y, err = mnist.LoadTensors(images, labels, mnist.Normalize())
	}
	if err != nil {
		return nil, err
	}
	if err := checkSplit(x, y, split); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	return dataset.FromTensors(x, y), nil
}

// findIDX returns the path of base or base.gz in dir.
func findIDX(dir, base string) (string, error) {
	for _, name := range []string{base + ".gz", base} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("--data %s: no %s or %s.gz", dir, base, base)
}

// checkSplit checks a split's images [N 1 H W] and labels [N] against
// what the models take.
func checkSplit(x, y *tensor.Tensor, split string) error {
	if x.Dim(0) == 0 {
		return fmt.Errorf("the %s files hold no images", split)
	}
	if h, w := x.Dim(2), x.Dim(3); h != imageSize || w != imageSize {
		return fmt.Errorf("the %s images are %d×%d, but the models take %d×%d", split, h, w, imageSize, imageSize)
	}
	for i, v := range y.Data().([]int32) {
		if v < 0 || v >= classes {
			return fmt.Errorf("%s label %d (image %d) is not a class 0-%d", split, v, i, classes-1)
		}
	}
	return nil
}

// checkEnv refuses the environment variables spore could not use:
// SPORE_JIT with a value it does not take, SPORE_SAVE_GRAPHS naming a
// directory that cannot be written (found out before training, not at the
// first compilation).
func checkEnv() error {
	if err := spore.CheckEnv(); err != nil {
		return err
	}
	if dir := spore.GetContext().SaveGraphs; dir != "" {
		// The dumps would create the directory; create it now to know.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("SPORE_SAVE_GRAPHS=%s: %v", dir, err)
		}
		if err := checkWritable(dir); err != nil {
			return fmt.Errorf("SPORE_SAVE_GRAPHS=%s: %v", dir, err)
		}
	}
	return nil
}

// checkSavePath refuses a --save path that SaveCheckpoint would refuse
// after the whole run: an extension that is not a checkpoint format's, a
// directory that does not exist or cannot be written.
func checkSavePath(path string) error {
	if _, err := checkpoint.FormatOf(path); err != nil {
		return usagef("--save %s: want a .safetensors or .ckpt file", path)
	}
	return checkOutPath("--save", path)
}

// checkOutPath refuses a path, given by flag, that a file could not be
// written to at the end of the run: a directory, or a directory that does
// not exist or cannot be written.
func checkOutPath(flag, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s: is a directory", flag, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: directory %s does not exist", flag, path, dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("%s %s: %v", flag, path, err)
	}
	return nil
}

// checkWritable creates and removes a file in dir: permissions, read-only
// mounts and full disks all show up, whoever the user is.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".spore-write-check-*")
	if err != nil {
		// The temporary name says nothing to the user; the cause does.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write in %s: %v", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// modeLabel names the mode the steps really run in: Graph mode with
// compilation turned off by SPORE_JIT runs eagerly.
func modeLabel(mode string) string {
	if mode == "graph" && spore.GetContext().DisableJit {
		return "pynative mode, as SPORE_JIT=0"
	}
	return mode + " mode"
}

// plural is "1 epoch", "3 epochs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// sgdStep is the training step bench and graph measure and show: the
// network with cross-entropy and plain SGD (lr 0.01), as the PyTorch
// reference script trains it.
func sgdStep(net nn.Layer, cfg ...nn.TrainOneStepConfig) *nn.TrainOneStepCell {
	opt := optim.NewSGD(net.Base().TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
	return nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, cfg...)
}
