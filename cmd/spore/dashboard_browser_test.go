package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/summary"
)

// chromiumPath is the headless browser the dashboard test drives:
// Debian's chromium, or whatever $SPORE_CHROMIUM names.
func chromiumPath() string {
	if p := os.Getenv("SPORE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDashboardInBrowser trains the seed network for a few dozen steps
// with --summary-dir, serves the log dir as spore dashboard does, and
// checks the page in headless Chromium: the loss curve has a vertex per
// logged step, the graph view draws every node of the training step's
// compiled graph, clicking a node shows its details, the pass view
// highlights what passes changed, and nothing is fetched from outside the
// server. It saves screenshots of the views in $SPORE_SCREENSHOT_DIR
// (the README's come from there), else in the test's temporary dir.
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browser := chromiumPath()
	if browser == "" {
		t.Skip("no chromium binary on PATH (apt-get install -y chromium, or set SPORE_CHROMIUM): the dashboard's browser test cannot run")
	}
	logdir := t.TempDir()
	runDir := filepath.Join(logdir, "mlp")
	const steps = 40
	makeTrainingRun(t, runDir, steps)

	// What the page must show, from the summary reader.
	runs, err := summary.ReadLogdir(logdir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("ReadLogdir: %d runs, %v", len(runs), err)
	}
	lossPoints := len(runs[0].Scalars["loss"])
	if lossPoints != steps {
		t.Fatalf("the run logged %d loss points, want %d", lossPoints, steps)
	}
	stepFile, rec := trainingStepRecord(t, runs[0])
	final := rec.Passes[len(rec.Passes)-1].Graph
	clickNode := final.Nodes[0]
	for _, n := range final.Nodes {
		if n.Kind == "fused" || (n.Kind == "op" && clickNode.Kind != "fused") {
			clickNode = n
		}
	}
	// A record of the wrong shape, which the page must call malformed
	// rather than fail on.
	const brokenFile = "graphs/Broken-1.json"
	if err := os.WriteFile(filepath.Join(runDir, filepath.FromSlash(brokenFile)), []byte(`{"name":"Broken","passes":[{"pass":"trace","text":"","graph":{"nodes":"oops","outputs":[]}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}

	s, ln, err := startDashboard(logdir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	origin := "http://" + ln.Addr().String()

	ctx, cancel := browserContext(t, browser)
	defer cancel()
	check(t, "starting chromium", chromedp.Do(ctx)) // opens the tab, so no event is missed
	var mu sync.Mutex
	var foreign, exceptions []string
	servers := map[string]bool{origin: true} // the dashboards the page may fetch from
	check(t, "listening", chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			ok := strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:")
			for o := range servers {
				ok = ok || strings.HasPrefix(u, o+"/")
			}
			if !ok {
				foreign = append(foreign, u)
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			exceptions = append(exceptions, msg)
		}
	}))
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("SPORE_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}

	// The scalar view: one vertex per logged step in the loss curve.
	loss := chromedp.CSS(`.scalar-card[data-tag="loss"] path.curve`)
	check(t, "scalar view", chromedp.Do(ctx,
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(origin+"/"),
		chromedp.WaitVisible(loss),
	))
	vertices := eval[int](t, ctx, `(document.querySelector('.scalar-card[data-tag="loss"] path.curve').getAttribute("d").match(/[ML]/g) || []).length`)
	dataPoints := eval[int](t, ctx, `Number(document.querySelector('.scalar-card[data-tag="loss"] path.curve').dataset.points)`)
	if vertices != lossPoints || dataPoints != lossPoints {
		t.Errorf("the loss curve has %d vertices (data-points %d), want one per logged step: %d", vertices, dataPoints, lossPoints)
	}
	saveShot(t, shots, "dashboard-scalars.png", shot(t, ctx))

	// The histogram view draws a ridge per recorded step.
	check(t, "histogram view", chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tabs button[data-view="histograms"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.hist-card path.ridge`)),
	))
	if ridges := eval[int](t, ctx, `document.querySelectorAll(".hist-card path.ridge").length`); ridges == 0 {
		t.Error("the histogram view drew no ridges")
	}
	saveShot(t, shots, "dashboard-histograms.png", shot(t, ctx))

	// The graph view: the training step's graph, every node drawn.
	check(t, "graph view", chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tabs button[data-view="graphs"]`)),
		chromedp.WaitReady(chromedp.CSS(`#graph-file option`)),
	))
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById("graph-file"); s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, stepFile))
	check(t, "graph layout", chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#graph-svg[data-nodes="%d"] g.node`, len(final.Nodes)))),
	))
	// Every node of the record is drawn, with its id, and nothing else.
	drawn := eval[[]string](t, ctx, `[...document.querySelectorAll("#graph-svg g.node")].map(g => g.id)`)
	want := map[string]bool{}
	for _, n := range final.Nodes {
		want[fmt.Sprintf("node-%d", n.ID)] = true
	}
	missing := len(want)
	for _, id := range drawn {
		if want[id] {
			missing--
			want[id] = false
		}
	}
	if len(drawn) != len(final.Nodes) || missing != 0 {
		t.Errorf("the graph view drew %d nodes, %d of the record's missing; want the %d nodes of %s's final graph", len(drawn), missing, len(final.Nodes), rec.Name)
	}
	check(t, "clicking a node", chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#graph-svg g.node#node-%d`, clickNode.ID))),
		chromedp.WaitVisible(chromedp.CSS(`#node-details tr[data-field="op"]`)),
	))
	saveShot(t, shots, "dashboard-graph.png", shot(t, ctx))
	fields := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll("#node-details tr")].map(r => [r.dataset.field, r.cells[1].textContent]))`)
	wantPass := "made by " + clickNode.Pass
	if len(clickNode.Fused) > 0 {
		wantPass = "fused by " + clickNode.Pass
	}
	shape, _ := json.Marshal(clickNode.Shape)
	for field, want := range map[string]string{
		"op": clickNode.Op, "kind": clickNode.Kind, "dtype": clickNode.DType, "pass": wantPass,
		"shape": strings.ReplaceAll(string(shape), ",", ", "),
	} {
		if fields[field] != want {
			t.Errorf("clicking node %%%d: details say %s %q, want %q (all: %v)", clickNode.ID, field, fields[field], want, fields)
		}
	}
	viewBox := eval[string](t, ctx, `document.getElementById("graph-svg").getAttribute("viewBox")`)
	check(t, "zooming", chromedp.Do(ctx, chromedp.Click(chromedp.ID("zoom-in"))))
	if zoomed := eval[string](t, ctx, `document.getElementById("graph-svg").getAttribute("viewBox")`); zoomed == viewBox {
		t.Errorf("zooming in left the graph's viewBox at %q", viewBox)
	}
	// The wheel zooms and a drag pans (moving the viewBox's corner, not
	// its size).
	moves := eval[[]string](t, ctx, `(() => {
		const svg = document.getElementById("graph-svg");
		const r = svg.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
		const vb = () => svg.getAttribute("viewBox");
		const out = [vb()];
		svg.dispatchEvent(new WheelEvent("wheel", {clientX: x, clientY: y, deltaY: -200, bubbles: true, cancelable: true}));
		out.push(vb());
		const p = (type, dx) => svg.dispatchEvent(new PointerEvent(type, {clientX: x + dx, clientY: y + dx, pointerId: 1, bubbles: true}));
		p("pointerdown", 0); p("pointermove", 40); p("pointermove", 80); p("pointerup", 80);
		out.push(vb());
		return out;
	})()`)
	size := func(vb string) string { f := strings.Fields(vb); return strings.Join(f[2:], " ") }
	corner := func(vb string) string { f := strings.Fields(vb); return strings.Join(f[:2], " ") }
	if len(moves) != 3 || size(moves[1]) == size(moves[0]) || corner(moves[2]) == corner(moves[1]) || size(moves[2]) != size(moves[1]) {
		t.Errorf("viewBox before, after the wheel and after a drag: %q; want the wheel to resize it and the drag to move it", moves)
	}

	// The malformed record: the graph view says so, with the reason.
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById("graph-file"); s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, brokenFile))
	waitText(t, ctx, "#graph-viewport", "malformed graph file "+brokenFile)
	if text := eval[string](t, ctx, `document.getElementById("graph-viewport").textContent`); !strings.Contains(text, "nodes is a string, want an array") {
		t.Errorf("over a malformed record the graph view says %q, want the reason", text)
	}

	// The pass view: some pass of the training step changes its IR, and
	// the changed lines are highlighted.
	check(t, "pass view", chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tabs button[data-view="passes"]`)),
		chromedp.WaitReady(chromedp.CSS(`#pass-file option`)),
	))
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById("pass-file"); s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, stepFile))
	// Shown first: the first pass that changed the IR, its changes
	// highlighted.
	highlighted := `document.querySelectorAll("#pass-diff td.add, #pass-diff td.del").length`
	check(t, "pass diff", chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#pass-diff td.add, #pass-diff td.del`))))
	if first := eval[string](t, ctx, `document.querySelector("#pass-list button.active").textContent`); !regexp.MustCompile(`[−+][1-9]`).MatchString(first) {
		t.Errorf("the pass view opens on %q, want the first pass that changed the IR", first)
	}
	if eval[int](t, ctx, highlighted) == 0 {
		t.Error("the pass view highlights no changed line")
	}
	saveShot(t, shots, "dashboard-passes.png", shot(t, ctx))
	// Clicking the last pass that changed the IR shows that one.
	last := eval[string](t, ctx, `(() => { const bs = [...document.querySelectorAll("#pass-list button")].filter(b => b.dataset.pass !== "0" && /[−+][1-9]/.test(b.textContent)); const b = bs[bs.length - 1]; b.click(); return b.dataset.pass; })()`)
	check(t, "clicking a pass", chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#pass-list button.active[data-pass="%s"]`, last)))))
	if eval[int](t, ctx, highlighted) == 0 {
		t.Errorf("pass %s changed the IR, but the pass view highlights no line of it", last)
	}

	// The pass view over the malformed record says so too.
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById("pass-file"); s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, brokenFile))
	waitText(t, ctx, "#pass-diff", "malformed graph file "+brokenFile)

	// Live: a run that appears while the page is open is drawn at the
	// next poll, without a reload.
	check(t, "scalar view again", chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tabs button[data-view="scalars"]`))))
	w, err := summary.NewWriter(filepath.Join(logdir, "live"))
	if err != nil {
		t.Fatal(err)
	}
	for step := int64(1); step <= 5; step++ {
		w.AddScalar("loss", step, 2/float64(step))
		// An accuracy that reaches 100%: its axis must stop there.
		w.AddScalar("eval/accuracy", step, []float64{0.5, 0.8, 0.95, 1, 1}[step-1])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check(t, "a run written while the page is open", chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`.scalar-card[data-tag="loss"] path.curve[data-run="live"][data-points="5"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.scalar-card[data-tag="eval/accuracy"] path.curve[data-run="live"][data-points="5"]`)),
	))
	if top := eval[string](t, ctx, `document.querySelector('.scalar-card[data-tag="eval/accuracy"] svg').dataset.ymax`); top != "1" {
		t.Errorf("the accuracy axis runs up to %q, want 1 (100%%)", top)
	}

	// A log dir with nothing to show says so on the page.
	foreignDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreignDir, "notes.txt"), []byte("not a summary"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ logdir, want string }{
		{filepath.Join(logdir, "no-such-dir"), "does not exist (yet)"},
		{foreignDir, "holds no event files"},
	} {
		s2, ln2, err := startDashboard(tc.logdir, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s2.Serve(ln2)
		origin2 := "http://" + ln2.Addr().String()
		mu.Lock()
		servers[origin2] = true
		mu.Unlock()
		check(t, "the page over "+tc.logdir, chromedp.Do(ctx,
			chromedp.Navigate(origin2+"/"),
			chromedp.WaitVisible(chromedp.ID("banner")),
		))
		if banner := eval[string](t, ctx, `document.getElementById("banner").textContent`); !strings.Contains(banner, tc.want) || !strings.Contains(banner, tc.logdir) {
			t.Errorf("over %s the page says %q, want a message naming the dir and containing %q", tc.logdir, banner, tc.want)
		}
		ln2.Close()
	}

	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 {
		t.Errorf("the page fetched from outside the server: %q", foreign)
	}
	if len(exceptions) > 0 {
		t.Errorf("the page threw: %q", exceptions)
	}
}

// waitText waits until the element that selector names shows want.
func waitText(t *testing.T, ctx context.Context, selector, want string) {
	t.Helper()
	expr := fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes(%q)`, selector, want)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr)); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, selector)))
		t.Fatalf("waiting for %s to show %q: %v (it shows %q)", selector, want, err, got)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// shot is a PNG of the viewport.
func shot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	data, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return data
}

// makeTrainingRun trains the seed network in Graph mode for steps steps
// with spore train --summary-dir runDir.
func makeTrainingRun(t *testing.T, runDir string, steps int) {
	t.Helper()
	out, errOut, code := runCLI(t, "train", "--epochs", "1", "--steps", fmt.Sprint(steps), "--summary-dir", runDir)
	if code != 0 {
		t.Fatalf("spore train --summary-dir: exit %d\n%s%s", code, out, errOut)
	}
}

// trainingStepRecord returns the run's record of the compiled training
// step (the largest graph it holds) and its file as the page lists it.
func trainingStepRecord(t *testing.T, run *summary.Run) (string, spore.CompileRecord) {
	t.Helper()
	var best spore.CompileRecord
	var bestFile string
	for _, f := range run.Graphs {
		data, err := os.ReadFile(filepath.Join(run.Dir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		var rec spore.CompileRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(rec.Passes) == 0 {
			continue
		}
		if bestFile == "" || len(rec.Passes[len(rec.Passes)-1].Graph.Nodes) > len(best.Passes[len(best.Passes)-1].Graph.Nodes) {
			best, bestFile = rec, f
		}
	}
	if bestFile == "" {
		t.Fatalf("the run recorded no compiled graph (files %q)", run.Graphs)
	}
	return bestFile, best
}

// browserContext starts headless Chromium with flags that work in a
// container as root, a fresh profile, and a deadline.
func browserContext(t *testing.T, path string) (context.Context, context.CancelFunc) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	return ctx, func() { cancelTimeout(); cancelCtx(); cancelAlloc() }
}

func check(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// saveShot checks that data is a PNG of the page and writes it to
// dir/name.
func saveShot(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 600 {
		t.Errorf("screenshot %s is %v, want the 1400×900 page", name, b)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s", path)
}

// TestDashboardScripts runs the page's pure functions (web/lib.js) in
// headless Chromium: TensorBoard's debiased smoothing, the IR line diff,
// histogram rebinning, axis ticks and the graph's DOT text.
func TestDashboardScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browser := chromiumPath()
	if browser == "" {
		t.Skip("no chromium binary on PATH (apt-get install -y chromium, or set SPORE_CHROMIUM): the dashboard's script test cannot run")
	}
	s, ln, err := startDashboard(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	ctx, cancel := browserContext(t, browser)
	defer cancel()
	check(t, "loading the page", chromedp.Do(ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/")))
	const round = `(v) => v.map(x => x == null ? null : Number(x.toFixed(4)))`
	for _, tc := range []struct{ name, expr, want string }{
		{"smoothing keeps a constant constant", `round(m.smooth([1, 1, 1], 0.6))`, `[1,1,1]`},
		{"no smoothing at weight 0", `m.smooth([0, 10, 5], 0)`, `[0,10,5]`},
		{"smoothing skips a gap, debiased", `round(m.smooth([2, null, 4], 0.5))`, `[2,null,3.3333]`},
		{"a line removed and one added", `m.diffLines(["a", "b", "c"], ["a", "c", "d"])`, `[["=",0,0],["-",1,null],["=",2,1],["+",null,2]]`},
		{"a line replaced", `m.diffLines(["a", "b", "c"], ["a", "x", "c"])`, `[["=",0,0],["+",null,1],["-",1,null],["=",2,2]]`},
		{"value numbers ignored", `m.diffLines(["%1 = Add(%0)", "%2 = Neg(%1)"], ["%3 = Add(%0)", "%4 = Neg(%3)"], (s) => s.replace(/%\d+/g, "%_"))`, `[["=",0,0],["=",1,1]]`},
		{"value numbers compared", `m.diffLines(["%1 = Add(%0)"], ["%3 = Add(%0)"]).map(o => o[0])`, `["+","-"]`},
		{"from nothing", `m.diffLines([], ["x", "y"])`, `[["+",null,0],["+",null,1]]`},
		{"to nothing", `m.diffLines(["x"], [])`, `[["-",0,null]]`},
		{"the longest common part kept", `m.diffLines(["a","b","c","d","e"], ["b","c","x","d"]).filter(o => o[0] === "=").length`, `3`},
		{"rebinning onto the same edges", `m.rebin({min: 0, max: 2, bucketLimit: [1, 2], bucket: [2, 4]}, 0, 2, 2)`, `[2,4]`},
		{"rebinning spreads a bucket", `m.rebin({min: 0, max: 1, bucketLimit: [1], bucket: [3]}, 0, 2, 4)`, `[1.5,1.5,0,0]`},
		{"rebinning a point mass", `m.rebin({min: 1, max: 1, bucketLimit: [1], bucket: [5]}, 0, 2, 2)`, `[0,5]`},
		{"rebinning an open end", `m.rebin({min: -1, max: 1, bucketLimit: [0, 1.7976931348623157e308], bucket: [1, 1]}, -1, 1, 2)`, `[1,1]`},
		{"ticks", `m.niceTicks(0, 1)`, `[0,0.2,0.4,0.6,0.8,1]`},
		{"a y axis padded by 5%", `m.yRange("loss", [0, 10])`, `[-0.5,10.5]`},
		{"a flat y axis widened", `round(m.yRange("loss", [2, 2]))`, `[1.78,2.22]`},
		{"an accuracy axis stops at 100%", `m.yRange("accuracy", [0.5, 0.9, 1])[1]`, `1`},
		{"an accuracy axis stops at 0%", `m.yRange("accuracy", [0, 0.5])[0]`, `0`},
		{"a flat accuracy of 100%", `round(m.yRange("accuracy", [1, 1, 1]))`, `[0.89,1]`},
		{"acc is an accuracy", `m.yRange("train/acc", [0.2, 1])[1]`, `1`},
		{"val_acc is an accuracy", `m.yRange("val_acc", [0.2, 1])[1]`, `1`},
		{"top1-accuracy is an accuracy", `m.yRange("eval/Top1-Accuracy", [0.2, 1])[1]`, `1`},
		{"an accuracy in percent stops at 100", `m.yRange("eval/accuracy", [50, 100])[1]`, `100`},
		{"a loss in [0, 1] is padded", `m.yRange("loss", [0.5, 1])[1] > 1`, `true`},
		{"accumulated is no accuracy", `m.yRange("accumulated", [0.5, 1])[1] > 1`, `true`},
		{"an accuracy above 100% is not cut", `m.yRange("accuracy", [50, 150])[1] > 150`, `true`},
		{"DOT: nodes, edges and updates", `(() => { const d = m.toDot("f", {nodes: [
			{id: 0, op: "param", kind: "param", inputs: [], shape: [2], dtype: "float32", attrs: {name: "w"}},
			{id: 1, op: "Neg", kind: "op", inputs: [0], shape: [2], dtype: "float32"}], outputs: [1], assigns: [{param: 0, value: 1}]});
			return [d.includes('n0 [id="node-0", label="param w\\nfloat32[2]"'), d.includes("n0 -> n1;"), d.includes("n1 -> n0 [style=dashed"), d.includes("peripheries=2")]; })()`, `[true,true,true,true]`},
		{"DOT: quotes escaped", `m.toDot("a\"b", {nodes: [], outputs: []}).split("\n")[0]`, `"digraph \"a\\\"b\" {"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expr := fmt.Sprintf(`import("/lib.js").then((m) => { const round = %s; return JSON.stringify(%s); })`, round, tc.expr)
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("%s: %v", tc.expr, err)
			}
			if got != tc.want {
				t.Errorf("%s\n = %s\nwant %s", tc.expr, got, tc.want)
			}
		})
	}
}
