package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sporeml/spore/internal/atomicfile"
)

// Dir is the directory of a run (a summary log dir's run) that holds the
// profiles of its compiled functions, one JSON file per function, beside
// the compiled graphs' records (summary.GraphDir); the dashboard shows
// each beside its graph.
const Dir = "profiles"

// FunctionRecord is a compiled function's profile as a file holds it.
type FunctionRecord struct {
	// Name and Inputs are the function's (Function.Name, Inputs): with
	// Nodes, what matches the profile to the compile record of its graph
	// (a record's name, the start of its signature, and the number of
	// nodes of its last stage).
	Name   string `json:"name"`
	Inputs string `json:"inputs"`
	Nodes  int    `json:"nodes"`
	// Parent names the function that runs this one as a control-flow
	// body, and ParentStep the ID of its step; empty for others.
	Parent     string `json:"parent,omitempty"`
	ParentStep int    `json:"parentStep,omitempty"`
	Runs       int    `json:"runs"`
	TimeNs     int64  `json:"timeNs"`
	// Steps are the plan's steps in the order they ran.
	Steps []StepRecord `json:"steps"`
}

// StepRecord is one step of a FunctionRecord (see Step).
type StepRecord struct {
	ID       int      `json:"id"`
	Op       string   `json:"op"`
	Absorbed []string `json:"absorbed"`
	Shape    string   `json:"shape"`
	Calls    int      `json:"calls"`
	TotalNs  int64    `json:"totalNs"`
	SelfNs   int64    `json:"selfNs"`
	FLOPs    int64    `json:"flops"`
	Bytes    int64    `json:"bytes"`
}

// Record returns f as a file holds it.
func (f *Function) Record() FunctionRecord {
	rec := FunctionRecord{Name: f.Name, Inputs: f.Inputs, Nodes: f.Nodes, Runs: f.Runs, TimeNs: int64(f.Time), Steps: []StepRecord{}}
	if f.Parent != nil {
		rec.Parent = f.Parent.Name
		rec.ParentStep = f.Parent.Steps[f.ParentStep].ID
	}
	for _, s := range f.Steps {
		abs := s.Absorbed
		if abs == nil {
			abs = []string{}
		}
		rec.Steps = append(rec.Steps, StepRecord{ID: s.ID, Op: s.Op, Absorbed: abs, Shape: s.Shape, Calls: s.Calls,
			TotalNs: int64(s.Total), SelfNs: int64(s.Self), FLOPs: s.FLOPs, Bytes: s.Bytes})
	}
	return rec
}

// Save writes every function's record to runDir/profiles/<name>-<n>.json
// (name made safe for a file name, n counting from 1 past the files
// already there), each file whole or not at all.
func (r *Report) Save(runDir string) error {
	dir := filepath.Join(runDir, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	next := map[string]int{}
	for _, f := range r.Functions {
		data, err := json.Marshal(f.Record())
		if err != nil {
			return fmt.Errorf("profile: %s: %w", f.Name, err)
		}
		name := fileName(f.Name)
		var path string
		for {
			next[name]++
			path = filepath.Join(dir, name+"-"+strconv.Itoa(next[name])+".json")
			if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
				break
			}
		}
		if err := atomicfile.WriteFile(path, data); err != nil {
			return fmt.Errorf("profile: writing %s: %w", path, err)
		}
	}
	return nil
}

// ReadRecords reads the function records of a run directory's profiles
// (none when it has no profiles directory).
func ReadRecords(runDir string) ([]FunctionRecord, error) {
	dir := filepath.Join(runDir, Dir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	var out []FunctionRecord
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		var rec FunctionRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("profile: %s: %w", e.Name(), err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// fileName keeps letters, digits, '.', '_' and '-' (but a leading '.')
// and turns the rest into '_', cut to 100 bytes.
func fileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	if len(b) == 0 {
		return "function"
	}
	if b[0] == '.' {
		b[0] = '_' // a leading dot marks a file being written
	}
	return string(b)
}
