package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/tensor"
)

// Server serves the models of a repository, and the models added from Go,
// over the Open Inference Protocol: it is the Backend both front ends
// call, with dynamic batching onto compiled plans, the repository
// extension (Index, Load, Unload), polling for changed versions and
// Prometheus metrics. Its methods are safe for concurrent use.
type Server struct {
	cfg Config
	lim Limits
	met *metrics

	mu      sync.RWMutex
	models  map[string]*model
	closing bool

	// draining counts the batchers retired and still finishing.
	draining sync.WaitGroup
	// stopped is set once Shutdown has drained everything.
	stopped  atomic.Bool
	stopPoll chan struct{}
	pollDone chan struct{}
}

// model is one name the server knows: a repository directory or a model
// added with AddModel.
type model struct {
	name string
	// goModel is the model added with AddModel; nil for a repository one.
	goModel *Model
	// loadMu serialises the loads of this model.
	loadMu sync.Mutex

	// Guarded by Server.mu:
	serving map[string]*version
	// states holds the Index entry of every version known, served or
	// failed.
	states map[string]IndexEntry
	// failure is a failure of the model as a whole (its config.json, no
	// version to serve), reported by Index; "" when none.
	failure string
	// unloaded says Unload was called: polling leaves the model alone
	// until Load.
	unloaded bool

	// failed maps a version whose last load failed to its files'
	// fingerprint then, so that polling does not rebuild it every
	// interval; guarded by loadMu.
	failed map[string]string
}

// version is one served model version.
type version struct {
	sp *spec
	fp string // the files' fingerprint, for polling
	vm *versionMetrics
	b  *batcher
	// insts are the instances the batcher runs.
	insts []*instance
}

// New returns a server for cfg, with every model of the repository loaded
// and warmed up. A model that fails to load does not fail New: Index
// reports it with the reason (and Config.Logf logs it). New fails only for
// a configuration it cannot use, such as a repository that is not a
// directory.
func New(cfg Config) (*Server, error) {
	if cfg.Poll < 0 {
		return nil, fmt.Errorf("serve: negative poll interval %v", cfg.Poll)
	}
	if cfg.Repository != "" {
		st, err := os.Stat(cfg.Repository)
		if err != nil {
			return nil, fmt.Errorf("serve: model repository: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("serve: model repository %s is not a directory", cfg.Repository)
		}
	}
	s := &Server{cfg: cfg, lim: cfg.Limits.WithDefaults(), met: newMetrics(), models: map[string]*model{}}
	if cfg.Repository != "" {
		s.poll(false)
		if cfg.Poll > 0 {
			s.stopPoll, s.pollDone = make(chan struct{}), make(chan struct{})
			go s.pollLoop()
		}
	}
	return s, nil
}

// logf logs through Config.Logf.
func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// Limits returns the limits the server was configured with, defaults
// filled in: what its front ends enforce.
func (s *Server) Limits() Limits { return s.lim }

// AddModel serves m under name (as version "1"), next to the repository's
// models. It compiles and warms up m's instances before it returns, and
// fails if the name is invalid or already served, or m does not run on
// zeros of its declared shapes.
func (s *Server) AddModel(name string, m Model) error {
	if err := checkModelName(name); err != nil {
		return fmt.Errorf("serve: AddModel: %v", err)
	}
	if _, err := specOfModel(name, m); err != nil {
		return fmt.Errorf("serve: AddModel: %v", err)
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return fmt.Errorf("serve: AddModel %q: the server is shutting down", name)
	}
	if _, ok := s.models[name]; ok {
		s.mu.Unlock()
		return fmt.Errorf("serve: AddModel: a model named %q is already served", name)
	}
	if s.cfg.Repository != "" {
		if st, err := os.Stat(filepath.Join(s.cfg.Repository, name)); err == nil && st.IsDir() {
			s.mu.Unlock()
			return fmt.Errorf("serve: AddModel: the repository has a model named %q", name)
		}
	}
	mc := m
	md := &model{name: name, goModel: &mc, serving: map[string]*version{}, states: map[string]IndexEntry{}, failed: map[string]string{}}
	s.models[name] = md
	s.mu.Unlock()
	md.loadMu.Lock()
	defer md.loadMu.Unlock()
	if err := s.loadModel(md, true); err != nil {
		s.mu.Lock()
		delete(s.models, name)
		s.mu.Unlock()
		return fmt.Errorf("serve: AddModel: %v", err)
	}
	return nil
}

// Live reports whether the server is up: true until Shutdown has
// finished.
func (s *Server) Live() bool { return !s.stopped.Load() }

// Ready reports whether the server takes inference requests: it is not
// shutting down, and every model that is meant to serve (not unloaded)
// and has been tried has a version ready — a model whose load failed
// with nothing left serving makes the server not ready, as Triton's
// strict readiness does; a model loading for the first time does not.
func (s *Server) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closing {
		return false
	}
	for _, m := range s.models {
		if !m.unloaded && len(m.serving) == 0 && (len(m.states) > 0 || m.failure != "") {
			return false
		}
	}
	return true
}

// ModelReady returns nil when the model version is ready.
func (s *Server) ModelReady(name, version string) error {
	_, err := s.resolve(name, version)
	return err
}

// ServerMetadata describes the server.
func (s *Server) ServerMetadata() ServerMetadata {
	return ServerMetadata{Name: "spore", Version: moduleVersion(), Extensions: []string{"binary_tensor_data", "model_repository"}}
}

// moduleVersion is spore's module version in the running binary.
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const path = "github.com/sporeml/spore"
	if info.Main.Path == path {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		return "devel"
	}
	for _, d := range info.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "unknown"
}

// ModelMetadata describes a model version (the one its policy serves
// when version is ""): its inputs and outputs, with variable dimensions
// as -1 (the batch dimension, when the model batches, among them), and
// the versions it serves.
func (s *Server) ModelMetadata(name, version string) (ModelMetadata, error) {
	v, err := s.resolve(name, version)
	if err != nil {
		return ModelMetadata{}, err
	}
	md := v.sp.md
	md.Versions = s.servingVersions(name)
	return md, nil
}

// servingVersions lists a model's served versions, highest first.
func (s *Server) servingVersions(name string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.models[name]
	if m == nil {
		return nil
	}
	vs := make([]string, 0, len(m.serving))
	for v := range m.serving {
		vs = append(vs, v)
	}
	sortVersions(vs)
	for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
		vs[i], vs[j] = vs[j], vs[i]
	}
	return vs
}

// sortVersions sorts version strings numerically, ascending.
func sortVersions(vs []string) {
	sort.Slice(vs, func(i, j int) bool {
		a, _ := strconv.ParseInt(vs[i], 10, 64)
		b, _ := strconv.ParseInt(vs[j], 10, 64)
		if a != b {
			return a < b
		}
		return vs[i] < vs[j]
	})
}

// quoteName quotes a client's model name for a message, shortened: a
// name is echoed, not a body.
func quoteName(name string) string {
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return strconv.Quote(name)
}

// resolve returns the served version a request names.
// Expect announces a request on its way to a model's queue (see
// Backend.Expect): the model's batcher waits for it while forming a
// batch. For a model or version that cannot take the request it does
// nothing: Infer will refuse it.
func (s *Server) Expect(model, version string) func() {
	v, err := s.resolve(model, version)
	if err != nil {
		return func() {}
	}
	return v.b.expect()
}

func (s *Server) resolve(name, ver string) (*version, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closing {
		return nil, errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	m := s.models[name]
	if m == nil {
		return nil, errorf(http.StatusNotFound, "unknown model %s", quoteName(name))
	}
	if ver == "" {
		var best *version
		var bestN int64
		for vs, v := range m.serving {
			n, _ := strconv.ParseInt(vs, 10, 64)
			if best == nil || n > bestN {
				best, bestN = v, n
			}
		}
		if best == nil {
			why := "it is not loaded"
			if m.failure != "" {
				why = m.failure
			}
			return nil, errorf(http.StatusServiceUnavailable, "model %s has no version ready: %s", quoteName(name), why)
		}
		return best, nil
	}
	if v := m.serving[ver]; v != nil {
		return v, nil
	}
	if st, ok := m.states[ver]; ok {
		return nil, errorf(http.StatusServiceUnavailable, "model %s version %s is not ready (%s: %s)", quoteName(name), quoteName(ver), st.State, st.Reason)
	}
	return nil, errorf(http.StatusNotFound, "model %s has no version %s", quoteName(name), quoteName(ver))
}

// Infer runs a request: it checks the inputs against the model, queues
// the request, and returns when its batch has run, when ctx is done (the
// request is then dropped from the queue), or at once with 429 when the
// queue is full. A ctx without a deadline gets Limits.DefaultTimeout.
func (s *Server) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	start := time.Now()
	if req == nil {
		return nil, errorf(http.StatusBadRequest, "no request")
	}
	if req.Arrived != nil {
		defer req.Arrived() // on the paths that refuse it before it is queued
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.lim.DefaultTimeout)
		defer cancel()
	}
	if ctx.Err() != nil {
		err := errorf(StatusClientClosedRequest, "the request was cancelled before it was queued")
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = errorf(http.StatusGatewayTimeout, "the request's deadline passed before it was queued")
		}
		s.Reject(req.Model, req.Version, err)
		return nil, err
	}
	// A version retired between resolve and submit (a reload) refuses the
	// request; the next resolve finds its successor. Two retries cover a
	// reload racing with this request; more means something else is wrong.
	for try := 0; ; try++ {
		v, err := s.resolve(req.Model, req.Version)
		if err != nil {
			s.Reject(req.Model, req.Version, err)
			return nil, err
		}
		xs, rows, key, outs, err := v.sp.checkRequest(req)
		if err != nil {
			v.vm.failure.WithLabelValues(reason(err)).Inc()
			return nil, err
		}
		res, err := v.b.infer(ctx, xs, rows, key, req.Arrived)
		if errors.Is(err, errClosed) {
			if try < 2 {
				continue
			}
			err = errorf(http.StatusServiceUnavailable, "model %s version %s is being unloaded", quoteName(req.Model), v.sp.version)
		}
		if err != nil {
			v.vm.failure.WithLabelValues(reason(err)).Inc()
			return nil, err
		}
		resp := &InferResponse{ModelName: v.sp.name, ModelVersion: v.sp.version, ID: req.ID, Outputs: make([]InferOutput, len(outs))}
		for i, j := range outs {
			t := res.outs[j]
			o := InferOutput{Name: v.sp.outputs[j].name, Datatype: Datatype(t.DType()), Tensor: t}
			o.Shape = make([]int64, t.Rank())
			for k, d := range t.Shape() {
				o.Shape[k] = int64(d)
			}
			if len(req.Outputs) > 0 {
				o.Binary = req.Outputs[i].Binary
			}
			resp.Outputs[i] = o
		}
		v.vm.success.Inc()
		v.vm.requestUS.Add(float64(time.Since(start).Microseconds()))
		v.vm.queueUS.Add(float64(res.queue.Microseconds()))
		v.vm.computeUS.Add(float64(res.compute.Microseconds()))
		return resp, nil
	}
}

// Reject counts a request a front end refused before it reached Infer.
// A model or version the server does not serve is counted under empty
// labels, so that clients sending made-up names cannot grow the metrics
// without bound.
func (s *Server) Reject(model, version string, err error) {
	if err == nil {
		return
	}
	s.mu.RLock()
	m := s.models[model]
	if m == nil {
		model, version = "", ""
	} else if version != "" && m.serving[version] == nil {
		version = ""
	}
	s.mu.RUnlock()
	s.met.failure.WithLabelValues(model, version, reason(err)).Inc()
}

// Index lists the models: every version known with its state (READY, or
// UNAVAILABLE with the reason its load failed), a model of the
// repository that is not loaded as one entry without a version. With
// readyOnly, only the READY versions.
func (s *Server) Index(readyOnly bool) []IndexEntry {
	var repo []string
	if s.cfg.Repository != "" {
		repo, _ = repoModels(s.cfg.Repository)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []IndexEntry
	seen := map[string]bool{}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		m := s.models[name]
		if m == nil || (len(m.states) == 0 && len(m.serving) == 0) {
			if readyOnly {
				return
			}
			e := IndexEntry{Name: name, State: "UNAVAILABLE", Reason: "not loaded"}
			if m != nil && m.failure != "" {
				e.Reason = m.failure
			} else if m != nil && m.unloaded {
				e.Reason = "unloaded"
			}
			out = append(out, e)
			return
		}
		vs := make([]string, 0, len(m.states))
		for v := range m.states {
			vs = append(vs, v)
		}
		sortVersions(vs)
		for _, v := range vs {
			e := m.states[v]
			if readyOnly && e.State != "READY" {
				continue
			}
			if m.failure != "" && m.serving[v] != nil {
				e.Reason = strings.TrimPrefix(e.Reason+"; ", "; ") + "the latest load failed, this version keeps serving: " + m.failure
			}
			out = append(out, e)
		}
	}
	for _, n := range repo {
		add(n)
	}
	for n := range s.models {
		add(n)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Load loads or reloads a model: a repository model's versions are read
// again from its directory (every selected version is rebuilt), a Go
// model's instances are compiled again. The new versions serve once
// warmed up; the ones they replace drain. If a version fails, the one
// serving before keeps serving, and the error says why.
func (s *Server) Load(name string) error {
	if err := checkModelName(name); err != nil {
		return err
	}
	m, err := s.entry(name)
	if err != nil {
		return err
	}
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	s.mu.Lock()
	m.unloaded = false
	s.mu.Unlock()
	return s.loadModel(m, true)
}

// entry returns the model entry of name, making one for a repository
// model not seen yet.
func (s *Server) entry(name string) (*model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	if m := s.models[name]; m != nil {
		return m, nil
	}
	if s.cfg.Repository == "" {
		return nil, errorf(http.StatusNotFound, "unknown model %s (the server has no model repository)", quoteName(name))
	}
	st, err := os.Stat(filepath.Join(s.cfg.Repository, name))
	if err != nil || !st.IsDir() {
		return nil, errorf(http.StatusNotFound, "model %s is not in the model repository", quoteName(name))
	}
	m := &model{name: name, serving: map[string]*version{}, states: map[string]IndexEntry{}, failed: map[string]string{}}
	s.models[name] = m
	return m, nil
}

// Unload stops serving a model: its versions drain (what they hold
// finishes) and new requests get 503 until Load. Polling leaves an
// unloaded model alone.
func (s *Server) Unload(name string) error {
	if err := checkModelName(name); err != nil {
		return err
	}
	s.mu.RLock()
	m := s.models[name]
	s.mu.RUnlock()
	if m == nil {
		return errorf(http.StatusNotFound, "unknown model %s", quoteName(name))
	}
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	s.mu.Lock()
	old := m.serving
	m.serving = map[string]*version{}
	m.states = map[string]IndexEntry{}
	m.unloaded = true
	s.mu.Unlock()
	for _, v := range old {
		s.retire(v, nil)
	}
	s.logf("unloaded model %s", name)
	return nil
}

// retire closes a version's batcher; once it has drained, the version's
// metric series are dropped unless its successor (keep) serves under the
// same labels.
func (s *Server) retire(v *version, keep map[string]*version) {
	v.b.close()
	forget := keep[v.sp.version] == nil
	s.draining.Add(1)
	go func() {
		defer s.draining.Done()
		v.b.wait()
		if forget {
			s.met.forget(v.sp.name, v.sp.version)
		}
	}()
}

// loadModel (re)loads m; m.loadMu is held. With force, every selected
// version is rebuilt; without (polling), only those whose files changed
// since they loaded, or since their last load failed.
func (s *Server) loadModel(m *model, force bool) error {
	if m.goModel != nil {
		sp, err := specOfModel(m.name, *m.goModel)
		if err != nil {
			return err
		}
		v, err := s.buildVersion(sp, "")
		if err != nil {
			s.mu.Lock()
			e := IndexEntry{Name: m.name, Version: "1", State: "UNAVAILABLE", Reason: err.Error()}
			if m.serving["1"] != nil {
				e.State, e.Reason = "READY", "reload failed, the previous load keeps serving: "+err.Error()
			}
			m.states["1"] = e
			s.mu.Unlock()
			return errorf(http.StatusBadRequest, "model %q: %v", m.name, err)
		}
		s.install(m, map[string]*version{"1": v}, map[string]IndexEntry{"1": {Name: m.name, Version: "1", State: "READY"}})
		s.logf("model %s loaded: %s", m.name, v.describe())
		return nil
	}
	dir := filepath.Join(s.cfg.Repository, m.name)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		s.remove(m)
		return errorf(http.StatusNotFound, "model %s is not in the model repository", quoteName(m.name))
	}
	fail := func(err error) error {
		s.mu.Lock()
		again := m.failure == err.Error()
		m.failure = err.Error()
		s.mu.Unlock()
		if !again { // polling would say it every interval
			s.logf("model %s: %v", m.name, err)
		}
		return errorf(http.StatusBadRequest, "model %q: %v", m.name, err)
	}
	cfg, err := readModelConfig(dir)
	if err != nil {
		return fail(err)
	}
	present, err := repoVersions(dir)
	if err != nil {
		return fail(err)
	}
	selected := cfg.selectVersions(present)
	if len(selected) == 0 {
		return fail(fmt.Errorf("no version to serve (versions with a model.onnx: %v; the version policy selects none of them)", present))
	}
	s.mu.RLock()
	old, oldStates := m.serving, m.states
	s.mu.RUnlock()
	next := map[string]*version{}
	states := map[string]IndexEntry{}
	var errs []string
	for _, n := range selected {
		vs := strconv.FormatInt(n, 10)
		fp := fingerprint(dir, n)
		cur := old[vs]
		if !force && cur != nil && cur.fp == fp {
			next[vs], states[vs] = cur, oldStates[vs]
			continue
		}
		if !force && m.failed[vs] == fp {
			// Failed before with these very files: wait for a change.
			if cur != nil {
				next[vs] = cur
			}
			states[vs] = oldStates[vs]
			continue
		}
		sp, err := onnxSpec(m.name, vs, filepath.Join(dir, vs), cfg)
		var v *version
		if err == nil {
			v, err = s.buildVersion(sp, fp)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("version %s: %v", vs, err))
			s.logf("model %s version %s failed to load: %v", m.name, vs, err)
			m.failed[vs] = fp
			e := IndexEntry{Name: m.name, Version: vs, State: "UNAVAILABLE", Reason: err.Error()}
			if cur != nil {
				next[vs] = cur // the old load keeps serving
				e.State, e.Reason = "READY", "reload failed, the previous load keeps serving: "+err.Error()
			}
			states[vs] = e
			continue
		}
		delete(m.failed, vs)
		next[vs], states[vs] = v, IndexEntry{Name: m.name, Version: vs, State: "READY"}
		s.logf("model %s version %s loaded: %s", m.name, vs, v.describe())
	}
	if len(next) == 0 {
		// Nothing selected loads: what served before keeps serving.
		for vs, v := range old {
			next[vs], states[vs] = v, oldStates[vs]
		}
	}
	s.install(m, next, states)
	if len(errs) > 0 {
		s.mu.Lock()
		if len(next) == 0 {
			m.failure = "no version loaded: " + strings.Join(errs, "; ")
		}
		s.mu.Unlock()
		return errorf(http.StatusBadRequest, "model %q: %s", m.name, strings.Join(errs, "; "))
	}
	return nil
}

// install makes next the served versions of m, with states their Index
// entries, and retires the versions it replaces.
func (s *Server) install(m *model, next map[string]*version, states map[string]IndexEntry) {
	s.mu.Lock()
	old := m.serving
	m.serving, m.states, m.failure = next, states, ""
	closing := s.closing
	s.mu.Unlock()
	for vs, v := range old {
		if next[vs] != v {
			s.retire(v, next)
		}
	}
	if closing {
		// Shutdown began while this load ran: it retired what it saw, so
		// the new versions are retired here.
		for vs, v := range next {
			if old[vs] != v {
				s.retire(v, next)
			}
		}
	}
}

// remove forgets a repository model whose directory is gone.
func (s *Server) remove(m *model) {
	s.mu.Lock()
	old := m.serving
	if s.models[m.name] == m {
		delete(s.models, m.name)
	}
	s.mu.Unlock()
	for _, v := range old {
		s.retire(v, nil)
	}
	s.met.forget(m.name, "")
	if len(old) > 0 {
		s.logf("model %s: its directory is gone; unloaded", m.name)
	}
}

// buildVersion compiles and warms up sp's instances and starts its
// batcher.
func (s *Server) buildVersion(sp *spec, fp string) (*version, error) {
	insts := make([]*instance, sp.instances)
	for i := range insts {
		in, err := newInstance(sp, i)
		if err != nil {
			return nil, err
		}
		insts[i] = in
	}
	vm := newVersionMetrics(s.met, sp.name, sp.version)
	b := newBatcher(sp, vm, insts)
	b.logf = s.cfg.Logf
	return &version{sp: sp, fp: fp, vm: vm, b: b, insts: insts}, nil
}

// describe says how a version is scheduled and compiled, for the log.
func (v *version) describe() string {
	sp := v.sp
	d := fmt.Sprintf("%d instance(s), ", sp.instances)
	in := v.insts[0]
	switch {
	case sp.maxBatch == 0:
		d += "no batching"
	case in.dynamic:
		d += fmt.Sprintf("batches up to %d rows on one plan per instance (dynamic batch dimension)", sp.maxBatch)
	case !sp.fixed():
		d += fmt.Sprintf("batches up to %d rows; a variable input dimension makes each new shape compile on its first request", sp.maxBatch)
	default:
		d += fmt.Sprintf("batches up to %d rows on one plan per batch size (%s)", sp.maxBatch, in.whyPerShape)
	}
	return d
}

// onnxSpec loads dir/model.onnx and describes it as cfg configures.
func onnxSpec(name, vs, dir string, cfg ModelConfig) (*spec, error) {
	if cfg.Name != "" && cfg.Name != name {
		return nil, fmt.Errorf("config.json names the model %q, its directory %q", cfg.Name, name)
	}
	set, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	om, err := onnx.LoadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return nil, err
	}
	ins, outs := om.Inputs(), om.OutputInfo()
	inCfg := map[string]ConfigTensor{}
	if len(cfg.Input) > 0 {
		for _, c := range cfg.Input {
			inCfg[c.Name] = c
			if !hasInfo(ins, c.Name) {
				return nil, fmt.Errorf("config.json lists input %q, the model's inputs are %s", c.Name, infoNames(ins))
			}
		}
		for _, vi := range ins {
			if _, ok := inCfg[vi.Name]; !ok {
				return nil, fmt.Errorf("config.json does not list the model's input %q (every input must be listed)", vi.Name)
			}
		}
	}
	sp := &spec{name: name, version: vs, platform: "spore_onnx", delay: set.delay, queueSize: set.queueSize, instances: set.instances}
	var outCfg []ConfigTensor
	if len(cfg.Output) > 0 {
		for _, c := range cfg.Output {
			j := -1
			for k, vi := range outs {
				if vi.Name == c.Name {
					j = k
				}
			}
			if j < 0 {
				return nil, fmt.Errorf("config.json lists output %q, the model's outputs are %s", c.Name, infoNames(outs))
			}
			sp.outIndex = append(sp.outIndex, j)
			outCfg = append(outCfg, c)
		}
	} else {
		for k := range outs {
			sp.outIndex = append(sp.outIndex, k)
			outCfg = append(outCfg, ConfigTensor{})
		}
	}
	served := make([]onnx.ValueInfo, len(sp.outIndex))
	for i, j := range sp.outIndex {
		served[i] = outs[j]
	}
	all := append(append([]onnx.ValueInfo(nil), ins...), served...)
	leading := true
	for _, vi := range all {
		if len(vi.Shape) == 0 || vi.Shape[0] >= 0 {
			leading = false
		}
	}
	switch {
	case cfg.MaxBatchSize != nil:
		sp.maxBatch = *cfg.MaxBatchSize
	case leading:
		sp.maxBatch = DefaultMaxBatchSize
	}
	if sp.maxBatch > 0 && !leading {
		for _, vi := range all {
			if len(vi.Shape) == 0 || vi.Shape[0] >= 0 {
				return nil, fmt.Errorf("max_batch_size is %d, but %s has no dynamic first dimension to batch along; set max_batch_size 0", sp.maxBatch, vi)
			}
		}
	}
	conv := func(what string, vi onnx.ValueInfo, c ConfigTensor) (tspec, error) {
		if vi.DType == tensor.Invalid {
			return tspec{}, fmt.Errorf("%s %q has an element type this server cannot hold", what, vi.Name)
		}
		t := tspec{name: vi.Name, dt: vi.DType, anyShape: vi.Shape == nil}
		if c.DataType != "" {
			if dt, _ := configDType(c.DataType); dt != vi.DType {
				return t, fmt.Errorf("config.json gives %s %q data_type %s, the model's is %s", what, vi.Name, c.DataType, Datatype(vi.DType))
			}
		}
		if vi.Shape != nil {
			t.dims = append([]int64{}, vi.Shape...)
			if sp.maxBatch > 0 {
				t.dims = t.dims[1:]
			}
		}
		if c.Dims != nil {
			ok := t.anyShape || len(c.Dims) == len(t.dims)
			for k := 0; ok && !t.anyShape && k < len(c.Dims); k++ {
				ok = c.Dims[k] == -1 || t.dims[k] == -1 || c.Dims[k] == t.dims[k]
			}
			if !ok {
				return t, fmt.Errorf("config.json gives %s %q dims %v, the model's are %v (without the batch dimension when max_batch_size > 0)", what, vi.Name, c.Dims, t.dims)
			}
			merged := append([]int64{}, c.Dims...)
			for k := range merged {
				if merged[k] == -1 && !t.anyShape {
					merged[k] = t.dims[k]
				}
			}
			t.dims, t.anyShape = merged, false
		}
		return t, nil
	}
	sp.inputs = make([]tspec, len(ins))
	for i, vi := range ins {
		if sp.inputs[i], err = conv("input", vi, inCfg[vi.Name]); err != nil {
			return nil, err
		}
	}
	sp.outputs = make([]tspec, len(served))
	for i, vi := range served {
		if sp.outputs[i], err = conv("output", vi, outCfg[i]); err != nil {
			return nil, err
		}
	}
	sp.fn = om.Outputs
	sp.finish()
	return sp, nil
}

func hasInfo(vis []onnx.ValueInfo, name string) bool {
	for _, vi := range vis {
		if vi.Name == name {
			return true
		}
	}
	return false
}

func infoNames(vis []onnx.ValueInfo) string {
	ns := make([]string, len(vis))
	for i, vi := range vis {
		ns[i] = strconv.Quote(vi.Name)
	}
	return strings.Join(ns, ", ")
}

// poll scans the repository: it loads new models and the versions whose
// files changed (all of them when force), and forgets models whose
// directory is gone. Explicitly unloaded models are left alone.
func (s *Server) poll(force bool) {
	names, err := repoModels(s.cfg.Repository)
	if err != nil {
		s.logf("model repository: %v", err)
		return
	}
	onDisk := map[string]bool{}
	for _, n := range names {
		onDisk[n] = true
		m, err := s.entry(n)
		if err != nil {
			return // shutting down
		}
		m.loadMu.Lock()
		s.mu.RLock()
		// A Go model whose name a new directory took keeps serving (and
		// the directory is ignored); an unloaded model waits for Load.
		skip := m.unloaded || m.goModel != nil
		s.mu.RUnlock()
		if !skip {
			s.loadModel(m, force) // failures are recorded for Index and logged
		}
		m.loadMu.Unlock()
	}
	s.mu.RLock()
	var gone []*model
	for n, m := range s.models {
		if m.goModel == nil && !onDisk[n] {
			gone = append(gone, m)
		}
	}
	s.mu.RUnlock()
	for _, m := range gone {
		m.loadMu.Lock()
		s.remove(m)
		m.loadMu.Unlock()
	}
}

// pollLoop polls every Config.Poll until Shutdown.
func (s *Server) pollLoop() {
	defer close(s.pollDone)
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-s.stopPoll:
			return
		case <-t.C:
			s.poll(false)
		}
	}
}

// Shutdown stops accepting requests (Infer answers 503, Ready turns
// false), finishes every request already queued, and returns once all of
// them are answered, or with ctx's error when ctx ends first.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	already := s.closing
	s.closing = true
	var all []*version
	for _, m := range s.models {
		for _, v := range m.serving {
			all = append(all, v)
		}
	}
	s.mu.Unlock()
	if !already {
		if s.stopPoll != nil {
			close(s.stopPoll)
		}
		for _, v := range all {
			s.retire(v, map[string]*version{v.sp.version: v}) // keep the final counts readable
		}
	}
	done := make(chan struct{})
	go func() {
		if s.pollDone != nil {
			<-s.pollDone
		}
		s.draining.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.stopped.Store(true)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("serve: shutdown: %w (requests still running)", ctx.Err())
	}
}

// MetricsHandler serves the server's metrics in Prometheus' text format
// (what Handler mounts at /metrics).
func (s *Server) MetricsHandler() http.Handler { return s.met.handler() }

// Handler returns the server's HTTP handler: the Open Inference
// Protocol's REST endpoints under /v2 and the metrics at /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler())
	mux.Handle("/", NewHTTPHandler(s, s.lim))
	return mux
}

func asError(err error, e **Error) bool { return errors.As(err, e) }
