package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sporeml/spore/train"
)

// The real spore binary, for the tests that must signal a process: built
// once, by the first test that needs it, into a directory removed after
// the last test.
var (
	realBinOnce sync.Once
	realBin     string
	realBinErr  error
)

// sporeBinary builds the spore command (go build) and returns its path.
func sporeBinary(t *testing.T) string {
	t.Helper()
	realBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spore-bin-test-")
		if err != nil {
			realBinErr = err
			return
		}
		atExit = append(atExit, func() { os.RemoveAll(dir) })
		realBin = filepath.Join(dir, "spore")
		out, err := exec.Command("go", "build", "-o", realBin, ".").CombinedOutput()
		if err != nil {
			realBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if realBinErr != nil {
		t.Fatal(realBinErr)
	}
	return realBin
}

// Ctrl-C during spore train stops it after a finished step: it says so on
// one line, exits with status 130, and with --save leaves a checkpoint of
// that step which loads (and which spore eval takes); without --save it
// says nothing was saved. The real binary runs, so that the signal is
// delivered as a terminal would.
func TestTrainInterrupt(t *testing.T) {
	bin := sporeBinary(t)
	data := mnistDir(t, split{60, 28, digits}, split{20, 28, digits})
	dir := t.TempDir()
	stepRe := regexp.MustCompile(`^spore train: interrupted after step (\d+); `)
	for _, tc := range []struct {
		name, save, want string
	}{
		{"with --save", filepath.Join(dir, "m.safetensors"), "saved a checkpoint of it to " + filepath.Join(dir, "m.safetensors")},
		{"without --save", "", "nothing saved (no --save)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 15 steps an epoch, far more epochs than the test waits for.
			args := []string{"train", "--data", data, "--batch", "4", "--epochs", "100000"}
			if tc.save != "" {
				args = append(args, "--save", tc.save)
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Wait for the second epoch's end: training is under way.
			progress := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				sent := false
				for sc.Scan() {
					if !sent && strings.HasPrefix(sc.Text(), "epoch 2/100000: mean loss") {
						progress <- sc.Text()
						sent = true
					}
				}
				close(progress)
				io.Copy(io.Discard, stdout)
			}()
			select {
			case _, ok := <-progress:
				if !ok {
					cmd.Wait()
					t.Fatalf("spore train ended before training:\n%s", stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("no progress from spore train in 60 s:\n%s", stderr.String())
			}
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("spore train did not stop within 30 s of Ctrl-C")
			}
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit status %d, want 130", code)
			}
			msg := stderr.String()
			m := stepRe.FindStringSubmatch(msg)
			if m == nil || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
				t.Fatalf("stderr %q: want one line 'interrupted after step N; %s'", msg, tc.want)
			}
			step, _ := strconv.Atoi(m[1])
			if step < 30 {
				t.Errorf("interrupted after step %d, but two epochs of 15 steps had ended", step)
			}
			if tc.save == "" {
				return
			}
			params, err := train.LoadCheckpoint(tc.save)
			if err != nil {
				t.Fatalf("the checkpoint does not load: %v", err)
			}
			got := -1
			for _, p := range params {
				if p.Name == "global_step" {
					got = int(p.Tensor.Float64s()[0])
				}
			}
			if got != step {
				t.Errorf("the checkpoint's global_step is %d, want the step reported, %d", got, step)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("%d files next to the checkpoint, want none (no temporary left)", len(entries)-1)
			}
			if evalOut, errOut, code := runCLI(t, "eval", "--ckpt", tc.save, "--data", data); code != 0 {
				t.Errorf("spore eval of the checkpoint: exit %d %s %s", code, errOut, evalOut)
			}
		})
	}
}

// Zero flags mean what --help says (the model's default batch), negative
// ones are refused naming the flag, and a sink larger than an epoch is
// reported at the size it runs.
func TestTrainFlagValues(t *testing.T) {
	data := mnistDir(t, split{128, 28, digits}, split{20, 28, digits})
	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout (exit 0) or stderr
	}{
		{"batch 0 is the default", []string{"--batch", "0", "--steps", "2"}, 0, "1 epoch of 2 steps, batch 64,"},
		{"negative batch", []string{"--batch", "-1"}, 2, "--batch -1 must not be negative (0: the model's default)"},
		{"negative steps", []string{"--steps", "-2"}, 2, "--steps -2 must not be negative (0: whole epochs)"},
		{"sink larger than the run", []string{"--batch", "4", "--steps", "5", "--sink-size", "1000000000"}, 0,
			"graph: data sink of 5 steps per call (--sink-size 1000000000, capped at the epoch's length),"},
		{"sink smaller than the run", []string{"--batch", "4", "--steps", "5", "--sink-size", "2"}, 0, "graph: data sink of 2 steps per call,"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"train", "--data", data, "--epochs", "1"}, tc.args...)
			out, errOut, code := runCLI(t, args...)
			got := out
			if tc.code != 0 {
				got = errOut
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Fatalf("spore %v: exit %d, %q %q; want exit %d and %q", args, code, out, errOut, tc.code, tc.want)
			}
		})
	}
}
