package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/train"
)

// runMainEnv, when set, makes the test binary run the spore command itself
// instead of the tests: the bad-input table runs the real command in a
// child process, so that a panic shows as the user would see it (instead
// of killing the test binary) and environment variables read at start-up
// (SPORE_JIT, SPORE_SAVE_GRAPHS) take effect.
const runMainEnv = "SPORE_CLI_TEST_RUN_MAIN"

// atExit holds what the tests leave for after the last of them, such as
// removing a binary several tests share.
var atExit []func()

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	for _, f := range atExit {
		f()
	}
	os.Exit(code)
}

// runChild runs "spore args..." in a child process with env added to the
// environment, and returns what it printed and its exit status.
func runChild(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	for _, kv := range os.Environ() {
		// The caller's settings must not leak into the child: a
		// GOTRACEBACK would turn recovered panics back into traces.
		if !strings.HasPrefix(kv, "SPORE_") && !strings.HasPrefix(kv, "GOTRACEBACK=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, runMainEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("spore %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// writeIDX writes an unsigned-byte IDX file of the given dimensions.
func writeIDX(t *testing.T, path string, data []byte, dims ...int) {
	t.Helper()
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0x08, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// split describes one split of a fixture directory.
type split struct {
	n, size int
	label   func(i int) byte
}

// mnistDir writes an MNIST-format directory: the train and t10k splits
// given (a zero split is left out), with pixel values from the index.
func mnistDir(t *testing.T, trainSplit, testSplit split) string {
	t.Helper()
	dir := t.TempDir()
	for prefix, s := range map[string]split{"train": trainSplit, "t10k": testSplit} {
		if s.label == nil {
			continue
		}
		px := make([]byte, s.n*s.size*s.size)
		for i := range px {
			px[i] = byte(i * 7)
		}
		labels := make([]byte, s.n)
		for i := range labels {
			labels[i] = s.label(i)
		}
		writeIDX(t, filepath.Join(dir, prefix+"-images-idx3-ubyte"), px, s.n, s.size, s.size)
		writeIDX(t, filepath.Join(dir, prefix+"-labels-idx1-ubyte"), labels, s.n)
	}
	return dir
}

func digits(i int) byte { return byte(i % 10) }

// saveModel writes a checkpoint of a freshly built model with the named
// optimizer's state (none for ""), as "spore train --save" would.
func saveModel(t *testing.T, path, model, optimizer string) {
	t.Helper()
	spore.SetSeed(1)
	net, err := newModel(model)
	if err != nil {
		t.Fatal(err)
	}
	if optimizer == "" {
		err = train.SaveCheckpoint(net, path)
	} else {
		opt, oerr := newOptimizer(optimizer, net.Base().TrainableParameters(), 0.01)
		if oerr != nil {
			t.Fatal(oerr)
		}
		err = train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), opt).SaveCheckpoint(path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Every bad input a user can give the command fails with exactly one line
// on stderr naming the cause and a non-zero status, never a Go panic; and
// input that can be checked before training is refused before anything is
// trained (nothing on stdout).
func TestBadInputNeverPanics(t *testing.T) {
	good := split{20, 28, digits}
	small := mnistDir(t, split{16, 16, digits}, split{16, 16, digits})
	testLabels := mnistDir(t, good, split{20, 28, func(i int) byte {
		if i == 3 {
			return 200
		}
		return digits(i)
	}})
	trainLabels := mnistDir(t, split{20, 28, func(i int) byte { return 200 * byte(i%2) }}, good)
	tiny := mnistDir(t, split{10, 28, digits}, split{10, 28, digits})
	onlyTrain := mnistDir(t, good, split{})
	truncated := mnistDir(t, good, good)
	if err := os.Truncate(filepath.Join(truncated, "train-images-idx3-ubyte"), 1000); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mlpCkpt, lenetCkpt := filepath.Join(dir, "mlp.safetensors"), filepath.Join(dir, "lenet.ckpt")
	saveModel(t, mlpCkpt, "mlp", "")
	saveModel(t, lenetCkpt, "lenet", "momentum")
	short := []string{"--epochs", "1", "--steps", "2"}
	dirCkpt := filepath.Join(dir, "d.ckpt")
	if err := os.Mkdir(dirCkpt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dirCkpt+".svg", 0o755); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		env  []string
		args []string
		want string // in the one line on stderr
	}{
		{"wrong image size, mlp", nil, []string{"train", "--data", small}, "the train images are 16×16, but the models take 28×28"},
		{"wrong image size, lenet", nil, []string{"train", "--data", small, "--model", "lenet"}, "16×16"},
		{"wrong image size, pynative", nil, []string{"train", "--data", small, "--mode", "pynative"}, "16×16"},
		{"wrong image size, eval mlp", nil, []string{"eval", "--data", small, "--ckpt", mlpCkpt}, "the t10k images are 16×16"},
		{"wrong image size, eval lenet", nil, []string{"eval", "--data", small, "--ckpt", lenetCkpt, "--model", "lenet"}, "16×16"},
		{"test label out of range, train", nil, []string{"train", "--data", testLabels}, "t10k label 200 (image 3) is not a class 0-9"},
		{"test label out of range, eval", nil, []string{"eval", "--data", testLabels, "--ckpt", mlpCkpt, "--mode", "pynative"}, "t10k label 200 (image 3)"},
		{"training label out of range, graph", nil, []string{"train", "--data", trainLabels}, "train label 200 (image 1)"},
		{"training label out of range, pynative", nil, []string{"train", "--data", trainLabels, "--mode", "pynative"}, "train label 200 (image 1)"},
		{"truncated IDX file", nil, []string{"train", "--data", truncated}, "truncated data"},
		{"graph --out under a file", nil, []string{"graph", "--out", filepath.Join(file, "graphs")}, "not a directory"},
		{"eval without the test files", nil, []string{"eval", "--data", onlyTrain, "--ckpt", mlpCkpt}, "no t10k-images-idx3-ubyte"},
		{"SPORE_SAVE_GRAPHS under a file", []string{"SPORE_SAVE_GRAPHS=" + filepath.Join(file, "graphs")}, append([]string{"train", "--data", tiny, "--batch", "5"}, short...), "SPORE_SAVE_GRAPHS=" + filepath.Join(file, "graphs")},
		{"SPORE_SAVE_GRAPHS under a file, eval", []string{"SPORE_SAVE_GRAPHS=" + filepath.Join(file, "graphs")}, []string{"eval", "--data", tiny, "--ckpt", mlpCkpt}, "not a directory"},
		{"SPORE_SAVE_GRAPHS is a file", []string{"SPORE_SAVE_GRAPHS=" + file}, []string{"bench", "--iters", "1"}, "SPORE_SAVE_GRAPHS=" + file},
		{"--save into a missing directory", nil, []string{"train", "--save", filepath.Join(dir, "no", "such", "m.safetensors")}, "does not exist"},
		{"--save under a file", nil, []string{"train", "--save", filepath.Join(file, "m.safetensors")}, "is not a directory"},
		{"--save onto a directory", nil, []string{"train", "--save", dirCkpt}, "is a directory"},
		{"--save unknown extension", nil, []string{"train", "--save", filepath.Join(dir, "m.bin")}, "want a .safetensors or .ckpt file"},
		{"--summary-dir under a file", nil, []string{"train", "--summary-dir", filepath.Join(file, "run")}, "--summary-dir " + filepath.Join(file, "run") + ": not a directory"},
		{"--summary-dir is a file", nil, []string{"train", "--summary-dir", file}, "--summary-dir " + file + ": is not a directory"},
		{"--plot unknown extension", nil, []string{"train", "--plot", filepath.Join(dir, "loss.png")}, "want a .svg file"},
		{"--plot into a missing directory", nil, []string{"train", "--plot", filepath.Join(dir, "no", "loss.svg")}, "does not exist"},
		{"--plot under a file", nil, []string{"train", "--plot", filepath.Join(file, "loss.svg")}, "is not a directory"},
		{"--plot onto a directory", nil, []string{"train", "--plot", dirCkpt + ".svg"}, "is a directory"},
		{"--loss-log into a missing directory", nil, []string{"train", "--loss-log", filepath.Join(dir, "no", "such", "loss.tsv")}, "--loss-log " + filepath.Join(dir, "no", "such", "loss.tsv") + ": directory"},
		{"--loss-log onto a directory", nil, []string{"train", "--loss-log", dir}, "--loss-log " + dir + ": is a directory"},
		{"--lr inf", nil, []string{"train", "--lr", "inf"}, "--lr must be a positive finite number, got +Inf"},
		{"--lr NaN", nil, []string{"train", "--lr", "NaN"}, "got NaN"},
		{"--lr negative", nil, []string{"train", "--lr", "-0.1"}, "got -0.1"},
		{"--lr zero", nil, []string{"train", "--lr", "0"}, "got 0"},
		{"--batch larger than MNIST", nil, []string{"train", "--batch", "60001"}, "--batch 60001 is larger than the MNIST training set (60000 images)"},
		{"dataset smaller than a batch", nil, []string{"train", "--data", tiny}, "--batch 64 is larger than the --data " + tiny + " training set (10 images)"},
		{"SPORE_JIT=banana, train", []string{"SPORE_JIT=banana"}, []string{"train"}, `SPORE_JIT="banana": want 0`},
		{"SPORE_JIT=banana, eval", []string{"SPORE_JIT=banana"}, []string{"eval", "--ckpt", mlpCkpt}, `SPORE_JIT="banana"`},
		{"SPORE_JIT=banana, bench", []string{"SPORE_JIT=banana"}, []string{"bench"}, `SPORE_JIT="banana"`},
		{"SPORE_JIT=banana, graph", []string{"SPORE_JIT=banana"}, []string{"graph", "--out", dir}, `SPORE_JIT="banana"`},
		{"SPORE_JIT=0, bench", []string{"SPORE_JIT=0"}, []string{"bench"}, "SPORE_JIT=0"},
		{"resume with another optimizer", nil, []string{"train", "--model", "lenet", "--optimizer", "adam", "--resume", lenetCkpt}, "lenet.ckpt: the optimizer state does not fit, nothing was loaded"},
		{"resume with another model", nil, []string{"train", "--resume", lenetCkpt}, "lenet.ckpt: the network's parameters do not fit"},
		{"eval with another model", nil, []string{"eval", "--ckpt", lenetCkpt, "--model", "mlp"}, "lenet.ckpt does not fit --model mlp: 6 missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runChild(t, c.env, c.args...)
			all := out + errOut
			if strings.Contains(all, "panic:") || strings.Contains(all, "goroutine ") {
				t.Fatalf("spore %v panicked:\n%s", c.args, all)
			}
			if code == 0 {
				t.Fatalf("spore %v: exit 0; want a failure\n%s", c.args, all)
			}
			line := strings.TrimSuffix(errOut, "\n")
			if line == "" || strings.Contains(line, "\n") {
				t.Errorf("spore %v: stderr is not one line: %q", c.args, errOut)
			}
			if !strings.Contains(line, c.want) {
				t.Errorf("spore %v: stderr %q does not say %q", c.args, line, c.want)
			}
			// Each layer of the program adds context once: no "train:
			// train:", no package prefixes piled on one another.
			for _, pile := range []string{"train: train:", ": checkpoint:", "spore: spore", ": spore:"} {
				if strings.Contains(line, pile) {
					t.Errorf("spore %v: prefixes pile up (%q) in %q", c.args, pile, line)
				}
			}
			// Everything here can be refused before the first step.
			if out != "" {
				t.Errorf("spore %v: printed before refusing:\n%s", c.args, out)
			}
		})
	}
}

// The two modes refuse bad data with the same message.
func TestBadDataSameErrorInBothModes(t *testing.T) {
	small := mnistDir(t, split{16, 16, digits}, split{16, 16, digits})
	labels := mnistDir(t, split{20, 28, func(i int) byte { return 200 * byte(i%2) }}, split{20, 28, digits})
	for _, dir := range []string{small, labels} {
		for _, model := range []string{"mlp", "lenet"} {
			_, graphErr, _ := runChild(t, nil, "train", "--data", dir, "--model", model, "--mode", "graph")
			_, eagerErr, _ := runChild(t, nil, "train", "--data", dir, "--model", model, "--mode", "pynative")
			if graphErr == "" || graphErr != eagerErr {
				t.Errorf("--data %s --model %s: graph mode says %q, pynative %q", dir, model, graphErr, eagerErr)
			}
		}
	}
}

// A run that trains: "1 epoch", the mode the steps really ran in
// (SPORE_JIT=0 runs Graph mode eagerly), and eval of a directory that has
// only the test files.
func TestTrainWording(t *testing.T) {
	data := mnistDir(t, split{20, 28, digits}, split{20, 28, digits})
	onlyTest := mnistDir(t, split{}, split{20, 28, digits})
	ckpt := filepath.Join(t.TempDir(), "m.safetensors")
	initial := filepath.Join(t.TempDir(), "initial.safetensors")
	saveModel(t, initial, "mlp", "momentum")
	args := []string{"train", "--data", data, "--batch", "5", "--epochs", "1", "--save", ckpt}
	cases := []struct {
		name    string
		env     []string
		args    []string
		want    []string
		notWant []string
	}{
		{"graph mode", nil, args, []string{"1 epoch of 4 steps", "(graph mode)", "saved " + ckpt}, []string{"1 epochs"}},
		{"SPORE_JIT=0", []string{"SPORE_JIT=0"}, args, []string{"pynative mode, as SPORE_JIT=0"}, []string{"graph mode", "graph:"}},
		{"SPORE_JIT=1", []string{"SPORE_JIT=1"}, args, []string{"(graph mode)"}, nil},
		{"one step", nil, []string{"train", "--data", data, "--batch", "5", "--epochs", "2", "--steps", "1"}, []string{"2 epochs of 1 step,", "training: 2 steps"}, []string{"1 steps"}},
		{"eval with only the test files", nil, []string{"eval", "--data", onlyTest, "--ckpt", initial}, []string{"test accuracy", "on 20 images"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runChild(t, c.env, c.args...)
			if code != 0 {
				t.Fatalf("spore %v: exit %d: %s\n%s", c.args, code, errOut, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("spore %v: output lacks %q:\n%s", c.args, w, out)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(out, w) {
					t.Errorf("spore %v: output has %q:\n%s", c.args, w, out)
				}
			}
		})
	}
}

// A run whose loss turns NaN stops there, in either mode, with one line
// that says what to try, instead of training on to chance accuracy.
func TestDivergedTrainingStops(t *testing.T) {
	data := mnistDir(t, split{20, 28, digits}, split{20, 28, digits})
	for _, mode := range []string{"graph", "pynative"} {
		out, errOut, code := runChild(t, nil, "train", "--data", data, "--batch", "5", "--epochs", "3", "--lr", "1e30", "--mode", mode)
		line := strings.TrimSuffix(errOut, "\n")
		if code != 1 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "spore train: epoch 1 step ") || !strings.HasSuffix(line, "training diverged; try a smaller --lr") {
			t.Errorf("%s: exit %d, stderr %q", mode, code, errOut)
		}
		if strings.Contains(out, "test accuracy") || strings.Contains(out, "epoch 2/") {
			t.Errorf("%s: trained on after the loss diverged:\n%s", mode, out)
		}
	}
}

// "spore help COMMAND" shows the command's own flags.
func TestHelpCommand(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help"}, 0, "commands:"},
		{[]string{"--help"}, 0, "SPORE_JIT=0|1"},
		{[]string{"help", "train"}, 0, "-lr"},
		{[]string{"help", "eval"}, 0, "-ckpt"},
		{[]string{"help", "bench"}, 0, "-iters"},
		{[]string{"help", "graph"}, 0, "-level"},
		{[]string{"help", "fly"}, 2, `unknown command "fly"`},
		{[]string{"help", "train", "eval"}, 2, "want one command"},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("spore %v: exit %d, output %q %q; want exit %d showing %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

// The last line of defence: a panic that a check missed becomes one line
// naming its cause, without the spore.Error's "spore:" prefix or source
// line, and a runtime error is reported as a bug.
func TestPanicBecomesOneLine(t *testing.T) {
	cases := []struct {
		name  string
		panic func()
		code  int
		want  string
	}{
		{"spore.Error", func() {
			panic(&spore.Error{Op: "nn.Dense", Msg: "input [64 256] does not end in in_channels=784", Loc: "train.go:81"})
		}, 1, "spore boom: nn.Dense: input [64 256] does not end in in_channels=784\n"},
		{"runtime error", func() {
			var m map[string]int
			m["x"]++
		}, 1, "spore boom: internal error: assignment to entry in nil map (a bug in spore; run with GOTRACEBACK=1 for the stack)\n"},
		{"other value", func() { panic("odd") }, 1, "spore boom: odd\n"},
	}
	saved := commands
	defer func() { commands = saved }()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOTRACEBACK", "") // set, a panic would go on with its stack
			commands = []command{{"boom", "", func([]string, io.Writer, io.Writer) error { c.panic(); return nil }}}
			_, errOut, code := runCLI(t, "boom")
			if code != c.code || errOut != c.want {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errOut, c.code, c.want)
			}
		})
	}
}
