//go:build mpi

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sporeml/spore/checkpoint"
)

// These tests run the spore binary, built with -tags mpi, under mpirun
// with two ranks on this machine, against one process. They need Open
// MPI's mpirun on the PATH (apt-get install -y libopenmpi-dev
// openmpi-bin), as the mpi build itself needs its library.

// sporeBin is the binary the tests launch: the real command, built with
// -tags mpi by the first test that needs it (see mpiSpore), in a
// directory removed after the last test.
var (
	sporeBin  string
	buildOnce sync.Once
	buildErr  error
)

// mpiSpore builds spore with -tags mpi, once, and returns its path.
func mpiSpore(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spore-mpi-test-")
		if err != nil {
			buildErr = err
			return
		}
		atExit = append(atExit, func() { os.RemoveAll(dir) })
		sporeBin = filepath.Join(dir, "spore")
		build := exec.Command("go", "build", "-tags", "mpi", "-o", sporeBin, ".")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -tags mpi: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return sporeBin
}

// mpirunBase starts every mpirun command line here: as root it must be
// allowed explicitly, and --oversubscribe lets it start more ranks than
// there are cores. Each rank uses one thread, so that two ranks on a small
// machine do not fight over its cores.
var mpirunBase = []string{"--allow-run-as-root", "--oversubscribe", "-x", "GOMAXPROCS=1"}

// mpirunArgs is mpirunBase for np copies of one program.
func mpirunArgs(np int) []string {
	return append(slices.Clone(mpirunBase), "-np", strconv.Itoa(np))
}

// launched is a finished command: its output and exit status.
type launched struct {
	stdout, stderr string
	code           int
}

// launch runs name with args in dir and waits at most limit for it: a run
// still going then has hung, which fails the test (after killing its
// process group, so that nothing outlives the test).
func launch(t *testing.T, limit time.Duration, dir string, env []string, name string, args ...string) launched {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	code, hung := wait(cmd, limit)
	if hung {
		t.Fatalf("%s %s did not finish within %v:\n%s\n%s", name, strings.Join(args, " "), limit, o.String(), e.String())
	}
	return launched{o.String(), e.String(), code}
}

// wait waits for cmd at most limit, killing its process group if it has
// not exited by then, and returns its exit status.
func wait(cmd *exec.Cmd, limit time.Duration) (code int, hung bool) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		hung = true
	}
	return cmd.ProcessState.ExitCode(), hung
}

// sporeProcesses returns the pids of running processes of the test's
// binary, with each one's rank (-1 when not launched by mpirun).
func sporeProcesses(t *testing.T) map[int]int {
	t.Helper()
	out := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("listing processes: %v", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != sporeBin {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// A zombie has exited; only its parent's wait is missing.
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out[pid] = -1
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("OMPI_COMM_WORLD_RANK=")); ok {
				out[pid], _ = strconv.Atoi(string(v))
			}
		}
	}
	return out
}

// checkNoneLeft fails the test if a process of the binary is still
// running a few seconds after mpirun ended, and kills it.
func checkNoneLeft(t *testing.T) {
	t.Helper()
	var left map[int]int
	for range 50 {
		if left = sporeProcesses(t); len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Errorf("processes of spore left running after mpirun ended (pid: rank): %v", left)
}

// readLosses reads a --loss-log file: the step numbers and losses.
func readLosses(t *testing.T, path string) (steps []int, losses []float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		step, loss, ok := strings.Cut(line, "\t")
		s, err1 := strconv.Atoi(step)
		l, err2 := strconv.ParseFloat(loss, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("%s line %d: %q is not a step and a loss", path, i+1, line)
		}
		steps, losses = append(steps, s), append(losses, l)
	}
	return steps, losses
}

// TestDataParallelMatchesSingleProcess trains the seed network with two
// ranks under mpirun and in one process, with the same seed and global
// batch (3 epochs of 200 steps at batch 64), and compares the per-step
// losses (--loss-log) and the final weights (--save). The two ranks must
// end bitwise identical (the run checks that itself and says so), and rank
// 0 alone must report and write.
//
// How close the two runs can be is set by float32 rounding: the ranks sum
// their halves of a batch's gradient separately, a different order of
// additions than one process's, and training amplifies such last-bit
// differences at a rate that grows with the learning rate. Measured in one
// process, merely reordering the rows within each batch (the same maths,
// another order) moves the losses at the default --lr 0.01 with momentum
// by 2e-7 relative after 50 steps, 2e-4 after 100 and 3e-3 after 200;
// at --lr 0.001 by less than 1e-6 over all 600 steps. So the run at
// --lr 0.001 must agree to 1e-5 at every step and in every weight; the
// default run must agree to 1e-5 for its first steps, and after that as
// closely as that noise allows.
func TestDataParallelMatchesSingleProcess(t *testing.T) {
	sporeBin := mpiSpore(t)
	for _, tc := range []struct {
		name string
		args []string
		// strict is how many steps must agree to 1e-5 relative.
		strict int
		// epochTol bounds the relative difference of each epoch's mean
		// loss, weightTol that of the final weights (absolute).
		epochTol, weightTol float64
	}{
		{"lr 0.001", []string{"--lr", "0.001"}, 600, 1e-5, 1e-5},
		{"default lr", nil, 25, 0.02, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			common := append([]string{"train", "--steps", "200", "--batch", "64"}, tc.args...)
			single := launch(t, 5*time.Minute, dir, []string{"GOMAXPROCS=1"}, sporeBin,
				append(common, "--save", "G.safetensors", "--loss-log", "G.loss")...)
			if single.code != 0 {
				t.Fatalf("one process: exit %d\n%s\n%s", single.code, single.stdout, single.stderr)
			}
			par := launch(t, 5*time.Minute, dir, nil, "mpirun",
				append(append(mpirunArgs(2), sporeBin), append(common, "--save", "F.safetensors", "--loss-log", "F.loss")...)...)
			if par.code != 0 {
				t.Fatalf("mpirun -np 2: exit %d\n%s\n%s", par.code, par.stdout, par.stderr)
			}
			t.Logf("one process:\n%s\nmpirun -np 2:\n%s", single.stdout, par.stdout)
			checkReport(t, dir, par)
			compareLosses(t, dir, tc.strict, tc.epochTol)
			compareWeights(t, dir, tc.weightTol)

			accRe := regexp.MustCompile(`test accuracy ([\d.]+)%`)
			ms, mp := accRe.FindStringSubmatch(single.stdout), accRe.FindStringSubmatch(par.stdout)
			if ms == nil || mp == nil {
				t.Fatalf("no test accuracy in the outputs")
			}
			as, _ := strconv.ParseFloat(ms[1], 64)
			ap, _ := strconv.ParseFloat(mp[1], 64)
			if math.Abs(as-ap) > 0.5 {
				t.Errorf("test accuracy %.2f%% with 2 ranks, %.2f%% in one process", ap, as)
			}
		})
	}
}

// checkReport checks what a two-rank run printed and wrote: rank 0
// alone reports, once, for both ranks, and writes the only files.
func checkReport(t *testing.T, dir string, par launched) {
	t.Helper()
	for _, want := range []string{
		"data parallel: 2 processes",
		"32 samples per process per step",
		"replicas: the parameters of all 2 processes are bitwise identical",
		"saved F.safetensors",
		"on 10000 images", // the sharded test set, counted over both ranks
	} {
		if n := strings.Count(par.stdout, want); n != 1 {
			t.Errorf("mpirun output has %q %d times, want once", want, n)
		}
	}
	if strings.Contains(par.stdout, "\r") {
		t.Errorf("mpirun output holds a progress bar redrawn in place")
	}
	if strings.TrimSpace(par.stderr) != "" {
		t.Errorf("mpirun wrote to stderr:\n%s", par.stderr)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"F.loss", "F.safetensors", "G.loss", "G.safetensors"}; !slices.Equal(names, want) {
		t.Errorf("files written: %v, want %v", names, want)
	}
}

// compareLosses compares the two runs' loss logs: the first strict steps
// to 1e-5 relative, and every epoch's mean to epochTol.
func compareLosses(t *testing.T, dir string, strict int, epochTol float64) {
	t.Helper()
	gSteps, gLoss := readLosses(t, filepath.Join(dir, "G.loss"))
	fSteps, fLoss := readLosses(t, filepath.Join(dir, "F.loss"))
	if len(gLoss) != 600 || !slices.Equal(gSteps, fSteps) {
		t.Fatalf("one process logged %d steps, mpirun %d (want 3 epochs of 200 each, the same steps)", len(gLoss), len(fLoss))
	}
	worst, worstAll := 0.0, 0.0
	for i := range gLoss {
		rel := math.Abs(fLoss[i]-gLoss[i]) / math.Abs(gLoss[i])
		worstAll = max(worstAll, rel)
		if i >= strict {
			continue
		}
		worst = max(worst, rel)
		if !(rel <= 1e-5) {
			t.Errorf("step %d: loss %v with 2 ranks, %v in one process (relative difference %.2g > 1e-5)", gSteps[i], fLoss[i], gLoss[i], rel)
		}
	}
	t.Logf("losses: largest relative difference %.3g over the first %d steps, %.3g over all %d", worst, strict, worstAll, len(gLoss))
	for e := range 3 {
		var fs, gs float64
		for i := e * 200; i < (e+1)*200; i++ {
			fs, gs = fs+fLoss[i], gs+gLoss[i]
		}
		if rel := math.Abs(fs-gs) / gs; !(rel <= epochTol) {
			t.Errorf("epoch %d: mean loss %v with 2 ranks, %v in one process (relative difference %.2g > %g)", e+1, fs/200, gs/200, rel, epochTol)
		}
	}
}

// compareWeights compares the two runs' checkpoints, parameters and
// optimiser state, element by element.
func compareWeights(t *testing.T, dir string, tol float64) {
	t.Helper()
	g, _, err := checkpoint.Load(filepath.Join(dir, "G.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := checkpoint.Load(filepath.Join(dir, "F.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != len(g) {
		t.Fatalf("checkpoints hold %d and %d tensors", len(f), len(g))
	}
	worst := 0.0
	for i := range g {
		if f[i].Name != g[i].Name || !f[i].Tensor.Shape().Equal(g[i].Tensor.Shape()) {
			t.Fatalf("tensor %d: %s %v with 2 ranks, %s %v in one process", i, f[i].Name, f[i].Tensor.Shape(), g[i].Name, g[i].Tensor.Shape())
		}
		fv, gv := f[i].Tensor.Float64s(), g[i].Tensor.Float64s()
		for k := range gv {
			d := math.Abs(fv[k] - gv[k])
			worst = max(worst, d)
			if !(d <= tol) {
				t.Fatalf("%s[%d]: %v with 2 ranks, %v in one process (difference %.2g > %g)", g[i].Name, k, fv[k], gv[k], d, tol)
			}
		}
	}
	t.Logf("weights: largest difference over %d tensors %.3g", len(g), worst)
}

// TestDataParallelBroadcastAtStart starts the two ranks with different
// seeds, so that each initialises its weights differently: rank 0's
// parameters, broadcast at the start, must win, and the ranks must end
// bitwise identical (the run checks it and fails if not).
func TestDataParallelBroadcastAtStart(t *testing.T) {
	sporeBin := mpiSpore(t)
	run := []string{sporeBin, "train", "--epochs", "1", "--steps", "20"}
	args := append(slices.Clone(mpirunBase), "-np", "1")
	args = append(append(args, run...), "--seed", "1", ":", "-np", "1")
	args = append(append(args, run...), "--seed", "2")
	r := launch(t, 2*time.Minute, t.TempDir(), nil, "mpirun", args...)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "replicas: the parameters of all 2 processes are bitwise identical") {
		t.Errorf("no replica check in the output:\n%s", r.stdout)
	}
}

// TestDataParallelRefusals launches runs that every rank must refuse, and
// checks that they all stop, with a message naming the cause, and that
// nothing is left running.
func TestDataParallelRefusals(t *testing.T) {
	sporeBin := mpiSpore(t)
	for _, tc := range []struct {
		name string
		args []string // after mpirun's own
		want []string // in stderr
	}{
		{
			// MPMD: one mpirun starts rank 0 with one model and rank 1
			// with another, as a user who mistyped a flag in a hostfile
			// setup might.
			name: "models differ",
			args: []string{"-np", "1", sporeBin, "train", "--model", "mlp", ":", "-np", "1", sporeBin, "train", "--model", "lenet"},
			want: []string{"the ranks' models differ", "parameters entry 0: rank 0 has", "rank 1 has"},
		},
		{
			name: "batch not divisible",
			args: []string{"-np", "2", sporeBin, "train", "--batch", "63"},
			want: []string{"--batch 63 is not a multiple of the 2 processes"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := launch(t, 2*time.Minute, t.TempDir(), nil, "mpirun", append(slices.Clone(mpirunBase), tc.args...)...)
			if r.code == 0 {
				t.Fatalf("exit status 0, want a failure:\n%s\n%s", r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic:") {
				t.Errorf("a Go panic reached the user:\n%s", r.stderr)
			}
			checkNoneLeft(t)
		})
	}
}

// TestDataParallelRankDies kills one rank in the middle of training: the
// other must not wait for it forever. mpirun must end, non-zero, within
// the limit, saying which rank died, with no process left behind.
func TestDataParallelRankDies(t *testing.T) {
	sporeBin := mpiSpore(t)
	for _, victim := range []int{1, 0} {
		t.Run(fmt.Sprintf("rank %d", victim), func(t *testing.T) {
			cmd := exec.Command("mpirun", append(append(mpirunArgs(2), sporeBin), "train", "--epochs", "50")...)
			cmd.Dir = t.TempDir()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until training has begun: rank 0 prints its first
			// progress line after the first steps, when both ranks are in
			// the step loop exchanging gradients.
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				io.Copy(io.Discard, stdout)
			}()
			var out strings.Builder
			started := time.After(2 * time.Minute)
		waitTraining:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						wait(cmd, time.Minute)
						t.Fatalf("mpirun ended before training began:\n%s\n%s", out.String(), errOut.String())
					}
					out.WriteString(l + "\n")
					if strings.HasPrefix(l, "data parallel:") {
						break waitTraining
					}
				case <-started:
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					t.Fatalf("training did not begin within 2 minutes:\n%s", out.String())
				}
			}
			time.Sleep(2 * time.Second) // well into the steps
			var pid int
			for p, rank := range sporeProcesses(t) {
				if rank == victim {
					pid = p
				}
			}
			if pid == 0 {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("no process of rank %d found", victim)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			go func() {
				for range lines {
				}
			}()
			code, hung := wait(cmd, 2*time.Minute)
			if hung {
				t.Fatalf("mpirun still running 2 minutes after rank %d was killed:\n%s", victim, errOut.String())
			}
			if code == 0 {
				t.Errorf("mpirun exited 0 after rank %d was killed", victim)
			}
			if !strings.Contains(errOut.String(), fmt.Sprintf("rank %d", victim)) {
				t.Errorf("stderr does not name rank %d:\n%s", victim, errOut.String())
			}
			t.Logf("exit status %d; stderr:\n%s", code, errOut.String())
			checkNoneLeft(t)
		})
	}
}
