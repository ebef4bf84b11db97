package dashboard

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sporeml/spore/summary"
)

// DefaultAddr is where the dashboard listens unless told otherwise:
// the loopback interface only, on TensorBoard's port. Training logs can
// name files and hosts, so they are not offered to the network unless
// asked for with an explicit address.
const DefaultAddr = "127.0.0.1:6006"

//go:embed web/index.html web/app.js web/lib.js web/style.css web/vendor/graphviz.js web/vendor/LICENSE
var webFiles embed.FS

// Server serves the dashboard page and its JSON endpoints over one log
// directory. It reads the runs afresh (when any of their files changed)
// on every request, so a run being written shows up live.
//
// It answers only requests addressed to it by a loopback name
// (localhost, 127.0.0.0/8, [::1]) or by the address it was given to
// serve on: a page elsewhere that points its own host name at this
// machine (DNS rebinding) gets 403, not the log dir's contents.
type Server struct {
	logdir string
	read   func(logdir string, runDirs []string) ([]*summary.Run, error)
	mux    *http.ServeMux
	// now is the clock of the walk cache; tests set their own.
	now func() time.Time
	// maxWatch is maxWatchedDirs; tests set less.
	maxWatch int

	hostMu sync.RWMutex
	hosts  map[string]bool // host names and addresses served on, besides loopback

	mu    sync.Mutex
	scan  *scan // the last walk of the log dir
	walks int   // how many walks there were, for tests
	cache snapshot
}

// snapshot is the parsed log dir and the file-system fingerprint it was
// read at.
type snapshot struct {
	key  string
	view logView
}

// New returns a server over logdir. A log dir that does not exist yet,
// is empty or holds no event files is not an error: the page and Status
// say so, and the runs appear once a writer creates them. A path that
// exists but is not a directory is an error.
func New(logdir string) (*Server, error) {
	if logdir == "" {
		return nil, errors.New("dashboard: no log directory given")
	}
	abs, err := filepath.Abs(logdir)
	if err != nil {
		return nil, fmt.Errorf("dashboard: log dir %s: %w", logdir, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("dashboard: log dir %s is a file, not a directory", logdir)
	}
	s := &Server{logdir: abs, read: readRuns, now: time.Now, maxWatch: maxWatchedDirs, hosts: map[string]bool{}}
	s.routes()
	return s, nil
}

// Logdir is the absolute path of the directory the server reads.
func (s *Server) Logdir() string { return s.logdir }

// Status is a one-line account of what the log dir holds, for the
// console: "2 run(s) in DIR", or why there is nothing to show (missing,
// empty, foreign files only), in which case ok is false. The page shows
// the same line.
func (s *Server) Status() (msg string, ok bool) {
	v := s.load()
	if v.Status != statusOK {
		return v.Message, false
	}
	return v.Message, true
}

// ServeHTTP serves the page, its assets and the JSON endpoints. A bug
// that panics in a handler answers 500 with its message rather than
// printing a goroutine dump on the console of whoever runs the server.
//
// Every answer, errors included, forbids framing the page (so that no
// other site can overlay it) and content sniffing; a request whose Host
// is not this server's (see [Server]) gets 403.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", apiPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			httpError(w, http.StatusInternalServerError, "internal error serving %s: %s (a bug in spore)", clip(r.URL.Path), clip(fmt.Sprint(v)))
		}
	}()
	if !s.hostAllowed(r.Host) {
		httpError(w, http.StatusForbidden, "this dashboard does not answer to host %q: open it at localhost or at the address it serves on (a request for another host name may come from a page rebinding that name to this machine)", clip(r.Host))
		return
	}
	if len(r.URL.Path) > maxPath {
		// The mux's redirect to a cleaned path would repeat it whole.
		httpError(w, http.StatusRequestURITooLong, "a path of %d bytes (%s): the dashboard's paths are short", len(r.URL.Path), clip(r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// maxPath is the longest path the server reads: its own are a few dozen
// bytes.
const maxPath = 1024

// Content security policies: the JSON answers are no documents and may
// load nothing; the page loads only from this server. Neither may be
// framed by any page.
const (
	apiPolicy  = "default-src 'none'; frame-ancestors 'none'"
	pagePolicy = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' data:; frame-ancestors 'none'"
)

// hostAllowed reports whether a request's Host (with or without a port)
// names this server: a loopback name or address, or a host it serves on.
func (s *Server) hostAllowed(host string) bool {
	h := canonicalHost(host)
	if h == "" {
		return false
	}
	if h == "localhost" {
		return true
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return true
	}
	s.hostMu.RLock()
	defer s.hostMu.RUnlock()
	return s.hosts[h]
}

// canonicalHost is host without its port or brackets, in lower case, an
// address in its standard form, so that hosts compare as strings.
func canonicalHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// allowListener adds the hosts ln serves to the ones the server answers
// to: its address and, when Listen opened it, the host asked for (a
// name). A listener on every interface (0.0.0.0, [::]) adds the
// machine's own addresses and host name, which is how others reach it.
func (s *Server) allowListener(ln net.Listener) {
	var hosts []string
	if bl, ok := ln.(*listener); ok {
		hosts = append(hosts, bl.host)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		if a.IP.IsUnspecified() {
			if addrs, err := net.InterfaceAddrs(); err == nil {
				for _, ad := range addrs {
					if ipn, ok := ad.(*net.IPNet); ok {
						hosts = append(hosts, ipn.IP.String())
					}
				}
			}
			if name, err := os.Hostname(); err == nil {
				hosts = append(hosts, name)
			}
		} else {
			hosts = append(hosts, a.IP.String())
		}
	}
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	for _, h := range hosts {
		if h := canonicalHost(h); h != "" && h != "0.0.0.0" && h != "::" {
			s.hosts[h] = true
		}
	}
}

// listener is a listener that Listen opened, with the host it was asked
// for, which may be a name that its address does not tell.
type listener struct {
	net.Listener
	host string
}

// Listen opens addr (host:port; DefaultAddr when empty) for the
// dashboard, with a one-line error when the port is taken or the address
// is malformed.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: address %q is not host:port (for example %s)", addr, DefaultAddr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("dashboard: address %s is already in use (another dashboard or TensorBoard?); choose another port with --addr", addr)
		}
		return nil, fmt.Errorf("dashboard: cannot listen on %s: %w", addr, err)
	}
	return &listener{Listener: ln, host: host}, nil
}

// ListenAndServe listens on addr (DefaultAddr when empty) and serves
// until the listener fails. A port in use is a one-line error.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve serves the dashboard on ln until ln is closed; closing it ends
// Serve with a nil error. Requests may name the server by ln's address
// (or the host given to Listen) besides the loopback names.
func (s *Server) Serve(ln net.Listener) error {
	s.allowListener(ln)
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	err := srv.Serve(ln)
	if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *Server) routes() {
	web, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	s.mux = http.NewServeMux()
	files := s.secure(http.FileServerFS(web))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			httpError(w, http.StatusMethodNotAllowed, "%s %s: the dashboard is read-only (GET)", clip(r.Method), clip(r.URL.Path))
			return
		}
		files.ServeHTTP(w, r)
	})
	s.mux.HandleFunc("GET /api/runs", s.handleRuns)
	s.mux.HandleFunc("GET /api/scalars", s.handleScalars)
	s.mux.HandleFunc("GET /api/histograms", s.handleHistograms)
	s.mux.HandleFunc("GET /api/graph", s.handleGraph)
	s.mux.HandleFunc("GET /api/profile", s.handleProfile)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			httpError(w, http.StatusMethodNotAllowed, "%s %s: the dashboard's endpoints are read-only (GET)", clip(r.Method), clip(r.URL.Path))
			return
		}
		httpError(w, http.StatusNotFound, "no endpoint %s (endpoints: /api/runs, /api/scalars, /api/histograms, /api/graph, /api/profile)", clip(r.URL.Path))
	})
}

// secure sets the page's content security policy: everything comes
// from this server (the page works offline), and the layout engine may
// compile its WebAssembly.
func (s *Server) secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pagePolicy)
		h.ServeHTTP(w, r)
	})
}

// Status values of /api/runs.
const (
	statusOK      = "ok"
	statusMissing = "missing"
	statusEmpty   = "empty"
	statusForeign = "foreign"
	statusError   = "error"
)

// logView is the answer of /api/runs.
type logView struct {
	Logdir  string    `json:"logdir"`
	Status  string    `json:"status"`
	Message string    `json:"message"`
	Runs    []runInfo `json:"runs"`
	runs    []*summary.Run
}

// runInfo is one run as /api/runs lists it.
type runInfo struct {
	Name          string   `json:"name"`
	ScalarTags    []string `json:"scalarTags"`
	HistogramTags []string `json:"histogramTags"`
	Graphs        []string `json:"graphs"`
	Warnings      []string `json:"warnings"`
	LastStep      int64    `json:"lastStep"`
}

// load returns the log dir's view, re-reading the runs only when one of
// their files changed (name, size or modification time). Requests share
// one walk of the log dir (see currentScan): the page polls every two
// seconds, with a request per tag, and a walk of a big tree takes
// seconds.
func (s *Server) load() logView {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.currentScan()
	key := sc.fingerprint()
	if key != "" && key == s.cache.key {
		return s.cache.view
	}
	v := s.readView(sc)
	s.cache = snapshot{key: key, view: v}
	return v
}

// currentScan returns the last walk of the log dir, walking it again
// when there was none, the log dir could not be read, the walk is older
// than scanTTL, or one of its watched directories changed (an entry was
// added or removed there) — the last two no sooner than walkShare times
// the walk's duration after it began. s.mu is held.
func (s *Server) currentScan() *scan {
	now := s.now()
	if sc := s.scan; sc != nil && sc.err == nil {
		age := now.Sub(sc.at)
		if age < walkShare*sc.took || (age < scanTTL && !sc.dirsChanged()) {
			return sc
		}
	}
	sc := walkLogdir(s.logdir, s.maxWatch)
	sc.at = now
	sc.took = s.now().Sub(now)
	s.scan = sc
	s.walks++
	return sc
}

func (s *Server) readView(sc *scan) logView {
	v := logView{Logdir: s.logdir, Runs: []runInfo{}}
	fi, err := os.Stat(s.logdir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.Status, v.Message = statusMissing, fmt.Sprintf("log dir %s does not exist (yet): runs appear here once a writer creates it (spore train --summary-dir %s)", s.logdir, s.logdir)
		return v
	case err != nil:
		v.Status, v.Message = statusError, fmt.Sprintf("log dir %s: %v", s.logdir, err)
		return v
	case !fi.IsDir():
		v.Status, v.Message = statusError, fmt.Sprintf("log dir %s is a file, not a directory", s.logdir)
		return v
	}
	if sc.err != nil {
		v.Status, v.Message = statusError, fmt.Sprintf("log dir %s: %v", s.logdir, unwrapPath(sc.err))
		return v
	}
	runs, err := s.read(s.logdir, sc.runDirs())
	if err != nil {
		v.Status, v.Message = statusError, err.Error()
		return v
	}
	if len(runs) == 0 {
		n, example := sc.others, sc.example
		switch {
		case sc.deeper:
			// Not "empty": what lies below the bound was not looked at.
			v.Status, v.Message = statusForeign, fmt.Sprintf("log dir %s holds no event files (events.out.tfevents.*) within %d levels of it, and %d other file(s): runs deeper are not looked for; is it the right directory?", s.logdir, MaxRunDepth, n)
		case n == 0:
			v.Status, v.Message = statusEmpty, fmt.Sprintf("log dir %s is empty: no runs yet (write one with spore train --summary-dir %s)", s.logdir, s.logdir)
		default:
			v.Status, v.Message = statusForeign, fmt.Sprintf("log dir %s holds no event files (events.out.tfevents.*), only %d other file(s) such as %s: is it the right directory?", s.logdir, n, example)
		}
		return v
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	v.runs = runs
	for _, r := range runs {
		info := runInfo{Name: r.Name, ScalarTags: sortedKeys(r.Scalars), HistogramTags: sortedKeys(r.Histograms),
			Graphs: nonNil(r.Graphs), Warnings: nonNil(r.Warnings)}
		for _, pts := range r.Scalars {
			if len(pts) > 0 {
				info.LastStep = max(info.LastStep, pts[len(pts)-1].Step)
			}
		}
		v.Runs = append(v.Runs, info)
	}
	v.Status, v.Message = statusOK, fmt.Sprintf("%d run(s) in %s", len(runs), s.logdir)
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, s.load())
}

// scalarSeries is one run's points of one tag: [step, wall time, value]
// triples, in step order.
type scalarSeries struct {
	Run    string   `json:"run"`
	Points [][3]num `json:"points"`
}

// handleScalars answers /api/scalars?tag=T[&run=R]: the tag's points in
// every run that has it (or in run R only).
func (s *Server) handleScalars(w http.ResponseWriter, r *http.Request) {
	tag := r.URL.Query().Get("tag")
	if tag == "" {
		httpError(w, http.StatusBadRequest, "/api/scalars needs a tag parameter (for example ?tag=loss)")
		return
	}
	runs, ok := s.selectRuns(w, r)
	if !ok {
		return
	}
	out := struct {
		Tag    string         `json:"tag"`
		Series []scalarSeries `json:"series"`
	}{Tag: tag, Series: []scalarSeries{}}
	for _, run := range runs {
		pts, ok := run.Scalars[tag]
		if !ok {
			continue
		}
		ser := scalarSeries{Run: run.Name, Points: make([][3]num, 0, len(pts))}
		for _, p := range pts {
			ser.Points = append(ser.Points, [3]num{num(p.Step), num(p.WallTime), num(p.Value)})
		}
		out.Series = append(out.Series, ser)
	}
	if len(out.Series) == 0 {
		httpError(w, http.StatusNotFound, "no scalar tag %q in %s", clip(tag), runsNamed(r))
		return
	}
	writeJSON(w, out)
}

// handleHistograms answers /api/histograms?run=R&tag=T.
func (s *Server) handleHistograms(w http.ResponseWriter, r *http.Request) {
	tag := r.URL.Query().Get("tag")
	if tag == "" || !r.URL.Query().Has("run") {
		httpError(w, http.StatusBadRequest, "/api/histograms needs run and tag parameters (for example ?run=.&tag=param/dense.weight)")
		return
	}
	runs, ok := s.selectRuns(w, r)
	if !ok {
		return
	}
	hs, ok := runs[0].Histograms[tag]
	if !ok {
		httpError(w, http.StatusNotFound, "no histogram tag %q in run %q", clip(tag), runs[0].Name)
		return
	}
	type hist struct {
		Step        int64     `json:"step"`
		WallTime    float64   `json:"wallTime"`
		Min         num       `json:"min"`
		Max         num       `json:"max"`
		Num         num       `json:"num"`
		Sum         num       `json:"sum"`
		SumSquares  num       `json:"sumSquares"`
		BucketLimit []float64 `json:"bucketLimit"`
		Bucket      []float64 `json:"bucket"`
	}
	out := struct {
		Run        string `json:"run"`
		Tag        string `json:"tag"`
		Histograms []hist `json:"histograms"`
	}{Run: runs[0].Name, Tag: tag, Histograms: make([]hist, 0, len(hs))}
	for _, h := range hs {
		lim := make([]float64, len(h.BucketLimit))
		for i, l := range h.BucketLimit {
			lim[i] = edge(l)
		}
		out.Histograms = append(out.Histograms, hist{Step: h.Step, WallTime: h.WallTime,
			Min: num(h.Min), Max: num(h.Max), Num: num(h.Num), Sum: num(h.Sum),
			SumSquares: num(h.SumSquares), BucketLimit: lim, Bucket: h.Bucket})
	}
	writeJSON(w, out)
}

// handleGraph answers /api/graph?run=R&file=F with a compiled
// function's record, F being one of the run's graph files as
// /api/runs lists them (nothing else under the log dir is served).
func (s *Server) handleGraph(w http.ResponseWriter, r *http.Request) {
	_, data, ok := s.graphRecord(w, r, "/api/graph needs run and file parameters (files as /api/runs lists them)")
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(data)
}

// graphRecord reads the compiled function's record that the run and
// file parameters of r name, F being one of the run's graph files as
// /api/runs lists them (nothing else under the log dir is served), and
// checks its shape. Otherwise it answers the request itself, with usage
// when a parameter is missing, and reports false.
func (s *Server) graphRecord(w http.ResponseWriter, r *http.Request, usage string) (*summary.Run, []byte, bool) {
	file := r.URL.Query().Get("file")
	if file == "" || !r.URL.Query().Has("run") {
		httpError(w, http.StatusBadRequest, "%s", usage)
		return nil, nil, false
	}
	runs, ok := s.selectRuns(w, r)
	if !ok {
		return nil, nil, false
	}
	run := runs[0]
	if !slices.Contains(run.Graphs, file) {
		httpError(w, http.StatusNotFound, "run %q has no graph file %q", run.Name, clip(file))
		return nil, nil, false
	}
	data, err := os.ReadFile(filepath.Join(run.Dir, filepath.FromSlash(file)))
	if err != nil {
		httpError(w, http.StatusInternalServerError, "reading graph %s of run %q: %v", file, run.Name, unwrapPath(err))
		return nil, nil, false
	}
	// The page draws what it is sent; a record of another shape (an
	// older spore's, a foreign file) is refused here, with the reason,
	// rather than failing in the page's script.
	if err := checkRecord(data); err != nil {
		httpError(w, http.StatusUnprocessableEntity, "malformed graph file %s of run %q: %v", file, run.Name, err)
		return nil, nil, false
	}
	return run, data, true
}

// selectRuns returns the run named by the run parameter, or every run
// when there is none; it answers the request itself with an error when
// the log dir has no runs or the named run does not exist.
func (s *Server) selectRuns(w http.ResponseWriter, r *http.Request) ([]*summary.Run, bool) {
	v := s.load()
	if v.Status != statusOK {
		httpError(w, http.StatusNotFound, "%s", v.Message)
		return nil, false
	}
	if !r.URL.Query().Has("run") {
		return v.runs, true
	}
	name := r.URL.Query().Get("run")
	for _, run := range v.runs {
		if run.Name == name {
			return []*summary.Run{run}, true
		}
	}
	names := make([]string, len(v.runs))
	for i, run := range v.runs {
		names[i] = fmt.Sprintf("%q", run.Name)
	}
	if len(names) > maxNamed {
		names = append(names[:maxNamed], fmt.Sprintf("and %d more", len(names)-maxNamed))
	}
	httpError(w, http.StatusNotFound, "no run %q in %s (runs: %s)", clip(name), s.logdir, strings.Join(names, ", "))
	return nil, false
}

// maxNamed is how many runs an error names: a log dir can hold
// hundreds.
const maxNamed = 20

func runsNamed(r *http.Request) string {
	if r.URL.Query().Has("run") {
		return fmt.Sprintf("run %q", clip(r.URL.Query().Get("run")))
	}
	return "any run"
}

// maxEcho is how many bytes of a request's own text (a tag, a run name,
// a path, a host) an error message repeats: enough to recognise it, and
// a megabyte parameter is not sent back whole.
const maxEcho = 100

// clip is s cut to maxEcho bytes, on a character boundary, with an
// ellipsis when it was longer.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// num is a float64 that JSON can always hold: NaN and ±Inf (a diverged
// loss) are sent as null, which the page draws as a gap, rather than
// failing the whole answer.
type num float64

// MarshalJSON writes n, or null when n is not finite.
func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// edge clamps a histogram bucket edge to a finite value: the open end
// buckets of some writers reach ±Inf.
func edge(v float64) float64 {
	return math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, v))
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "encoding the answer: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(data)
}

// httpError answers with status and a JSON body {"error": message}.
func httpError(w http.ResponseWriter, status int, format string, args ...any) {
	data, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(data)
}
