package dashboard

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/summary"
)

// graphFixture is a compiled function's record as the summary writer
// stores it: two passes of a small dense layer, the second fusing
// MatMul, Add and ReLU into one node that keeps no old id.
const graphFixture = `{"name":"dense","signature":"(float32[4,3])","level":"O1","passes":[
 {"pass":"trace","text":"func dense(%0: f32[4,3]) -> (f32[4,2])\n  %1 = param \"w\" : f32[2,3]\n  %2 = MatMul(%0, %1) : f32[4,2]\n  %3 = ReLU(%2) : f32[4,2]\n",
  "graph":{"nodes":[
   {"id":0,"op":"input","kind":"input","inputs":[],"shape":[4,3],"dtype":"float32","attrs":{"index":"0"},"pass":"trace","fused":[]},
   {"id":1,"op":"param","kind":"param","inputs":[],"shape":[2,3],"dtype":"float32","attrs":{"name":"w"},"pass":"trace","fused":[]},
   {"id":2,"op":"MatMul","kind":"op","inputs":[0,1],"shape":[4,2],"dtype":"float32","attrs":{"transB":"true"},"pass":"trace","fused":[],"source":"model.go:12"},
   {"id":3,"op":"ReLU","kind":"op","inputs":[2],"shape":[4,2],"dtype":"float32","pass":"trace","fused":[],"source":"model.go:13"}],
   "outputs":[3]}},
 {"pass":"anchor","text":"func dense(%0: f32[4,3]) -> (f32[4,2])\n  %1 = param \"w\" : f32[2,3]\n  %2 = Anchor(%0, %1) {op=MatMul(ta=false tb=true) epilogue: in r0 full; r1 = ReLU r0; out r1} : f32[4,2]\n",
  "graph":{"nodes":[
   {"id":0,"op":"input","kind":"input","inputs":[],"shape":[4,3],"dtype":"float32","attrs":{"index":"0"},"pass":"trace","fused":[]},
   {"id":1,"op":"param","kind":"param","inputs":[],"shape":[2,3],"dtype":"float32","attrs":{"name":"w"},"pass":"trace","fused":[]},
   {"id":4,"op":"Anchor","kind":"fused","inputs":[0,1],"shape":[4,2],"dtype":"float32","attrs":{"op":"MatMul"},"pass":"anchor","fused":["MatMul","ReLU"]}],
   "outputs":[4]}}]}`

// fixture makes a log dir with one run, "mlp", holding a graph record,
// and a reader that returns that run with a few scalars (one of them
// NaN) and a histogram.
func fixture(t *testing.T) (logdir string, read func(string, []string) ([]*summary.Run, error)) {
	t.Helper()
	logdir = t.TempDir()
	runDir := filepath.Join(logdir, "mlp")
	writeFiles(t, runDir, map[string]string{
		"events.out.tfevents.1.host.1.spore": "stands for an event file",
		"graphs/dense-1.json":                graphFixture,
		"graphs/broken-1.json":               `{"name": "br`,
		"secret.txt":                         "not a graph",
	})
	run := &summary.Run{
		Name: "mlp", Dir: runDir,
		Scalars: map[string][]summary.Scalar{
			"loss": points(2.3, 1.9, math.NaN(), 1.2),
			"lr":   points(0.01, 0.01, 0.01, 0.01),
		},
		Histograms: map[string][]summary.Histogram{
			"param/w": {{Step: 2, WallTime: 101, Min: -1, Max: 1, Num: 6, Sum: 0, SumSquares: 2,
				BucketLimit: []float64{0, math.Inf(1)}, Bucket: []float64{3, 3}}},
		},
		Graphs:   []string{"graphs/broken-1.json", "graphs/dense-1.json"},
		Warnings: []string{"events.out.tfevents.1.host.1.spore: torn record at offset 120 skipped"},
	}
	return logdir, func(string, []string) ([]*summary.Run, error) { return []*summary.Run{run}, nil }
}

// fixtureServer is a server over fixture's log dir and run.
func fixtureServer(t *testing.T) (s *Server, logdir string) {
	t.Helper()
	logdir, read := fixture(t)
	s, err := New(logdir)
	if err != nil {
		t.Fatal(err)
	}
	s.read = read
	return s, logdir
}

// points are scalars at steps 1, 2, ... recorded at wall times 100, 101, ...
func points(values ...float64) []summary.Scalar {
	out := make([]summary.Scalar, len(values))
	for i, v := range values {
		out[i] = summary.Scalar{Step: int64(i + 1), WallTime: float64(100 + i), Value: v}
	}
	return out
}

// writeFiles writes files below root, named by slash-separated paths
// relative to it, making their directories.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeRun writes the run name (slash-separated, "." for the log dir
// itself) of logdir with the summary writer: what add adds, then Close.
func writeRun(t *testing.T, logdir, name string, add func(w *summary.Writer)) {
	t.Helper()
	w, err := summary.NewWriter(filepath.Join(logdir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	add(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// addGraphFixture adds graphFixture to w as a compiled function's record.
func addGraphFixture(t *testing.T, w *summary.Writer) {
	t.Helper()
	var rec spore.CompileRecord
	if err := json.Unmarshal([]byte(graphFixture), &rec); err != nil {
		t.Fatal(err)
	}
	if err := w.AddGraph(rec); err != nil {
		t.Fatal(err)
	}
}

// runNames are the names of the runs s lists at /api/runs.
func runNames(t *testing.T, s *Server) []string {
	t.Helper()
	rec := get(s, "localhost", "GET", "/api/runs")
	var v logView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("/api/runs: %d %s", rec.Code, rec.Body)
	}
	var names []string
	for _, r := range v.Runs {
		names = append(names, r.Name)
	}
	return names
}

func TestNewRejects(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, logdir, want string }{
		{"no path", "", "no log directory"},
		{"a file", file, "is a file, not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.logdir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%q) = %v, want an error containing %q", tc.logdir, err, tc.want)
			}
		})
	}
}

func TestEndpoints(t *testing.T) {
	s, _ := fixtureServer(t)
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, tc := range []struct {
		name, method, path string
		status             int
		want               []string // substrings of the body
	}{
		{"page", "GET", "/", 200, []string{"<title>spore dashboard</title>", `src="app.js"`}},
		{"script", "GET", "/app.js", 200, []string{`from "./lib.js"`}},
		{"library", "GET", "/lib.js", 200, []string{"export function diffLines"}},
		{"layout engine", "GET", "/vendor/graphviz.js", 200, []string{"Graphviz"}},
		{"licence", "GET", "/vendor/LICENSE", 200, []string{"Apache License"}},
		{"runs", "GET", "/api/runs", 200, []string{`"status":"ok"`, `"name":"mlp"`, `"scalarTags":["loss","lr"]`, `"histogramTags":["param/w"]`, `"lastStep":4`, "torn record at offset 120"}},
		{"scalars of every run", "GET", "/api/scalars?tag=loss", 200, []string{`{"tag":"loss","series":[{"run":"mlp","points":[[1,100,2.3],[2,101,1.9],[3,102,null],[4,103,1.2]]}]}`}},
		{"scalars of one run", "GET", "/api/scalars?tag=lr&run=mlp", 200, []string{`"run":"mlp"`, `[4,103,0.01]`}},
		{"scalars without a tag", "GET", "/api/scalars", 400, []string{"needs a tag parameter"}},
		{"an unknown tag", "GET", "/api/scalars?tag=nope", 404, []string{`no scalar tag \"nope\" in any run`}},
		{"an unknown run", "GET", "/api/scalars?tag=loss&run=other", 404, []string{`no run \"other\"`, `runs: \"mlp\"`}},
		{"histograms", "GET", "/api/histograms?run=mlp&tag=param/w", 200, []string{`"step":2`, `"bucketLimit":[0,1.7976931348623157e+308]`, `"bucket":[3,3]`}},
		{"histograms without a run", "GET", "/api/histograms?tag=param/w", 400, []string{"needs run and tag"}},
		{"an unknown histogram", "GET", "/api/histograms?run=mlp&tag=loss", 404, []string{`no histogram tag \"loss\" in run \"mlp\"`}},
		{"a graph", "GET", "/api/graph?run=mlp&file=graphs/dense-1.json", 200, []string{`"name":"dense"`, `"fused":["MatMul","ReLU"]`}},
		{"a torn graph", "GET", "/api/graph?run=mlp&file=graphs/broken-1.json", 422, []string{"malformed graph file graphs/broken-1.json", "not valid JSON"}},
		{"a file the run does not list", "GET", "/api/graph?run=mlp&file=secret.txt", 404, []string{`has no graph file \"secret.txt\"`}},
		{"a path out of the run", "GET", "/api/graph?run=mlp&file=../../etc/passwd", 404, []string{"has no graph file"}},
		{"a graph without a file", "GET", "/api/graph?run=mlp", 400, []string{"needs run and file"}},
		{"an unknown endpoint", "GET", "/api/nothing", 404, []string{"no endpoint /api/nothing"}},
		{"a write", "POST", "/api/runs", 405, []string{"read-only"}},
		{"a write to the page", "DELETE", "/", 405, []string{"read-only"}},
		{"an asset that is not there", "GET", "/nothing.js", 404, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s: status %d, want %d; body %s", tc.method, tc.path, resp.StatusCode, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("%s %s: body lacks %s:\n%.600s", tc.method, tc.path, w, body)
				}
			}
			checkSecurityHeaders(t, resp.Header)
			if strings.HasPrefix(tc.path, "/api/") {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
				if !json.Valid(body) {
					t.Errorf("body is not JSON: %s", body)
				}
			}
		})
	}
}

// TestPageIsSelfContained checks that the page names no resource outside
// the server, and that the server forbids the browser to fetch any.
func TestPageIsSelfContained(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web/index.html", "web/app.js", "web/lib.js", "web/style.css"} {
		data, err := webFiles.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range []string{"http://", "https://", "//cdn", "@import"} {
			text := strings.ReplaceAll(string(data), "http://www.w3.org/2000/svg", "")
			if strings.Contains(text, ref) {
				t.Errorf("%s refers to %q: the page must work offline", name, ref)
			}
		}
	}
	rec := get(s, "localhost", "GET", "/")
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q does not confine the page to the server", csp)
	}
}

func TestStatus(t *testing.T) {
	none := func(string, []string) ([]*summary.Run, error) { return nil, nil }
	_, some := fixture(t)
	for _, tc := range []struct {
		name   string
		setup  func(dir string) string // returns the log dir
		read   func(string, []string) ([]*summary.Run, error)
		status string
		ok     bool
		want   string
	}{
		{"missing", func(dir string) string { return filepath.Join(dir, "not-yet") }, none, statusMissing, false, "does not exist (yet)"},
		{"empty", func(dir string) string { return dir }, none, statusEmpty, false, "is empty: no runs yet"},
		{"foreign files", func(dir string) string {
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644)
			os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
			os.WriteFile(filepath.Join(dir, "sub", "model.ckpt"), []byte("x"), 0o644)
			return dir
		}, none, statusForeign, false, "holds no event files (events.out.tfevents.*), only 2 other file(s) such as notes.txt"},
		{"runs", func(dir string) string { return dir }, some, statusOK, true, "1 run(s) in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.setup(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			s.read = tc.read
			msg, ok := s.Status()
			if ok != tc.ok || !strings.Contains(msg, tc.want) || !strings.Contains(msg, s.Logdir()) {
				t.Errorf("Status() = %q, %v; want %v and a message naming the log dir and containing %q", msg, ok, tc.ok, tc.want)
			}
			rec := get(s, "localhost", "GET", "/api/runs")
			var v struct{ Status, Message string }
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			if v.Status != tc.status || v.Message != msg {
				t.Errorf("/api/runs says %q %q, want %q %q", v.Status, v.Message, tc.status, msg)
			}
			if !tc.ok {
				rec := get(s, "localhost", "GET", "/api/scalars?tag=loss")
				if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), tc.want) {
					t.Errorf("/api/scalars = %d %s, want 404 with the log dir's status", rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestReload checks that the server sees files a writer adds and keeps
// its parsed copy while nothing changes.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Unix(1e9, 0) } // no time passes: only changes count
	reads := 0
	s.read = func(string, []string) ([]*summary.Run, error) {
		reads++
		return nil, nil
	}
	s.Status()
	s.Status()
	if reads != 1 {
		t.Errorf("an unchanged log dir was read %d times, want once", reads)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.out.tfevents.1.h.1.spore"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Status()
	if reads != 2 {
		t.Errorf("after a file was added the log dir was read %d times in all, want 2", reads)
	}
}

func TestListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct{ name, addr, want string }{
		{"a port in use", taken.Addr().String(), "is already in use"},
		{"no port", "127.0.0.1", "is not host:port"},
		{"a bad port", "127.0.0.1:http-ish", "cannot listen on 127.0.0.1:http-ish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := Listen(tc.addr)
			if err == nil {
				ln.Close()
				t.Fatalf("Listen(%q) succeeded", tc.addr)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Listen(%q) = %q, want one line containing %q", tc.addr, err, tc.want)
			}
		})
	}
}

func TestDefaultAddrIsLoopback(t *testing.T) {
	host, _, err := net.SplitHostPort(DefaultAddr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("DefaultAddr %q does not bind the loopback interface", DefaultAddr)
	}
}

// TestReadsEventFiles serves a log dir that the summary writer filled:
// two runs, one with a graph record, and a file named as an event file
// that is not one.
func TestReadsEventFiles(t *testing.T) {
	logdir := t.TempDir()
	for run, losses := range map[string][]float64{"a": {2, 1.5, 1}, "b": {3, 2}} {
		writeRun(t, logdir, run, func(w *summary.Writer) {
			for i, l := range losses {
				w.AddScalar("loss", int64(i+1), l)
			}
			w.AddHistogram("param/w", 1, []float32{-1, 0, 0.5, 2})
			if run == "a" {
				addGraphFixture(t, w)
			}
		})
	}
	writeFiles(t, logdir, map[string]string{"b/events.out.tfevents.0.fake": "not TFRecord"})
	s, err := New(logdir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	var runs logView
	get("/api/runs", &runs)
	if runs.Status != statusOK || len(runs.Runs) != 2 || runs.Runs[0].Name != "a" || runs.Runs[1].Name != "b" {
		t.Fatalf("/api/runs = %+v, want runs a and b", runs)
	}
	if a := runs.Runs[0]; len(a.Graphs) != 1 || a.LastStep != 3 || len(a.HistogramTags) != 1 {
		t.Errorf("run a = %+v, want one graph, last step 3 and one histogram tag", a)
	}
	if w := runs.Runs[1].Warnings; len(w) == 0 || !strings.Contains(strings.Join(w, "\n"), "events.out.tfevents.0.fake") {
		t.Errorf("run b's warnings %q do not name the file that is not an event file", w)
	}
	var sc struct {
		Series []struct {
			Run    string
			Points [][3]float64
		}
	}
	get("/api/scalars?tag=loss", &sc)
	if len(sc.Series) != 2 || len(sc.Series[0].Points) != 3 || len(sc.Series[1].Points) != 2 || sc.Series[1].Points[1][2] != 2 {
		t.Errorf("/api/scalars?tag=loss = %+v, want 3 points of run a and 2 of run b", sc)
	}
	var g spore.CompileRecord
	get("/api/graph?run=a&file="+runs.Runs[0].Graphs[0], &g)
	if g.Name != "dense" || len(g.Passes) != 2 || len(g.Passes[1].Graph.Nodes) != 3 {
		t.Errorf("graph record = %+v, want the fixture back", g)
	}
}

// TestServesWhileWriting reads a run through the server while a writer
// appends to it: every answer is whole, and the curve only grows.
func TestServesWhileWriting(t *testing.T) {
	logdir := t.TempDir()
	w, err := summary.NewWriter(filepath.Join(logdir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(logdir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	const steps = 400
	done := make(chan error, 1)
	go func() {
		for step := int64(1); step <= steps; step++ {
			w.AddScalar("loss", step, 1/float64(step))
			if step%20 == 0 {
				if err := w.Flush(); err != nil {
					done <- err
					return
				}
			}
		}
		done <- w.Close()
	}()
	last, finished := 0, false
	for !finished {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		resp, err := http.Get(srv.URL + "/api/scalars?tag=loss")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound && last == 0 {
			continue // nothing written yet
		}
		var sc struct{ Series []scalarSeries }
		if resp.StatusCode != 200 || json.Unmarshal(body, &sc) != nil || len(sc.Series) != 1 {
			t.Fatalf("mid-write answer %d: %.300s", resp.StatusCode, body)
		}
		n := len(sc.Series[0].Points)
		if n < last {
			t.Fatalf("the curve shrank from %d to %d points", last, n)
		}
		for i, p := range sc.Series[0].Points {
			if int(p[0]) != i+1 {
				t.Fatalf("point %d is at step %v, want %d: a record was lost or reordered", i, p[0], i+1)
			}
		}
		last = n
	}
	if last != steps {
		t.Errorf("after the writer closed the server shows %d points, want %d", last, steps)
	}
}

// TestPanicIsAnError checks that a failing reader's panic reaches the
// browser as a 500 with its message, not the console as a stack.
func TestPanicIsAnError(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.read = func(string, []string) ([]*summary.Run, error) { panic("reader broke") }
	rec := get(s, "localhost", "GET", "/api/runs")
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "reader broke") {
		t.Errorf("a panicking handler answered %d %s, want 500 naming the panic", rec.Code, rec.Body)
	}
	checkSecurityHeaders(t, rec.Header())
}

// get serves one request to s directly, as from host.
func get(s *Server, host, method, target string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	req.Host = host
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// TestHostCheck checks that only requests addressed to a loopback name
// are answered: a page on another site that rebinds its own name to
// 127.0.0.1 sends its name as the Host, and must not read the log dir.
func TestHostCheck(t *testing.T) {
	s, logdir := fixtureServer(t)
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true},
		{"localhost:6006", true},
		{"LOCALHOST:6006", true},
		{"127.0.0.1:6006", true},
		{"127.0.0.1", true},
		{"127.8.9.10:80", true},
		{"[::1]:6006", true},
		{"[::1]", true},
		{"evil.example", false},
		{"evil.example:6006", false},
		{"localhost.evil.example", false},
		{"127.0.0.1.evil.example:6006", false},
		{"10.1.2.3:6006", false},
		{"", false},
	} {
		for _, path := range []string{"/api/runs", "/", "/api/scalars?tag=loss"} {
			t.Run(tc.host+path, func(t *testing.T) {
				rec := get(s, tc.host, "GET", path)
				body := rec.Body.String()
				if tc.ok {
					if rec.Code != http.StatusOK {
						t.Errorf("Host %q: %d %.300s, want 200", tc.host, rec.Code, body)
					}
					return
				}
				if rec.Code != http.StatusForbidden || !strings.Contains(body, "does not answer to host") {
					t.Errorf("Host %q: %d %.300s, want 403 saying the host is not the dashboard's", tc.host, rec.Code, body)
				}
				if strings.Contains(body, logdir) || strings.Contains(body, "mlp") {
					t.Errorf("Host %q: the refusal gives the log dir or its runs away: %s", tc.host, body)
				}
			})
		}
	}
}

// TestSecurityHeaders checks that every answer, errors and JSON
// included, forbids framing and content sniffing.
func TestSecurityHeaders(t *testing.T) {
	s, _ := fixtureServer(t)
	for _, tc := range []struct {
		name, host, method, path string
		status                   int
	}{
		{"the page", "localhost", "GET", "/", 200},
		{"a script", "localhost", "GET", "/app.js", 200},
		{"a missing asset", "localhost", "GET", "/nothing.js", 404},
		{"runs", "localhost", "GET", "/api/runs", 200},
		{"a bad request", "localhost", "GET", "/api/scalars", 400},
		{"an unknown tag", "localhost", "GET", "/api/scalars?tag=nope", 404},
		{"a graph", "localhost", "GET", "/api/graph?run=mlp&file=graphs/dense-1.json", 200},
		{"a write", "localhost", "POST", "/api/runs", 405},
		{"a foreign host", "evil.example", "GET", "/api/runs", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(s, tc.host, tc.method, tc.path)
			if rec.Code != tc.status {
				t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.status)
			}
			checkSecurityHeaders(t, rec.Header())
		})
	}
}

func checkSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	if got := h.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("X-Frame-Options %q, want DENY", got)
	}
	if got := h.Get("Content-Security-Policy"); !strings.Contains(got, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q lacks frame-ancestors 'none'", got)
	}
	if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
}

// TestEchoIsClipped checks that an error repeats at most the first
// hundred bytes or so of what the request sent, however long it was.
func TestEchoIsClipped(t *testing.T) {
	s, _ := fixtureServer(t)
	long := strings.Repeat("x", 1<<20)
	// A long run of multi-byte characters must be cut between them.
	wide := strings.Repeat("é", 1<<10)
	for _, tc := range []struct {
		name, method, target string
		status               int
	}{
		{"a scalar tag", "GET", "/api/scalars?tag=" + long, 404},
		{"a scalar tag of wide characters", "GET", "/api/scalars?tag=" + wide, 404},
		{"a scalar run", "GET", "/api/scalars?tag=loss&run=" + long, 404},
		{"a histogram tag", "GET", "/api/histograms?run=mlp&tag=" + long, 404},
		{"a histogram run", "GET", "/api/histograms?tag=param/w&run=" + long, 404},
		{"a graph file", "GET", "/api/graph?run=mlp&file=" + long, 404},
		{"a graph run", "GET", "/api/graph?file=graphs/dense-1.json&run=" + long, 404},
		{"an endpoint", "GET", "/api/" + long[:maxPath-5], 404},
		{"a path", "GET", "/api/" + long, 414},
		{"a path to clean", "GET", "/a/../" + long, 414},
		{"a method", strings.Repeat("X", 1<<16), "/", 405},
		{"a method on the API", strings.Repeat("X", 1<<16), "/api/runs", 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(s, "localhost", tc.method, tc.target)
			body := rec.Body.String()
			if rec.Code != tc.status {
				t.Fatalf("%d %.300s, want %d", rec.Code, body, tc.status)
			}
			var v struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.Error == "" {
				t.Fatalf("body %.300s is not a JSON error", body)
			}
			if len(body) > 1000 || !strings.Contains(v.Error, "…") {
				t.Errorf("a %d-byte error, want the input cut short with an ellipsis: %.300s", len(body), body)
			}
			if !utf8.ValidString(v.Error) {
				t.Errorf("the clipped error is not UTF-8: %q", v.Error)
			}
		})
	}
}

// malformedGraphs are graph records the page cannot draw, with what the
// server must say of each.
var malformedGraphs = []struct{ name, data, want string }{
	{"torn", `{"name": "br`, "not valid JSON"},
	{"an array", `[1, 2]`, "not a JSON object"},
	{"passes a string", `{"name":"f","passes":"trace"}`, "passes is a string, want an array"},
	{"a pass a number", `{"name":"f","passes":[3]}`, "passes is a number"},
	{"no graph", `{"name":"f","passes":[{"pass":"trace","text":""}]}`, "passes[0].graph is missing"},
	{"no nodes", `{"name":"f","passes":[{"pass":"trace","graph":{"outputs":[]}}]}`, "passes[0].graph.nodes is missing"},
	{"nodes an object", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":{}}}]}`, "passes.graph.nodes is an object, want an array"},
	{"a node without an id", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[{"op":"Neg"}]}}]}`, "passes[0].graph.nodes[0]: no id"},
	{"a null node", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[null]}}]}`, "passes[0].graph.nodes[0] is null"},
	{"an id a string", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[{"id":"0","op":"Neg"}]}}]}`, "passes.graph.nodes.id is a string, want an integer"},
	{"a shape a string", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[{"id":0,"op":"Neg","shape":"4x3"}]}}]}`, "passes.graph.nodes.shape is a string, want an array"},
	{"fused a string", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[{"id":0,"op":"F","fused":"Add"}]}}]}`, "passes.graph.nodes.fused is a string, want an array"},
	{"outputs an object", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[],"outputs":{}}}]}`, "passes.graph.outputs is an object, want an array"},
	{"a name a number", `{"name":7,"passes":[]}`, "name is a number"},
	{"an assign without a value", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[],"assigns":[{"param":0}]}}]}`, "passes[0].graph.assigns[0]: want a param and a value"},
	{"a region without a graph", `{"name":"f","passes":[{"pass":"trace","graph":{"nodes":[{"id":0,"op":"If","regions":[{"name":"then"}]}]}}]}`, "passes[0].graph.nodes[0].regions[0].graph is missing"},
}

// TestMalformedGraph checks that a graph record of the wrong shape is
// refused as a malformed graph file with a short reason, and that
// records of the right shape, unknown fields and no passes included, are
// served.
func TestMalformedGraph(t *testing.T) {
	logdir, read := fixture(t)
	s, err := New(logdir)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := read(logdir, nil)
	run := runs[0]
	write := func(name, data string) string {
		file := "graphs/" + name + ".json"
		if err := os.WriteFile(filepath.Join(run.Dir, filepath.FromSlash(file)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		run.Graphs = append(run.Graphs, file)
		return file
	}
	type check struct{ name, file, want string }
	var bad []check
	for i, g := range malformedGraphs {
		bad = append(bad, check{g.name, write(fmt.Sprintf("bad-%d", i), g.data), g.want})
	}
	good := []check{
		{"the fixture", "graphs/dense-1.json", `"name":"dense"`},
		{"no passes", write("empty", `{"name":"f","passes":[]}`), `"passes":[]`},
		{"null passes", write("null", `{"name":"f","passes":null}`), `"passes":null`},
		{"unknown fields", write("newer", `{"name":"f","future":{"x":1},"passes":[{"pass":"trace","graph":{"nodes":[{"id":0,"op":"input","extra":[1]}],"outputs":[0]}}]}`), `"future"`},
	}
	s.read = func(string, []string) ([]*summary.Run, error) { return []*summary.Run{run}, nil }
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(s, "localhost", "GET", "/api/graph?run=mlp&file="+tc.file)
			body := rec.Body.String()
			if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(body, "malformed graph file "+tc.file) || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want 422 saying malformed graph file %s: ...%s", rec.Code, body, tc.file, tc.want)
			}
		})
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(s, "localhost", "GET", "/api/graph?run=mlp&file="+tc.file)
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("%d %.300s, want 200 with %s", rec.Code, rec.Body, tc.want)
			}
		})
	}
}

// TestRunDepthBound checks that runs are looked for MaxRunDepth levels
// below the log dir and no deeper: a log dir of / must not be walked
// whole.
func TestRunDepthBound(t *testing.T) {
	const maxDepth = MaxRunDepth
	logdir := t.TempDir()
	var want []string
	for depth := 0; depth <= maxDepth+2; depth++ {
		parts := []string{}
		for i := 1; i <= depth; i++ {
			parts = append(parts, fmt.Sprintf("d%d", i))
		}
		name := strings.Join(parts, "/")
		if name == "" {
			name = "."
		}
		writeRun(t, logdir, name, func(w *summary.Writer) { w.AddScalar("loss", 1, float64(depth)) })
		if depth <= maxDepth {
			want = append(want, name)
		}
	}
	s, err := New(logdir)
	if err != nil {
		t.Fatal(err)
	}
	got := runNames(t, s)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("runs %q, want those at most %d levels down: %q", got, maxDepth, want)
	}

	// A log dir whose only run lies too deep is not called empty.
	deep := t.TempDir()
	writeRun(t, deep, "1/2/3/4/5/6", func(*summary.Writer) {})
	s, err = New(deep)
	if err != nil {
		t.Fatal(err)
	}
	if msg, ok := s.Status(); ok || !strings.Contains(msg, fmt.Sprintf("within %d levels of it", maxDepth)) || !strings.Contains(msg, "runs deeper are not looked for") {
		t.Errorf("over a run too deep: Status() = %q, %v; want it to say that deeper runs are not looked for", msg, ok)
	}
}

// TestWalkIsCached checks that requests share one walk of the log dir:
// it is walked again only when a watched directory changed or the walk
// expired, not on every request of the page's polls.
func TestWalkIsCached(t *testing.T) {
	logdir := t.TempDir()
	addRun := func(name string) {
		writeRun(t, logdir, name, func(w *summary.Writer) { w.AddScalar("loss", 1, 1) })
	}
	if err := os.MkdirAll(filepath.Join(logdir, "exp", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	addRun("a")
	now := time.Unix(1e9, 0)
	for _, tc := range []struct {
		name     string
		maxWatch int           // directories watched besides the log dir and the runs'
		change   func()        // done after the first request
		advance  time.Duration // the clock's advance after the change
		walks    int           // walks in all after the second request
		runs     string        // what the second request lists
	}{
		{"nothing changed", maxWatchedDirs, func() {}, 0, 1, "a"},
		{"nothing changed, for a while", maxWatchedDirs, func() {}, scanTTL - time.Millisecond, 1, "a"},
		{"the walk expired", maxWatchedDirs, func() {}, scanTTL, 2, "a"},
		{"a run added to the log dir", 0, func() { addRun("b") }, 0, 2, "a b"},
		{"a run added below a watched directory", maxWatchedDirs, func() { addRun("exp/sub/c") }, 0, 2, "a exp/sub/c"},
		// In a tree too big to watch whole, a run added below an
		// unwatched directory shows up once the walk expires.
		{"a run added below an unwatched directory", 0, func() { addRun("exp/sub/d") }, time.Second, 1, "a"},
		{"and once the walk expired", 0, func() { addRun("exp/sub/e") }, scanTTL, 2, "a exp/sub/e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []string{"b", "exp/sub/c", "exp/sub/d", "exp/sub/e"} {
				os.RemoveAll(filepath.Join(logdir, filepath.FromSlash(d)))
			}
			s, err := New(logdir)
			if err != nil {
				t.Fatal(err)
			}
			clock := now
			s.now = func() time.Time { return clock }
			s.maxWatch = tc.maxWatch
			if msg, ok := s.Status(); !ok || !strings.HasPrefix(msg, "1 run(s)") {
				t.Fatalf("first Status() = %q, %v", msg, ok)
			}
			tc.change()
			clock = clock.Add(tc.advance)
			got := runNames(t, s)
			if strings.Join(got, " ") != tc.runs || s.walks != tc.walks {
				t.Errorf("after the change: runs %q and %d walk(s) in all, want %q and %d", got, s.walks, tc.runs, tc.walks)
			}
		})
	}
}

// TestWalkShare checks that a slow walk is not redone, however its
// directories change, before walkShare times its duration has passed.
func TestWalkShare(t *testing.T) {
	logdir := t.TempDir()
	s, err := New(logdir)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1e9, 0)
	s.now = func() time.Time {
		clock = clock.Add(time.Second) // every reading of the clock: a walk takes a second
		return clock
	}
	s.Status()
	if err := os.WriteFile(filepath.Join(logdir, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.Status() // 2 s after the walk began: too soon
	if s.walks != 1 {
		t.Errorf("a walk of 1 s was redone after 2 s (%d walks)", s.walks)
	}
	clock = clock.Add(walkShare * time.Second)
	if msg, _ := s.Status(); s.walks != 2 || !strings.Contains(msg, "notes.txt") {
		t.Errorf("after %d s: %d walks, status %q; want the change seen", walkShare, s.walks, msg)
	}
}

// TestBoundHost checks that a server answers to the host it serves on
// besides the loopback names, and to the name it was asked to listen on.
func TestBoundHost(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s.allowListener(fakeAddr{ln, &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 6006}})
	s.allowListener(&listener{Listener: ln, host: "Dash.Example"}) // as Listen("Dash.Example:0") returns it
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"dash.example:6006", true},
		{"DASH.example.", true},
		{"192.0.2.7:6006", true},
		{"192.0.2.7:80", true},
		{"192.0.2.8:6006", false},
		{"localhost:1", true},
		{"evil.example:6006", false},
	} {
		rec := get(s, tc.host, "GET", "/api/runs")
		if ok := rec.Code == http.StatusOK; ok != tc.ok {
			t.Errorf("Host %q: %d %.200s, want allowed %v", tc.host, rec.Code, rec.Body, tc.ok)
		}
	}
	// A listener on every interface answers to the machine's addresses
	// and its host name.
	s2, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s2.allowListener(fakeAddr{ln, &net.TCPAddr{IP: net.IPv4zero, Port: 6006}})
	name, err := os.Hostname()
	if err != nil || name == "" {
		t.Skip("no host name")
	}
	if rec := get(s2, name+":6006", "GET", "/api/runs"); rec.Code != http.StatusOK {
		t.Errorf("Host %q of a server on 0.0.0.0: %d, want 200", name, rec.Code)
	}
	if rec := get(s2, "0.0.0.0:6006", "GET", "/api/runs"); rec.Code != http.StatusForbidden {
		t.Errorf("Host 0.0.0.0: %d, want 403", rec.Code)
	}
}

// fakeAddr is a listener that says it listens on addr.
type fakeAddr struct {
	net.Listener
	addr net.Addr
}

func (f fakeAddr) Addr() net.Addr { return f.addr }

// TestReadsLikeReadLogdir checks that the server's bounded walk finds
// the runs summary.ReadLogdir finds in a log dir within the bound, and
// reads them as it does: the same runs, series, graphs and warnings.
func TestReadsLikeReadLogdir(t *testing.T) {
	logdir := t.TempDir()
	for _, run := range []string{".", "a", "exp/b", "exp/b/c"} {
		writeRun(t, logdir, run, func(w *summary.Writer) {
			for step := int64(3); step >= 1; step-- { // out of order: read in step order
				w.AddScalar("loss", step, float64(step))
				w.AddHistogram("param/w", step, []float32{-1, 0, float32(step)})
			}
			if run == "a" {
				addGraphFixture(t, w)
			}
		})
	}
	writeFiles(t, logdir, map[string]string{
		"exp/b/events.out.tfevents.0.fake":  "not TFRecord",
		"exp/b/events.out.tfevents.1.empty": "",
		"only-graphs/graphs/g.json":         graphFixture,
		"only-graphs/graphs/.tmp.json":      "{",
		"notes/readme.txt":                  "not a run",
		"graphs-dir-only/graphs/notes.txt":  "no record",
	})
	want, err := summary.ReadLogdir(logdir)
	if err != nil || len(want) != 5 || len(want[2].Warnings) == 0 || len(want[4].Graphs) != 1 {
		t.Fatalf("ReadLogdir: %v; want runs ., a, exp/b (with a warning), exp/b/c and only-graphs (with a graph): %+v", err, want)
	}
	sc := walkLogdir(logdir, maxWatchedDirs)
	got, err := readRuns(logdir, sc.runDirs())
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	names := func(runs []*summary.Run) []string {
		out := make([]string, len(runs))
		for i, r := range runs {
			out[i] = r.Name
		}
		return out
	}
	if !reflect.DeepEqual(names(got), names(want)) {
		t.Fatalf("runs %q, ReadLogdir finds %q", names(got), names(want))
	}
	for i, w := range want {
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("run %q:\n got %+v\nwant %+v", w.Name, *got[i], *w)
		}
	}
}

// TestReadRunsSkipsGone checks that a run directory removed since the
// walk is left out, and that a log dir that cannot be read any more is an
// error naming it without the summary package's prefix.
func TestReadRunsSkipsGone(t *testing.T) {
	logdir := t.TempDir()
	writeRun(t, logdir, "a", func(w *summary.Writer) { w.AddScalar("loss", 1, 1) })
	runs, err := readRuns(logdir, []string{filepath.Join(logdir, "gone"), filepath.Join(logdir, "a")})
	if err != nil || len(runs) != 1 || runs[0].Name != "a" {
		t.Errorf("readRuns with a directory gone = %+v, %v; want run a only", runs, err)
	}
	gone := filepath.Join(logdir, "removed")
	_, err = readRuns(gone, []string{gone})
	if err == nil || !strings.HasPrefix(err.Error(), "log dir "+gone+": ") {
		t.Errorf("readRuns of a log dir gone = %v, want an error starting \"log dir %s: \"", err, gone)
	}
}
