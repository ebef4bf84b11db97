package onnx

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/tensor"
)

// ONNX Runtime (npm's onnxruntime-node) is the referee of the export
// tests: a model spore writes must run there and agree with spore. It is
// installed once into onnx/testdata/.ort (git-ignored), or taken from
// SPORE_ORT_DIR, a folder whose node_modules holds it already.
const (
	ortPackage = "onnxruntime-node@1.30.0"
	ortEnv     = "SPORE_ORT_DIR"
)

var (
	ortOnce sync.Once
	ortDir  string // folder holding node_modules/onnxruntime-node
	ortSkip string // why the tests cannot run ONNX Runtime here
	ortErr  error  // an installation failure that is not a network one
)

// ortInstalled reports whether dir/node_modules holds onnxruntime-node.
func ortInstalled(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "node_modules", "onnxruntime-node", "package.json"))
	return err == nil
}

// npmNetworkError matches npm's messages for a registry it cannot reach.
var npmNetworkError = regexp.MustCompile(`(?i)ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|socket hang up|getaddrinfo`)

// findORT locates or installs ONNX Runtime, once per test binary.
func findORT() {
	if _, err := exec.LookPath("node"); err != nil {
		ortSkip = "node is not installed (apt-get install -y nodejs npm)"
		return
	}
	if d := os.Getenv(ortEnv); d != "" {
		if !ortInstalled(d) {
			ortErr = fmt.Errorf("%s=%s has no node_modules/onnxruntime-node", ortEnv, d)
			return
		}
		ortDir = d
		return
	}
	dir, err := filepath.Abs(filepath.Join("testdata", ".ort"))
	if err != nil {
		ortErr = err
		return
	}
	if ortInstalled(dir) {
		ortDir = dir
		return
	}
	if _, err := exec.LookPath("npm"); err != nil {
		ortSkip = "npm is not installed (apt-get install -y nodejs npm), so ONNX Runtime cannot be installed"
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		ortErr = err
		return
	}
	// Test binaries of several packages (or -count runs) may start at
	// once: a lock directory, made atomically, lets one of them install
	// while the others wait for it.
	lock := filepath.Join(dir, ".lock")
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if err := os.Mkdir(lock, 0o755); err == nil {
			break
		} else if !errors.Is(err, os.ErrExist) {
			ortErr = err
			return
		}
		if st, err := os.Stat(lock); err == nil && time.Since(st.ModTime()) > 15*time.Minute {
			os.Remove(lock) // left by an installer that died
			continue
		}
		if time.Now().After(deadline) {
			ortErr = fmt.Errorf("waited 10 minutes for another test's ONNX Runtime install (lock %s)", lock)
			return
		}
		time.Sleep(time.Second)
	}
	defer os.Remove(lock)
	if ortInstalled(dir) { // installed by the binary that held the lock
		ortDir = dir
		return
	}
	cmd := exec.Command("npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", dir, ortPackage)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if npmNetworkError.Match(out) {
			ortSkip = fmt.Sprintf("npm cannot reach the registry to install %s: %s", ortPackage, lastLines(string(out), 3))
			return
		}
		ortErr = fmt.Errorf("npm install %s: %v\n%s", ortPackage, err, out)
		return
	}
	if !ortInstalled(dir) {
		ortErr = fmt.Errorf("npm install %s succeeded but %s has no onnxruntime-node", ortPackage, dir)
		return
	}
	ortDir = dir
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// needORT skips the test when ONNX Runtime cannot be had because npm (or
// node) is missing or cannot reach the registry, and fails it when the
// installation failed for any other reason.
func needORT(t testing.TB) {
	t.Helper()
	ortOnce.Do(findORT)
	if ortErr != nil {
		t.Fatalf("ONNX Runtime: %v", ortErr)
	}
	if ortSkip != "" {
		t.Skipf("ONNX Runtime unavailable: %s", ortSkip)
	}
}

// runORT runs the model at modelPath in ONNX Runtime on the named inputs
// and returns its outputs by name.
func runORT(t testing.TB, modelPath string, inputs map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	needORT(t)
	dir := t.TempDir()
	args := []string{filepath.Join("testdata", "ortrun.js"), modelPath, filepath.Join(dir, "out")}
	i := 0
	for name, x := range inputs {
		f := filepath.Join(dir, fmt.Sprintf("in%d.npy", i))
		i++
		if err := npy.WriteFile(f, x); err != nil {
			t.Fatalf("writing input %s: %v", name, err)
		}
		args = append(args, name+"="+f)
	}
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(ortDir, "node_modules"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ONNX Runtime on %s: %v\n%s", modelPath, err, stderr.String())
	}
	var res struct{ Outputs []string }
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("ONNX Runtime on %s: reading its report %q: %v", modelPath, out, err)
	}
	outs := map[string]*tensor.Tensor{}
	safe := regexp.MustCompile(`[^A-Za-z0-9_.-]`)
	for _, name := range res.Outputs {
		y, err := npy.ReadFile(filepath.Join(dir, "out", safe.ReplaceAllString(name, "_")+".npy"))
		if err != nil {
			t.Fatalf("ONNX Runtime output %s: %v", name, err)
		}
		outs[name] = y
	}
	return outs
}

// ortJob is one model run of runORTBatch.
type ortJob struct {
	Model  string                    // path of the model
	Inputs map[string]*tensor.Tensor // by input name
}

// ortResult is what one job gave: the outputs by name, or why ONNX
// Runtime refused the model.
type ortResult struct {
	Outputs map[string]*tensor.Tensor
	Err     string
}

// runORTBatch runs many models in one ONNX Runtime process (ortrun.js
// --batch), so that a test over hundreds of small models does not start
// node hundreds of times. A model that ONNX Runtime refuses fails its
// job, not the others.
func runORTBatch(t testing.TB, jobs []ortJob) []ortResult {
	t.Helper()
	needORT(t)
	dir := t.TempDir()
	type wire struct {
		Model  string            `json:"model"`
		Outdir string            `json:"outdir"`
		Inputs map[string]string `json:"inputs"`
	}
	ws := make([]wire, len(jobs))
	for i, j := range jobs {
		w := wire{Model: j.Model, Outdir: filepath.Join(dir, fmt.Sprintf("out%d", i)), Inputs: map[string]string{}}
		k := 0
		for name, x := range j.Inputs {
			f := filepath.Join(dir, fmt.Sprintf("in%d_%d.npy", i, k))
			k++
			if err := npy.WriteFile(f, x); err != nil {
				t.Fatalf("job %d: writing input %s: %v", i, name, err)
			}
			w.Inputs[name] = f
		}
		ws[i] = w
	}
	spec, err := json.Marshal(ws)
	if err != nil {
		t.Fatal(err)
	}
	jobsFile := filepath.Join(dir, "jobs.json")
	if err := os.WriteFile(jobsFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join("testdata", "ortrun.js"), "--batch", jobsFile)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(ortDir, "node_modules"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ONNX Runtime batch: %v\n%s", err, stderr.String())
	}
	var res struct {
		Results []struct {
			Outputs []string
			Error   string
		}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || len(res.Results) != len(jobs) {
		t.Fatalf("ONNX Runtime batch: reading its report (%d results for %d jobs): %v", len(res.Results), len(jobs), err)
	}
	safe := regexp.MustCompile(`[^A-Za-z0-9_.-]`)
	results := make([]ortResult, len(jobs))
	for i, r := range res.Results {
		if r.Error != "" {
			results[i].Err = r.Error
			continue
		}
		results[i].Outputs = map[string]*tensor.Tensor{}
		for _, name := range r.Outputs {
			y, err := npy.ReadFile(filepath.Join(ws[i].Outdir, safe.ReplaceAllString(name, "_")+".npy"))
			if err != nil {
				t.Fatalf("job %d: ONNX Runtime output %s: %v", i, name, err)
			}
			results[i].Outputs[name] = y
		}
	}
	return results
}
