// Command spore trains, evaluates, benchmarks and inspects spore's models
// on MNIST, which ships inside the module: nothing is downloaded.
//
//	spore train [flags]   train a model and report test accuracy and speed
//	spore eval --ckpt F   test accuracy of a saved checkpoint
//	spore bench [--json]  the seed network in both modes, side by side
//	spore graph [--out D] the training step's IR before and after every pass
//
// Run "spore COMMAND --help" for a command's flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: spore COMMAND [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-6s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'spore COMMAND --help' for the flags of a command.")
}

// run dispatches to a command and turns its error into a one-line message
// and an exit status: 2 for usage errors, 1 for failures.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, new(*usageError)):
			fmt.Fprintf(stderr, "spore %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "spore %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "spore: unknown command %q (commands: train, eval, bench, graph)\n", args[0])
	return 2
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
