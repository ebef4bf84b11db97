// Command spore trains, evaluates, benchmarks and inspects spore's models
// on MNIST, which ships inside the module: nothing is downloaded.
//
//	spore train [flags]   train a model and report test accuracy and speed
//	spore eval --ckpt F   test accuracy of a saved checkpoint
//	spore bench [--json]  the seed network in both modes, side by side
//	spore graph [--out D] the training step's IR before and after every pass
//	spore dashboard --logdir D  the training dashboard in the browser
//	spore run M.onnx --input X.npy  run an ONNX model on NumPy inputs
//	spore onnx check|export  inspect an ONNX model; export mlp or lenet
//	spore serve --model-repository D  serve models over the Open Inference Protocol
//	spore version         the module version and VCS revision of the build
//
// Run "spore help COMMAND" (or "spore COMMAND --help") for a command's
// flags.
//
// Environment: SPORE_JIT=0 (or false, off, no) runs Graph mode eagerly,
// as MindSpore's MS_JIT=0 does; 1 (or true, on, yes), the default,
// compiles; any other value is refused. SPORE_SAVE_GRAPHS=DIR writes the
// IR of every compiled function to DIR.
//
// Every failure is one line on stderr and a non-zero exit status: 2 for a
// bad flag or argument, 130 for spore train stopped by Ctrl-C (which saves
// the last finished step with --save), 1 for anything else. Outside input (flags, --data
// files, checkpoints, the SPORE_JIT and SPORE_SAVE_GRAPHS environment
// variables, --save paths) is checked before any training starts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/sporeml/spore"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"train", "train a model on MNIST and report test accuracy and throughput", cmdTrain},
	{"eval", "report the test accuracy of a saved checkpoint", cmdEval},
	{"bench", "time the seed network in PyNative and Graph mode", cmdBench},
	{"graph", "dump the training step's IR before and after every pass", cmdGraph},
	{"dashboard", "serve the training dashboard for a log dir of summaries", cmdDashboard},
	{"run", "run an ONNX model on .npy inputs, print and save its outputs, time it", cmdRun},
	{"infer", "send .npy inputs to a model server (HTTP or gRPC) and print or save its outputs", cmdInfer},
	{"onnx", "check an ONNX model, or export mlp or lenet as ONNX", cmdOnnx},
	{"serve", "serve a model repository over HTTP and gRPC (Open Inference Protocol)", cmdServe},
	{"version", "print spore's version and the VCS revision it was built from", cmdVersion},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: spore COMMAND [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nenvironment:\n"+
		"  SPORE_JIT=0|1          0 runs Graph mode eagerly (also false/true, off/on, no/yes)\n"+
		"  SPORE_SAVE_GRAPHS=DIR  write the IR of every compiled function to DIR")
	fmt.Fprintln(w, "\nRun 'spore help COMMAND' for the flags of a command.")
}

// run dispatches to a command and turns its error into a one-line message
// and an exit status: 2 for usage errors, 1 for failures.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		// "spore help train" is "spore train --help".
		if len(args) > 2 {
			fmt.Fprintf(stderr, "spore help: want one command, got %q\n", strings.Join(args[1:], " "))
			return 2
		}
		args = []string{args[1], "--help"}
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := runCommand(c, args[1:], stdout, stderr)
		var exit *exitError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &exit):
			fmt.Fprintf(stderr, "spore %s: %s%s\n", c.name, rankPrefix(), message(err))
			return exit.code
		case errors.As(err, new(*usageError)):
			fmt.Fprintf(stderr, "spore %s: %s%s\n", c.name, rankPrefix(), message(err))
			return 2
		default:
			fmt.Fprintf(stderr, "spore %s: %s%s\n", c.name, rankPrefix(), message(err))
			return 1
		}
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	fmt.Fprintf(stderr, "spore: unknown command %q (commands: %s)\n", args[0], strings.Join(names, ", "))
	return 2
}

// runCommand runs c, turning a panic into an error. The commands check
// their input before use, so a panic here is a check they missed; the user
// still gets one line naming the cause instead of a goroutine dump. With
// GOTRACEBACK set, the panic goes on, stack and all, for whoever debugs.
func runCommand(c command, args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if os.Getenv("GOTRACEBACK") != "" {
			panic(r)
		}
		err = panicError(r)
	}()
	return c.run(args, stdout, stderr)
}

// panicError is the error a recovered panic value stands for.
func panicError(r any) error {
	var rerr runtime.Error
	switch e := r.(type) {
	case runtime.Error:
		rerr = e
	case error:
		return e
	default:
		return fmt.Errorf("%v", r)
	}
	return fmt.Errorf("internal error: %v (a bug in spore; run with GOTRACEBACK=1 for the stack)", rerr)
}

// message is err as the one line the user reads after "spore COMMAND: ".
// A spore.Error is shown as its op and message: its "spore:" prefix and
// source line (a line of this command, not of the user's) say nothing
// here. The training library's "train: " prefix repeats the command's
// context and is dropped.
func message(err error) string {
	var se *spore.Error
	if errors.As(err, &se) && err == error(se) {
		return se.Op + ": " + se.Msg
	}
	s := strings.TrimPrefix(err.Error(), "train: ")
	// One line, whatever a wrapped error contains.
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// usageError is a bad flag or argument.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// flags is a command's flag set with its help text.
type flags struct {
	*flag.FlagSet
	synopsis string
	stdout   io.Writer
}

// newFlags returns a flag set that reports errors instead of exiting; its
// --help goes to stdout.
func newFlags(name, synopsis string, stdout io.Writer) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // errors become one line; --help is printed by parse
	return &flags{FlagSet: fs, synopsis: synopsis, stdout: stdout}
}

// parse parses args, turning flag errors into one-line usage errors and
// printing the help on --help.
func parse(fs *flags, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(fs.stdout, "usage: spore %s [flags]\n\n%s\n\nflags:\n", fs.Name(), fs.synopsis)
			fs.SetOutput(fs.stdout)
			fs.PrintDefaults()
			return err
		}
		return usagef("%v (see 'spore %s --help')", err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'spore %s --help')", fs.Arg(0), fs.Name())
	}
	return nil
}
