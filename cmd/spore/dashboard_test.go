package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestDashboardBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dashboard"}, 2, "--logdir is required"},
		{[]string{"dashboard", "--logdir", dir, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"dashboard", "--logdir", file}, 1, "is a file, not a directory"},
		{[]string{"dashboard", "--logdir", dir, "--addr", "6006"}, 1, `address "6006" is not host:port`},
		{[]string{"dashboard", "--logdir", dir, "--addr", taken.Addr().String()}, 1, "is already in use"},
		// spore train refuses a taken port before it trains.
		{[]string{"train", "--steps", "1", "--dashboard", taken.Addr().String()}, 1, "--dashboard: address " + taken.Addr().String() + " is already in use"},
		{[]string{"train", "--dashboard-keep"}, 2, "--dashboard-keep needs --dashboard ADDR"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != tc.code || len(lines) != 1 || !strings.HasPrefix(errOut, "spore "+tc.args[0]+": ") || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d and one line containing %q", code, errOut, out, tc.code, tc.want)
			}
			if strings.Contains(errOut, "dashboard: dashboard:") {
				t.Errorf("stderr %q repeats its prefix", errOut)
			}
			if strings.Contains(out, "training ") {
				t.Errorf("training started before the refusal: %q", out)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer that a command can write while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestDashboardServes runs spore dashboard over a log dir that does not
// exist yet: it says so on the console, serves the page, and stops
// cleanly on an interrupt.
func TestDashboardServes(t *testing.T) {
	logdir := filepath.Join(t.TempDir(), "runs")
	var stdout, stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"dashboard", "--logdir", logdir, "--addr", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	serving := regexp.MustCompile(`serving .* at (http://127\.0\.0\.1:\d+/)`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := serving.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("spore dashboard did not say where it serves; stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	resp, err := http.Get(url + "api/runs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"status":"missing"`) {
		t.Errorf("/api/runs = %s, want the missing log dir's status", body)
	}
	// A page elsewhere that rebinds its name to this machine reads nothing.
	req, err := http.NewRequest("GET", url+"api/runs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), logdir) || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("Host evil.example: %d %s (X-Frame-Options %q), want 403 without the log dir, unframeable", resp.StatusCode, body, resp.Header.Get("X-Frame-Options"))
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "does not exist (yet)") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "spore dashboard: log dir "+logdir+" does not exist (yet)") {
		t.Errorf("stderr %q does not say that the log dir is missing", stderr.String())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("spore dashboard exited %d after an interrupt; stderr %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("spore dashboard did not stop on an interrupt")
	}
}

// TestTrainDashboard runs spore train --dashboard over a --summary-dir:
// it serves while training, on the run's summaries, and stops after.
func TestTrainDashboard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := runCLI(t, "train", "--epochs", "1", "--steps", "5", "--summary-dir", dir, "--dashboard", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`dashboard at (http://127\.0\.0\.1:\d+/) while training`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "dashboard stopped; spore dashboard --logdir "+dir+" serves the run again") {
		t.Fatalf("stdout does not say where the dashboard was and that it stopped:\n%s", out)
	}
	if _, err := http.Get(m[1] + "api/runs"); err == nil {
		t.Errorf("the dashboard still answers at %s after training", m[1])
	}
	s, ln, err := startDashboard(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if msg, ok := s.Status(); !ok || !strings.Contains(msg, "1 run(s)") {
		t.Errorf("the summary dir the dashboard served holds %q, want one run", msg)
	}
}

func TestDashboardHelp(t *testing.T) {
	out, errOut, code := runCLI(t, "help", "dashboard")
	if code != 0 || errOut != "" || !strings.Contains(out, "usage: spore dashboard") || !strings.Contains(out, "-logdir") || !strings.Contains(out, `default "127.0.0.1:6006"`) {
		t.Errorf("spore help dashboard: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, _ = runCLI(t, "help")
	if !strings.Contains(out, "dashboard") {
		t.Errorf("spore help does not list the dashboard command:\n%s", out)
	}
}
