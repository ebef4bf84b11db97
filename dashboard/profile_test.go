package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/summary"
)

// profiledRun writes a run whose compiled function was recorded (its
// graph record, through WatchCompiles) and profiled, the way spore train
// --profile --summary-dir writes one, and returns the log dir and the
// record's file.
func profiledRun(t *testing.T) (logdir, file string, rec spore.CompileRecord) {
	t.Helper()
	logdir = t.TempDir()
	dir := filepath.Join(logdir, "run")
	w, err := summary.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	var recs []spore.CompileRecord
	stop := spore.WatchCompiles(func(r spore.CompileRecord) { recs = append(recs, r) })
	f := spore.Jit(func(x *spore.Tensor) *spore.Tensor { return ops.Sum(ops.Tanh(ops.MatMul(x, x)), 1) }, spore.JitConfig{Name: "layer"})
	x := spore.RandUniform(spore.Float32, -1, 1, 16, 16)
	f(x)
	stop()
	if len(recs) != 1 {
		t.Fatalf("%d compilations recorded, want 1", len(recs))
	}
	rec = recs[0]
	if err := w.AddGraph(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := spore.Profile(func() {
		for range 3 {
			f(x)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Save(dir); err != nil {
		t.Fatal(err)
	}
	return logdir, "graphs/layer-1.json", rec
}

func TestProfileEndpoint(t *testing.T) {
	logdir, file, rec := profiledRun(t)
	s, err := New(logdir)
	if err != nil {
		t.Fatal(err)
	}
	resp := get(s, "127.0.0.1", http.MethodGet, "/api/profile?"+url.Values{"run": {"run"}, "file": {file}}.Encode())
	if resp.Code != http.StatusOK {
		t.Fatalf("status %d: %s", resp.Code, resp.Body)
	}
	var v profileView
	if err := json.Unmarshal(resp.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Function.Name != "layer" || v.Function.Runs != 3 || len(v.Nodes) != len(v.Function.Steps) || len(v.Nodes) == 0 {
		t.Fatalf("profile %+v, nodes %v", v.Function, v.Nodes)
	}
	// Each step's node, in the record's last stage, is an op of the
	// step's name.
	last := rec.Passes[len(rec.Passes)-1].Graph
	byID := map[int]string{}
	for _, n := range last.Nodes {
		byID[n.ID] = n.Op
	}
	for i, st := range v.Function.Steps {
		if op, ok := byID[v.Nodes[i]]; !ok || op != st.Op || st.Calls != 3 {
			t.Errorf("step %d (%s, %d calls) maps to node %d (%q)", i, st.Op, st.Calls, v.Nodes[i], op)
		}
	}

	// Errors: missing parameters, an unknown file, and a record with no
	// profile (another function's).
	for _, c := range []struct {
		target string
		code   int
		want   string
	}{
		{"/api/profile?run=run", http.StatusBadRequest, "needs run and file"},
		{"/api/profile?run=run&file=graphs/nope.json", http.StatusNotFound, "has no graph file"},
	} {
		resp := get(s, "127.0.0.1", http.MethodGet, c.target)
		if resp.Code != c.code || !strings.Contains(resp.Body.String(), c.want) {
			t.Errorf("%s: %d %s; want %d saying %q", c.target, resp.Code, resp.Body, c.code, c.want)
		}
	}
}

// TestProfileMatchesOnlyItsGraph: a profile of the same function at
// other shapes, or of a graph with other ops, is not matched.
func TestProfileMatchesOnlyItsGraph(t *testing.T) {
	logdir, _, rec := profiledRun(t)
	var shape recordShape
	data, _ := json.Marshal(rec)
	if err := json.Unmarshal(data, &shape); err != nil {
		t.Fatal(err)
	}
	s, _ := New(logdir)
	resp := get(s, "127.0.0.1", http.MethodGet, "/api/profile?run=run&file=graphs/layer-1.json")
	var v profileView
	if err := json.Unmarshal(resp.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if _, ok := matchProfile(&shape, &v.Function); !ok {
		t.Fatal("the profile does not match its own function's record")
	}
	other := v.Function
	other.Inputs = "(float32[8,8])"
	if _, ok := matchProfile(&shape, &other); ok {
		t.Error("a profile at other shapes matched")
	}
	other = v.Function
	other.Steps = append(other.Steps[:0:0], v.Function.Steps...)
	other.Steps[0].Op = "Conv2D"
	if _, ok := matchProfile(&shape, &other); ok {
		t.Error("a profile whose step names another op matched")
	}
}
