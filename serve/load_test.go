package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sporeml/spore/internal/kernels/parallel"
	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/serve"
)

// The load-and-faults test of issue 24: one server on loopback under a
// closed loop of loadConcurrency clients for SPORE_LOAD_SECONDS (default
// 20 s; CI's plain pass runs it once for 300 s), one request in ten a bad
// one, a reload of the model half way, and at the end the shutdown the
// command does on SIGTERM. It checks that every good request succeeds with
// the right answer, every bad one gets the 4xx that names what was wrong,
// the drain loses no request accepted before the shutdown began, the
// resident memory grows by less than 10% after warm-up, and no goroutine
// is left behind.

const (
	loadConcurrency = 64
	// loadMaxBody is the server's body limit in the test: well above a
	// good request (about 20 KB of JSON), below the oversized one.
	loadMaxBody = 64 << 10
	// loadDefaultSeconds is the run's length under a plain go test.
	loadDefaultSeconds = 20
)

// raceEnabled reports whether the test binary was built with -race, from
// the build settings Go records in every binary.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// loadDuration is SPORE_LOAD_SECONDS, or the default.
func loadDuration(t *testing.T) time.Duration {
	v := os.Getenv("SPORE_LOAD_SECONDS")
	if v == "" {
		return loadDefaultSeconds * time.Second
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 4 || n > 3600 {
		t.Fatalf("SPORE_LOAD_SECONDS=%q: want a whole number of seconds from 4 to 3600", v)
	}
	return time.Duration(n) * time.Second
}

// residentBytes reads the process's resident set size from /proc/self/statm
// (its second field, in pages).
func residentBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatalf("resident memory: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("/proc/self/statm: %q has no second field", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatalf("/proc/self/statm: %v", err)
	}
	return pages * int64(os.Getpagesize())
}

// settledResident returns the resident set size once the garbage the load
// leaves has been collected and returned to the OS. Go hands freed pages
// back lazily, so without this the figure follows the collector's pacing
// rather than what the server holds.
func settledResident(t *testing.T) int64 {
	debug.FreeOSMemory()
	return residentBytes(t)
}

// loadFixture is what the clients send and expect: the CNN fixture's
// two-image input and PyTorch's outputs for it.
type loadFixture struct {
	x    []float32 // [2, 1, 28, 28]
	want []float32 // [2, 10]
}

func readLoadFixture(t *testing.T) loadFixture {
	x, err := npy.ReadFile("../onnx/testdata/torch/cnn_in.npy")
	if err != nil {
		t.Fatal(err)
	}
	y, err := npy.ReadFile("../onnx/testdata/torch/cnn_out.npy")
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := x.Float32s(), y.Float32s()
	if len(xs) != 2*784 || len(ys) != 2*10 {
		t.Fatalf("CNN fixture: input has %d elements, output %d; want 1568 and 20", len(xs), len(ys))
	}
	return loadFixture{x: xs, want: ys}
}

// inferBody is a v2 JSON request for the CNN's input "x".
func inferBody(shape []int, datatype string, data any) []byte {
	b, err := json.Marshal(map[string]any{
		"inputs": []map[string]any{{"name": "x", "shape": shape, "datatype": datatype, "data": data}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// writeCNNVersion lays out DIR/cnn/VERSION/model.onnx, written under a
// temporary name and renamed, so that the server never sees half a version.
func writeCNNVersion(t *testing.T, repo, version string) {
	model, err := os.ReadFile("../onnx/testdata/torch/cnn.onnx")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Join(repo, "cnn"), ".tmp")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "model.onnx"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(repo, "cnn", version)); err != nil {
		t.Fatal(err)
	}
}

// A loadKind is one kind of request the clients send.
type loadKind struct {
	name string
	// model is the model the request is sent to; "" means cnn.
	model string
	body  []byte
	// status is the status the answer must have. A bad request's error
	// must also contain word (case-insensitively); a good one's output
	// must be the fixture's first rows rows.
	status []int
	word   string
	rows   int
	// gone is a client that disconnects mid-request: after half the body
	// (halfBody), or after the whole body but before the answer.
	gone     bool
	halfBody bool
}

func loadKinds(fx loadFixture) (good []loadKind, bad []loadKind) {
	body2 := inferBody([]int{2, 1, 28, 28}, "FP32", fx.x)
	body1 := inferBody([]int{1, 1, 28, 28}, "FP32", fx.x[:784])
	ints := make([]int, 2*784)
	for i, v := range fx.x {
		ints[i] = int(v * 10)
	}
	malformed := bytes.Replace(body2, []byte(`"data":[`), []byte(`"data":[,`), 1)
	oversized := inferBody([]int{2, 1, 28, 28}, "FP32", make([]float32, 50_000))
	good = []loadKind{
		{name: "good, two images", body: body2, status: []int{200}, rows: 2},
		{name: "good, one image", body: body1, status: []int{200}, rows: 1},
	}
	bad = []loadKind{
		{name: "malformed JSON", body: malformed, status: []int{400}, word: "JSON"},
		{name: "wrong shape", body: inferBody([]int{2, 1, 28, 27}, "FP32", fx.x[:2*28*27]), status: []int{400}, word: "shape"},
		{name: "wrong datatype", body: inferBody([]int{2, 1, 28, 28}, "INT64", ints), status: []int{400}, word: "datatype"},
		{name: "unknown model", model: "nosuch", body: body2, status: []int{404}, word: "nosuch"},
		{name: "oversized body", body: oversized, status: []int{413}, word: "limit"},
		{name: "client gone mid-body", body: body2, gone: true, halfBody: true},
		{name: "client gone before the answer", body: body2, gone: true},
	}
	return good, bad
}

// loadCounts are the outcomes, per kind.
type loadCounts struct {
	mu   sync.Mutex
	n    map[string]int
	errs []string
}

func (c *loadCounts) add(kind string) {
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
}

// fail records a failure; only the first few are kept, with a count.
func (c *loadCounts) fail(format string, args ...any) {
	c.mu.Lock()
	c.n["FAILED"]++
	if len(c.errs) < 20 {
		c.errs = append(c.errs, fmt.Sprintf(format, args...))
	}
	c.mu.Unlock()
}

// entry is what the tracking middleware knows of a request the server
// accepted: whether its handler started before the shutdown began.
type entry struct{ beforeShutdown bool }

func TestLoadAndFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped under -short")
	}
	if raceEnabled() {
		t.Skip("load test: skipped under -race, where the load is too slow to mean anything")
	}
	if runtime.GOOS != "linux" {
		t.Skip("load test: resident memory is read from /proc/self/statm, which only Linux has")
	}
	dur := loadDuration(t)
	fx := readLoadFixture(t)
	good, bad := loadKinds(fx)

	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, "cnn"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := `{"max_batch_size": 16, "max_queue_delay_microseconds": 200, "instances": 2}`
	if err := os.WriteFile(filepath.Join(repo, "cnn", "config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	writeCNNVersion(t, repo, "1")

	// spore's kernel workers are process-wide and start with the first
	// parallel loop that needs them: they are not the server's, so they
	// are started before the goroutines are counted.
	parallel.For(4*parallel.Workers(), 1, func(lo, hi int) {})
	goroutinesBefore := runtime.NumGoroutine()
	s, err := serve.New(serve.Config{Repository: repo, Limits: serve.Limits{MaxBodyBytes: loadMaxBody}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ModelReady("cnn", ""); err != nil {
		t.Fatalf("cnn is not ready after New: %v (index %+v)", err, s.Index(false))
	}

	// The middleware records the requests the server accepted, by the
	// client's id, so that a client whose request failed can tell a
	// request refused at the door (allowed once the shutdown began) from
	// one the server accepted and lost. The clients delete their entries,
	// so the map holds about loadConcurrency of them.
	var shuttingDown atomic.Bool
	var accepted sync.Map
	handler := s.Handler()
	tracked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Load-Id"); id != "" {
			accepted.Store(id, entry{beforeShutdown: !shuttingDown.Load()})
		}
		handler.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: tracked, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	base := "http://" + addr

	tr := &http.Transport{MaxIdleConnsPerHost: loadConcurrency, DisableCompression: true}
	client := &http.Client{Transport: tr}
	counts := &loadCounts{n: map[string]int{}}
	var seq atomic.Int64
	var reloadedAt atomic.Int64 // UnixNano when Load of version 2 returned; 0 before
	var sawV2 atomic.Int64

	// one sends one request of kind k and checks its answer.
	one := func(k loadKind) {
		id := strconv.FormatInt(seq.Add(1), 10)
		model := k.model
		if model == "" {
			model = "cnn"
		}
		path := "/v2/models/" + model + "/infer"
		if k.gone {
			switch err := goneClient(addr, path, k); {
			case err == nil:
				counts.add(k.name)
			case shuttingDown.Load():
				counts.add("refused at the shutdown")
			default:
				counts.fail("%s: %v", k.name, err)
			}
			return
		}
		sentAt := time.Now().UnixNano()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(k.body))
		if err != nil {
			counts.fail("%s: %v", k.name, err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Load-Id", id)
		resp, err := client.Do(req)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		e, wasAccepted := accepted.LoadAndDelete(id)
		before := wasAccepted && e.(entry).beforeShutdown
		if err != nil {
			switch {
			case !shuttingDown.Load():
				counts.fail("%s: request %s failed before the shutdown: %v", k.name, id, err)
			case before:
				counts.fail("%s: request %s was accepted before the shutdown began and lost in the drain: %v", k.name, id, err)
			default:
				counts.add("refused at the shutdown")
			}
			return
		}
		if !before && shuttingDown.Load() && resp.StatusCode == http.StatusServiceUnavailable {
			counts.add("refused at the shutdown")
			return
		}
		if msg := checkAnswer(k, fx, resp.StatusCode, body, sentAt, reloadedAt.Load(), &sawV2); msg != "" {
			counts.fail("%s: request %s: %s", k.name, id, msg)
			return
		}
		counts.add(k.name)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < loadConcurrency; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; ; i += loadConcurrency {
				select {
				case <-stop:
					return
				default:
				}
				if shuttingDown.Load() {
					return
				}
				// One request in ten is bad, the kinds in turn.
				if i%10 == 9 {
					one(bad[(i/10)%len(bad)])
				} else {
					one(good[i%len(good)])
				}
			}
		}(c)
	}

	// Should the test stop early (a t.Fatal), the clients and the server
	// must not go on running under the tests that follow.
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	t.Cleanup(func() {
		halt()
		hs.Close()
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})

	start := time.Now()
	warm := max(dur/4, 3*time.Second)
	time.Sleep(warm)
	rssWarm := settledResident(t)
	time.Sleep(dur/2 - warm)

	writeCNNVersion(t, repo, "2")
	if err := s.Load("cnn"); err != nil {
		t.Errorf("reload with version 2: %v", err)
	}
	reloadedAt.Store(time.Now().UnixNano())
	time.Sleep(dur - time.Since(start))
	rssEnd := settledResident(t)
	logBatching(t, client, base)

	// The SIGTERM: stop accepting connections and finish the requests in
	// hand, then drain the server's queues.
	shuttingDown.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		t.Errorf("HTTP shutdown: %v", err)
	}
	if err := s.Shutdown(sctx); err != nil {
		t.Errorf("server shutdown: %v", err)
	}
	halt()
	wg.Wait()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
	if s.Ready() {
		t.Error("the server is still ready after Shutdown")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("the listener still accepts connections after the shutdown")
	}
	tr.CloseIdleConnections()

	counts.mu.Lock()
	t.Logf("%v at concurrency %d: %v", dur, loadConcurrency, counts.n)
	for _, e := range counts.errs {
		t.Error(e)
	}
	for _, k := range append(append([]loadKind{}, good...), bad...) {
		if counts.n[k.name] == 0 {
			t.Errorf("no %q request completed: the run checked nothing of that kind", k.name)
		}
	}
	counts.mu.Unlock()
	if sawV2.Load() == 0 {
		t.Error("no answer came from version 2 after the reload")
	}

	growth := float64(rssEnd-rssWarm) / float64(rssWarm)
	t.Logf("resident memory: %.1f MiB after warm-up, %.1f MiB at the end (%+.1f%%)", float64(rssWarm)/(1<<20), float64(rssEnd)/(1<<20), 100*growth)
	if growth >= 0.10 {
		t.Errorf("resident memory grew by %.1f%% after warm-up (%d to %d bytes), want less than 10%%", 100*growth, rssWarm, rssEnd)
	}

	// Goroutines: every one the server, its connections and the clients
	// started must end; they are given a few seconds to.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutinesBefore && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutinesBefore {
		var buf bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&buf, 1)
		t.Errorf("%d goroutines left behind (%d before the server, %d after its shutdown):\n%s", n-goroutinesBefore, goroutinesBefore, n, buf.String())
	}
}

// logBatching logs the mean batch size the served version ran, from the
// server's /metrics (rows over executions), read while the load runs.
func logBatching(t *testing.T, client *http.Client, base string) {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Errorf("GET /metrics under load: %v", err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics under load: status %d, %v", resp.StatusCode, err)
		return
	}
	value := func(name string) float64 {
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, name+"{") && strings.Contains(line, `model="cnn"`) && strings.Contains(line, `version="2"`) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				return v
			}
		}
		return 0
	}
	rows, execs := value("nv_inference_count"), value("nv_inference_exec_count")
	if execs > 0 {
		t.Logf("version 2 since the reload: %.0f rows in %.0f executions, a mean batch of %.1f rows", rows, execs, rows/execs)
	}
}

// checkAnswer returns what is wrong with an answer to a request of kind k
// sent at sentAt, or "".
func checkAnswer(k loadKind, fx loadFixture, status int, body []byte, sentAt, reloadedAt int64, sawV2 *atomic.Int64) string {
	if !containsInt(k.status, status) {
		return fmt.Sprintf("status %d, want %v; body %.300s", status, k.status, body)
	}
	if status != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
			return fmt.Sprintf("status %d with a body that is not {\"error\": \"...\"}: %.300s", status, body)
		}
		if strings.Contains(e.Error, "goroutine") || strings.Contains(e.Error, "panic") {
			return fmt.Sprintf("the error carries a Go panic: %.300s", e.Error)
		}
		if !strings.Contains(strings.ToLower(e.Error), strings.ToLower(k.word)) {
			return fmt.Sprintf("error %q does not name what was wrong (want it to say %q)", e.Error, k.word)
		}
		return ""
	}
	var r struct {
		ModelName    string `json:"model_name"`
		ModelVersion string `json:"model_version"`
		Outputs      []struct {
			Name  string    `json:"name"`
			Shape []int     `json:"shape"`
			Data  []float64 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Sprintf("the answer does not decode: %v: %.300s", err, body)
	}
	if r.ModelName != "cnn" || len(r.Outputs) != 1 || r.Outputs[0].Name != "logits" {
		return fmt.Sprintf("want one output logits of model cnn, got %.300s", body)
	}
	o := r.Outputs[0]
	if len(o.Shape) != 2 || o.Shape[0] != k.rows || o.Shape[1] != 10 || len(o.Data) != 10*k.rows {
		return fmt.Sprintf("logits shape %v with %d values, want [%d 10]", o.Shape, len(o.Data), k.rows)
	}
	for i, v := range o.Data {
		if w := float64(fx.want[i]); math.Abs(v-w) > 1e-4 {
			return fmt.Sprintf("logits[%d] = %v, want %v (PyTorch's)", i, v, w)
		}
	}
	if r.ModelVersion == "2" {
		sawV2.Add(1)
	}
	if reloadedAt != 0 && sentAt > reloadedAt && r.ModelVersion != "2" {
		return fmt.Sprintf("sent after the reload to version 2 returned, answered by version %q", r.ModelVersion)
	}
	return ""
}

// goneClient sends a request of kind k over a connection of its own and
// closes it mid-request: after half the body, or after the whole body but
// before reading the answer. The server must simply carry on; an error is
// this client's failure to get as far as that.
func goneClient(addr, path string, k loadKind) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, len(k.body))
	n := len(k.body)
	if k.halfBody {
		n /= 2
	}
	if _, err := io.WriteString(c, head); err != nil {
		return fmt.Errorf("writing the header: %v", err)
	}
	if _, err := c.Write(k.body[:n]); err != nil {
		return fmt.Errorf("writing the body: %v", err)
	}
	return nil
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
