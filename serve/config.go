package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sporeml/spore/tensor"
)

// Config configures a Server.
type Config struct {
	// Repository is the model repository directory, in Triton's layout:
	// DIR/<model>/<version>/model.onnx, versions being positive integers,
	// with an optional DIR/<model>/config.json (see ModelConfig). Empty
	// means no repository: the server serves only the models added with
	// AddModel.
	Repository string
	// Limits bound what the front ends accept; zero fields take their
	// defaults (Limits.WithDefaults). DefaultTimeout is also the deadline
	// of an Infer call whose context has none.
	Limits Limits
	// Poll, when positive, rescans the repository at this interval and
	// reloads the versions whose files changed, loads new models and
	// unloads removed ones. A new version serves only once it has loaded
	// and warmed up; the one it replaces drains (what it holds finishes);
	// a failed load keeps the old one serving and is reported by Index.
	Poll time.Duration
	// Logf receives one line per load, reload, unload and failure (and
	// the stack of a bug inside a model run); nil discards them. It is
	// called from several goroutines at once.
	Logf func(format string, args ...any)
}

// The defaults of a model's scheduling, where its config says nothing.
const (
	// DefaultMaxBatchSize is the max_batch_size of an ONNX model whose
	// inputs and outputs all have a dynamic first dimension, when its
	// config does not give one.
	DefaultMaxBatchSize = 8
	// DefaultMaxQueueSize is a model's queue bound, in requests.
	DefaultMaxQueueSize = 256
	// maxBatchLimit bounds max_batch_size: every batch size up to it is
	// compiled ahead of serving.
	maxBatchLimit = 1024
	// maxInstances bounds instances.
	maxInstances = 64
)

// ModelConfig is a model's DIR/<model>/config.json: Triton's model
// configuration in its JSON form, the fields a CPU server has use for,
// plus the flat keys max_queue_delay_microseconds, max_queue_size,
// instances and threads. Every field is optional; an unknown field is an
// error (a misspelt setting would otherwise be silently ignored).
// Example:
//
//	{
//	  "max_batch_size": 64,
//	  "max_queue_delay_microseconds": 200,
//	  "instances": 2,
//	  "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [1, 28, 28]}],
//	  "output": [{"name": "logits"}],
//	  "version_policy": {"latest": {"num_versions": 1}}
//	}
//
// Triton's "dynamic_batching": {"max_queue_delay_microseconds": N,
// "default_queue_policy": {"max_queue_size": M}} and "instance_group":
// [{"count": K}] say the same as the flat keys (give each setting once).
// Batching is on whenever max_batch_size > 0: unlike Triton, it needs no
// dynamic_batching block.
type ModelConfig struct {
	// Name, when given, must be the model's directory name.
	Name string `json:"name,omitempty"`
	// Platform and Backend, when given, must name ONNX ("onnxruntime_onnx"
	// or "spore_onnx"; "onnxruntime" or "spore"): what a Triton config of
	// an ONNX model says.
	Platform string `json:"platform,omitempty"`
	Backend  string `json:"backend,omitempty"`
	// MaxBatchSize is the largest batch dynamic batching forms (and the
	// largest batch a request may carry); 0 turns batching off: each
	// request runs alone with the shapes it has. Nil takes
	// DefaultMaxBatchSize for a model whose inputs and outputs all have a
	// dynamic first dimension, 0 otherwise.
	MaxBatchSize *int `json:"max_batch_size,omitempty"`
	// MaxQueueDelayMicroseconds is how long the oldest queued request may
	// wait for others to join its batch; 0 batches only what is already
	// queued when an instance comes free (Triton's default).
	MaxQueueDelayMicroseconds *int64 `json:"max_queue_delay_microseconds,omitempty"`
	// MaxQueueSize bounds the requests waiting for the model; past it a
	// request is refused at once with 429. 0 means DefaultMaxQueueSize.
	MaxQueueSize *int `json:"max_queue_size,omitempty"`
	// Instances is the number of model instances run side by side, each
	// with its own compiled plans; 0 means 1.
	Instances *int `json:"instances,omitempty"`
	// Threads is the kernel threads of an instance. Not finished: spore's
	// kernels share one process-wide worker pool (spore serve --threads
	// sizes it), so the value is checked (0..GOMAXPROCS) and otherwise has
	// no effect.
	Threads int `json:"threads,omitempty"`
	// DynamicBatching and InstanceGroup are Triton's spellings of the
	// delay, the queue bound and the instances.
	DynamicBatching *DynamicBatching `json:"dynamic_batching,omitempty"`
	InstanceGroup   []InstanceGroup  `json:"instance_group,omitempty"`
	// Input and Output, when given, describe the model's inputs and
	// outputs as the file declares them, as in Triton: every input must be
	// listed, and Output selects the outputs served, in its order. A
	// data_type must be the file's; dims (without the batch dimension when
	// max_batch_size > 0) must agree with the file's, and fix a dimension
	// the file leaves dynamic, so that the model compiles ahead of serving.
	Input  []ConfigTensor `json:"input,omitempty"`
	Output []ConfigTensor `json:"output,omitempty"`
	// VersionPolicy says which versions serve; nil serves the highest.
	VersionPolicy *VersionPolicy `json:"version_policy,omitempty"`
}

// DynamicBatching is Triton's dynamic_batching block.
type DynamicBatching struct {
	MaxQueueDelayMicroseconds *int64 `json:"max_queue_delay_microseconds,omitempty"`
	DefaultQueuePolicy        *struct {
		MaxQueueSize *int `json:"max_queue_size,omitempty"`
	} `json:"default_queue_policy,omitempty"`
}

// InstanceGroup is one entry of Triton's instance_group; the counts add
// up. Kind, when given, must be KIND_CPU or KIND_AUTO.
type InstanceGroup struct {
	Count int    `json:"count"`
	Kind  string `json:"kind,omitempty"`
}

// ConfigTensor describes one input or output in a ModelConfig.
type ConfigTensor struct {
	Name string `json:"name"`
	// DataType is Triton's TYPE_FP32, TYPE_INT64, ... (or the protocol's
	// FP32, INT64, ...); empty takes the file's.
	DataType string `json:"data_type,omitempty"`
	// Dims is the shape, -1 for a variable dimension; nil takes the
	// file's.
	Dims []int64 `json:"dims,omitempty"`
}

// settings are a config's scheduling settings, each given once.
type settings struct {
	delay     time.Duration
	queueSize int
	instances int
}

// settings merges the flat and Triton spellings, refusing a setting
// given twice.
func (c ModelConfig) settings() (settings, error) {
	var st settings
	delay := c.MaxQueueDelayMicroseconds
	queue := c.MaxQueueSize
	if db := c.DynamicBatching; db != nil {
		if db.MaxQueueDelayMicroseconds != nil {
			if delay != nil {
				return st, fmt.Errorf("max_queue_delay_microseconds is given twice (flat and in dynamic_batching)")
			}
			delay = db.MaxQueueDelayMicroseconds
		}
		if p := db.DefaultQueuePolicy; p != nil && p.MaxQueueSize != nil {
			if queue != nil {
				return st, fmt.Errorf("max_queue_size is given twice (flat and in dynamic_batching.default_queue_policy)")
			}
			queue = p.MaxQueueSize
		}
	}
	if delay != nil {
		if *delay < 0 || *delay > 10_000_000 {
			return st, fmt.Errorf("max_queue_delay_microseconds %d is outside 0..10000000 (10 s)", *delay)
		}
		st.delay = time.Duration(*delay) * time.Microsecond
	}
	if queue != nil {
		if *queue < 0 || *queue > 1<<20 {
			return st, fmt.Errorf("max_queue_size %d is outside 0..%d", *queue, 1<<20)
		}
		st.queueSize = *queue
	}
	if c.Instances != nil && len(c.InstanceGroup) > 0 {
		return st, fmt.Errorf("the instances are given twice (instances and instance_group)")
	}
	if c.Instances != nil {
		st.instances = *c.Instances
	}
	for i, g := range c.InstanceGroup {
		if g.Count < 0 {
			return st, fmt.Errorf("instance_group[%d].count %d is negative", i, g.Count)
		}
		if g.Kind != "" && g.Kind != "KIND_CPU" && g.Kind != "KIND_AUTO" {
			return st, fmt.Errorf("instance_group[%d].kind %q: this server runs on the CPU (KIND_CPU or KIND_AUTO)", i, g.Kind)
		}
		st.instances += g.Count
		if st.instances > maxInstances {
			break
		}
	}
	if st.instances < 0 || st.instances > maxInstances {
		return st, fmt.Errorf("instances %d is outside 0..%d", st.instances, maxInstances)
	}
	return st, nil
}

// configDType reads a ConfigTensor's data_type.
func configDType(s string) (tensor.DType, error) {
	return DTypeOf(strings.TrimPrefix(s, "TYPE_"))
}

// VersionPolicy is Triton's version_policy: exactly one of its fields.
type VersionPolicy struct {
	// Latest serves the NumVersions highest versions.
	Latest *struct {
		NumVersions int `json:"num_versions"`
	} `json:"latest,omitempty"`
	// All serves every version.
	All *struct{} `json:"all,omitempty"`
	// Specific serves the versions listed.
	Specific *struct {
		Versions []int64 `json:"versions"`
	} `json:"specific,omitempty"`
}

// maxConfigBytes bounds a config.json: a config is a few hundred bytes,
// and reading an unbounded file would let a stray one exhaust memory.
const maxConfigBytes = 1 << 20

// readModelConfig reads dir/config.json; a missing file is the zero
// config.
func readModelConfig(dir string) (ModelConfig, error) {
	var c ModelConfig
	path := filepath.Join(dir, "config.json")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return c, fmt.Errorf("%s: %v", path, err)
	}
	if len(data) > maxConfigBytes {
		return c, fmt.Errorf("%s: larger than %d bytes", path, maxConfigBytes)
	}
	if err := parseModelConfig(data, &c); err != nil {
		return c, fmt.Errorf("%s: %v", path, err)
	}
	return c, nil
}

// parseModelConfig decodes and checks a config.json.
func parseModelConfig(data []byte, c *ModelConfig) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return c.validate()
}

// validate checks the ranges of a config's fields.
func (c ModelConfig) validate() error {
	if c.MaxBatchSize != nil && (*c.MaxBatchSize < 0 || *c.MaxBatchSize > maxBatchLimit) {
		return fmt.Errorf("max_batch_size %d is outside 0..%d", *c.MaxBatchSize, maxBatchLimit)
	}
	if _, err := c.settings(); err != nil {
		return err
	}
	switch c.Platform {
	case "", "onnxruntime_onnx", "spore_onnx":
	default:
		return fmt.Errorf("platform %q: this server serves ONNX models (onnxruntime_onnx)", c.Platform)
	}
	switch c.Backend {
	case "", "onnxruntime", "spore":
	default:
		return fmt.Errorf("backend %q: this server serves ONNX models (onnxruntime)", c.Backend)
	}
	if n := runtime.GOMAXPROCS(0); c.Threads < 0 || c.Threads > n {
		return fmt.Errorf("threads %d is outside 0..%d (GOMAXPROCS)", c.Threads, n)
	}
	for _, l := range [][]ConfigTensor{c.Input, c.Output} {
		seen := map[string]bool{}
		for _, t := range l {
			if t.Name == "" {
				return fmt.Errorf("an input or output without a name")
			}
			if seen[t.Name] {
				return fmt.Errorf("%q is listed twice", t.Name)
			}
			seen[t.Name] = true
			if t.DataType != "" {
				if _, err := configDType(t.DataType); err != nil {
					return fmt.Errorf("%q: data_type %q: %v", t.Name, t.DataType, err)
				}
			}
			for _, d := range t.Dims {
				if d < -1 || d == 0 {
					return fmt.Errorf("%q: dims %v: a dimension is positive, or -1 for a variable one", t.Name, t.Dims)
				}
			}
		}
	}
	if p := c.VersionPolicy; p != nil {
		n := 0
		if p.Latest != nil {
			n++
			if p.Latest.NumVersions < 1 {
				return fmt.Errorf("version_policy.latest.num_versions %d: want at least 1", p.Latest.NumVersions)
			}
		}
		if p.All != nil {
			n++
		}
		if p.Specific != nil {
			n++
			if len(p.Specific.Versions) == 0 {
				return fmt.Errorf("version_policy.specific lists no versions")
			}
			for _, v := range p.Specific.Versions {
				if v < 1 {
					return fmt.Errorf("version_policy.specific: version %d is not a positive integer", v)
				}
			}
		}
		if n != 1 {
			return fmt.Errorf("version_policy must have exactly one of latest, all, specific (has %d)", n)
		}
	}
	return nil
}

// selectVersions returns the versions the policy serves out of those
// present (sorted ascending), highest first.
func (c ModelConfig) selectVersions(present []int64) []int64 {
	var out []int64
	p := c.VersionPolicy
	switch {
	case p == nil || p.Latest != nil:
		n := 1
		if p != nil {
			n = p.Latest.NumVersions
		}
		for i := len(present) - 1; i >= 0 && len(out) < n; i-- {
			out = append(out, present[i])
		}
	case p.All != nil:
		for i := len(present) - 1; i >= 0; i-- {
			out = append(out, present[i])
		}
	case p.Specific != nil:
		want := map[int64]bool{}
		for _, v := range p.Specific.Versions {
			want[v] = true
		}
		for i := len(present) - 1; i >= 0; i-- {
			if want[present[i]] {
				out = append(out, present[i])
			}
		}
	}
	return out
}

// maxNameLen bounds a model name.
const maxNameLen = 200

// checkModelName refuses a model name that could reach outside the
// repository or that no directory could have: it must be non-empty, at
// most maxNameLen bytes of letters, digits, '_', '-' and '.', and not
// start with '.' (which also rules out "." and ".."). Path separators,
// NUL and every other byte are refused.
func checkModelName(name string) error {
	if name == "" {
		return errorf(http.StatusBadRequest, "empty model name")
	}
	if len(name) > maxNameLen {
		return errorf(http.StatusBadRequest, "model name of %d bytes is longer than %d", len(name), maxNameLen)
	}
	if name[0] == '.' {
		return errorf(http.StatusBadRequest, "model name %q starts with '.'", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return errorf(http.StatusBadRequest, "model name %q has the character %q (a model name is letters, digits, '_', '-' and '.')", name, rune(c))
		}
	}
	return nil
}

// parseVersion reads a version directory's name: a positive integer in
// canonical form (no sign, no leading zero), as Triton's are.
func parseVersion(s string) (int64, bool) {
	if s == "" || s[0] == '0' || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return 0, false
	}
	return v, true
}

// repoModels lists the model directories of a repository: the
// subdirectories with valid names, sorted. Other entries are ignored, as
// Triton ignores them.
func repoModels(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && checkModelName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// repoVersions lists the version directories of a model directory that
// hold a model.onnx, ascending.
func repoVersions(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var vs []int64
	for _, e := range ents {
		v, ok := parseVersion(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, e.Name(), "model.onnx")); err == nil && st.Mode().IsRegular() {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	return vs, nil
}

// fingerprint summarises the files a version is loaded from — its
// directory's files (the model and any external data) and the model's
// config.json — by name, size and modification time, so that polling
// sees a changed version without reading it.
func fingerprint(modelDir string, version int64) string {
	var b strings.Builder
	add := func(path string) {
		if st, err := os.Stat(path); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", filepath.Base(path), st.Size(), st.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "%s:-;", filepath.Base(path))
		}
	}
	add(filepath.Join(modelDir, "config.json"))
	vdir := filepath.Join(modelDir, strconv.FormatInt(version, 10))
	ents, _ := os.ReadDir(vdir)
	for _, e := range ents {
		add(filepath.Join(vdir, e.Name()))
	}
	return b.String()
}
