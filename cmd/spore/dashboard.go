package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sporeml/spore/dashboard"
)

func cmdDashboard(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dashboard", "Serves the training dashboard for a log directory of summaries (spore train\n"+
		"--summary-dir, or any TensorBoard event files): scalar curves, histograms, the\n"+
		"compiled graphs and the compiler's passes, in the browser. The page needs no\n"+
		"network: everything it uses is inside spore. Runs appear, and curves grow, as\n"+
		"training writes. Stops on Ctrl-C.", stdout)
	logdir := fs.String("logdir", "", fmt.Sprintf("directory of runs to show (required), looked for at most %d levels below it; it may not exist yet", dashboard.MaxRunDepth))
	addr := fs.String("addr", dashboard.DefaultAddr, "host:port to serve on (the default is reachable from this machine only)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *logdir == "" {
		return usagef("--logdir is required (the directory given to spore train --summary-dir)")
	}
	s, ln, err := startDashboard(*logdir, *addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "serving %s at http://%s/ (Ctrl-C to stop)\n", s.Logdir(), ln.Addr())
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		fmt.Fprintf(stderr, "spore dashboard: note: %s is reachable from other machines, and the page shows the log dir's contents\n", ln.Addr())
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go reportStatus(ctx, s, stdout, stderr)
	return s.Serve(ln)
}

// startDashboard makes a dashboard over logdir and opens its address, so
// that a bad log dir or a port in use is reported before anything else
// starts.
func startDashboard(logdir, addr string) (*dashboard.Server, net.Listener, error) {
	s, err := dashboard.New(logdir)
	if err != nil {
		return nil, nil, unprefixed(err)
	}
	ln, err := dashboard.Listen(addr)
	if err != nil {
		return nil, nil, unprefixed(err)
	}
	return s, ln, nil
}

// unprefixed drops the package's "dashboard: " from err: the command's
// "spore dashboard: " already says where it comes from.
func unprefixed(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "dashboard: "))
}

// reportStatus tells the console what the log dir holds, at once and
// whenever that changes (it was missing, now holds a run), until ctx
// ends: the page shows the same line.
func reportStatus(ctx context.Context, s *dashboard.Server, stdout, stderr io.Writer) {
	last := ""
	for {
		msg, ok := s.Status()
		if msg != last {
			if ok {
				fmt.Fprintln(stdout, msg)
			} else {
				fmt.Fprintf(stderr, "spore dashboard: %s\n", msg)
			}
			last = msg
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// trainDashboard is the dashboard spore train --dashboard serves over
// the run's summary directory while it trains.
type trainDashboard struct {
	s    *dashboard.Server
	ln   net.Listener
	keep bool
	out  io.Writer
}

// serveTraining starts the dashboard of spore train --dashboard ADDR over
// *summaryDir, first making a temporary summary directory when there is
// none (and setting *summaryDir to it). It returns nil when addr is "".
// A port in use is refused here, before any training.
func serveTraining(addr string, summaryDir *string, keep bool, stdout io.Writer) (*trainDashboard, error) {
	if addr == "" {
		if keep {
			return nil, usagef("--dashboard-keep needs --dashboard ADDR")
		}
		return nil, nil
	}
	if *summaryDir == "" {
		dir, err := os.MkdirTemp("", "spore-summary-")
		if err != nil {
			return nil, fmt.Errorf("making a summary directory for --dashboard: %w", err)
		}
		*summaryDir = dir
		fmt.Fprintf(stdout, "summaries in %s (no --summary-dir given)\n", dir)
	}
	s, ln, err := startDashboard(*summaryDir, addr)
	if err != nil {
		return nil, fmt.Errorf("--dashboard: %w", err)
	}
	go s.Serve(ln)
	fmt.Fprintf(stdout, "dashboard at http://%s/ while training\n", ln.Addr())
	return &trainDashboard{s: s, ln: ln, keep: keep, out: stdout}, nil
}

// finish ends the dashboard once training is over: at once, or, with
// --dashboard-keep, after an interrupt. The summaries stay on disk either
// way, for spore dashboard --logdir.
func (d *trainDashboard) finish() {
	if d == nil {
		return
	}
	if d.keep {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		fmt.Fprintf(d.out, "training is over; the dashboard stays at http://%s/ until Ctrl-C\n", d.ln.Addr())
		<-ctx.Done()
		stop()
	} else {
		fmt.Fprintf(d.out, "dashboard stopped; spore dashboard --logdir %s serves the run again\n", d.s.Logdir())
	}
	d.ln.Close()
}

// close stops the dashboard without waiting (training failed).
func (d *trainDashboard) close() {
	if d != nil {
		d.ln.Close()
	}
}
