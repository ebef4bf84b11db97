package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sporeml/spore/profile"
	"github.com/sporeml/spore/summary"
)

// TestDashboardProfileInBrowser trains with --profile --summary-dir and
// checks the graph view in headless Chromium: below the training step's
// graph, a row per profiled step, the rows' nodes shaded, and a click on
// the row of most time selecting its node, whose details give its time.
func TestDashboardProfileInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browser := chromiumPath()
	if browser == "" {
		t.Skip("no chromium binary on PATH (apt-get install -y chromium, or set SPORE_CHROMIUM): the dashboard's browser test cannot run")
	}
	logdir := t.TempDir()
	runDir := filepath.Join(logdir, "mlp")
	out, errOut, code := runCLI(t, "train", "--epochs", "1", "--steps", "8", "--profile", "--summary-dir", runDir)
	if code != 0 {
		t.Fatalf("spore train --profile: exit %d\n%s%s", code, out, errOut)
	}
	runs, err := summary.ReadLogdir(logdir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("ReadLogdir: %d runs, %v", len(runs), err)
	}
	stepFile, rec := trainingStepRecord(t, runs[0])
	profs, err := profile.ReadRecords(runDir)
	if err != nil {
		t.Fatal(err)
	}
	var steps int
	for _, p := range profs {
		if p.Name == rec.Name && strings.HasPrefix(rec.Signature, p.Inputs) {
			steps = len(p.Steps)
		}
	}
	if steps == 0 {
		t.Fatalf("no profile of %s among %d", rec.Name, len(profs))
	}

	s, ln, err := startDashboard(logdir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	ctx, cancel := browserContext(t, browser)
	defer cancel()
	check(t, "graph view", chromedp.Do(ctx,
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate("http://"+ln.Addr().String()+"/#graphs"),
		chromedp.Click(chromedp.CSS(`#tabs button[data-view="graphs"]`)),
		chromedp.WaitReady(chromedp.CSS(`#graph-file option`)),
	))
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById("graph-file"); s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, stepFile))
	check(t, "profile panel", chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#profile-panel[data-state="shown"] tbody tr`))))
	// The first graph of the list (another compiled function, with a
	// profile of its own) may still be on show: wait until the panel and
	// the shading are the selected function's, or time out and let the
	// checks below say what is on show instead.
	_, _ = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll("#profile-panel tbody tr").length === %d && document.querySelectorAll("#graph-svg g.node.profiled").length === %d`, steps, steps)))
	if rows := eval[int](t, ctx, `document.querySelectorAll("#profile-panel tbody tr").length`); rows != steps {
		t.Errorf("the profile panel lists %d rows, want one per step: %d", rows, steps)
	}
	if shaded := eval[int](t, ctx, `document.querySelectorAll("#graph-svg g.node.profiled").length`); shaded != steps {
		t.Errorf("%d nodes shaded, want the %d steps' nodes", shaded, steps)
	}
	// Rows come most time first.
	shares := eval[[]string](t, ctx, `[...document.querySelectorAll("#profile-panel tbody tr")].map(r => r.cells[5].textContent)`)
	for i := 1; i < len(shares); i++ {
		var a, b float64
		fmt.Sscanf(shares[i-1], "%f", &a)
		fmt.Sscanf(shares[i], "%f", &b)
		if b > a {
			t.Fatalf("rows not in order of time: shares %v", shares)
		}
	}
	node := eval[string](t, ctx, `document.querySelector("#profile-panel tbody tr").dataset.node`)
	check(t, "clicking the top row", chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#profile-panel tbody tr`)),
		chromedp.WaitVisible(chromedp.CSS(`#node-details tr[data-field="time"]`)),
	))
	if sel := eval[string](t, ctx, `(document.querySelector("#graph-svg g.node.selected") || {id: ""}).id`); sel != "node-"+node {
		t.Errorf("clicking the row of node %s selected %q", node, sel)
	}
	shots := os.Getenv("SPORE_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	saveShot(t, shots, "dashboard-profile.png", shot(t, ctx))
}
