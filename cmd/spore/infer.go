package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sporeml/spore/npy"
	"github.com/sporeml/spore/ops"
	"github.com/sporeml/spore/serve"
	"github.com/sporeml/spore/serve/client"
	"github.com/sporeml/spore/tensor"
)

const inferSynopsis = `spore infer (--url http://HOST:PORT | --grpc HOST:PORT) --model NAME [--input [NAME=]X.npy ...] [flags]

Sends .npy files to a model server that speaks the Open Inference Protocol
(spore serve, Triton, KServe) and prints each output's name, shape,
datatype and a summary (min, max, mean, first values).

Inputs: --input NAME=PATH gives the input NAME; --input PATH gives the
model's inputs in the order its metadata lists them; --input PATH.npz gives
the inputs named by the archive's keys. A float input of another precision
than the model declares (NumPy's default float64 for an FP32 model) is
converted.

Over HTTP the tensors travel in the binary-data extension unless
--http-json asks for JSON. --output NAME asks for only the outputs named;
--out DIR writes each output to DIR/NAME.npy (a BF16 output as float32,
which NumPy has and which holds its values exactly). --timeout bounds the
request, on the server too.`

// inferOptions are spore infer's flags.
type inferOptions struct {
	url, grpc      string
	model, version string
	inputs         stringList
	outputs        stringList
	out            string
	httpJSON       bool
	json           bool
	timeout        time.Duration
}

func cmdInfer(args []string, stdout, stderr io.Writer) error {
	var o inferOptions
	fs := newFlags("infer", inferSynopsis, stdout)
	fs.StringVar(&o.url, "url", "", "the server's HTTP base URL, http://HOST:PORT")
	fs.StringVar(&o.grpc, "grpc", "", "the server's gRPC address, HOST:PORT")
	fs.StringVar(&o.model, "model", "", "the model to run")
	fs.StringVar(&o.version, "version", "", "the model version (default: the one the server serves)")
	fs.Var(&o.inputs, "input", "an input: NAME=PATH.npy, PATH.npy (in the model's order), or PATH.npz (by name); repeatable")
	fs.Var(&o.outputs, "output", "an output to ask for, by name (default: all); repeatable")
	fs.StringVar(&o.out, "out", "", "write each output to DIR/NAME.npy")
	fs.BoolVar(&o.httpJSON, "http-json", false, "with --url: send and receive tensors as JSON instead of binary data")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of text")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "the request's deadline, on the server too")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q: inputs go in --input flags (see 'spore infer --help')", pos[0])
	case o.url == "" && o.grpc == "":
		return usagef("no server given: pass --url http://HOST:PORT or --grpc HOST:PORT")
	case o.url != "" && o.grpc != "":
		return usagef("--url and --grpc both given; choose one transport")
	case o.model == "":
		return usagef("no model given: pass --model NAME")
	case o.timeout <= 0:
		return usagef("--timeout %v must be positive", o.timeout)
	case o.httpJSON && o.grpc != "":
		return usagef("--http-json is for --url; gRPC always sends binary data")
	case set["version"] && o.version == "":
		return usagef("--version is empty; leave it out for the version the server serves")
	}
	if o.out != "" {
		if err := prepareOutDir(o.out); err != nil {
			return err
		}
	}
	var c *client.Client
	server := o.url
	if o.url != "" {
		var opts []client.Option
		if o.httpJSON {
			opts = append(opts, client.WithJSON())
		}
		c, err = client.NewHTTP(o.url, opts...)
	} else {
		server = o.grpc
		c, err = client.NewGRPC(o.grpc)
	}
	if err != nil {
		return usagef("%s", strings.TrimPrefix(err.Error(), "client: "))
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	md, err := c.ModelMetadata(ctx, o.model, o.version)
	if err != nil {
		return serverError(server, err)
	}
	ins, sources, err := bindInferInputs(md, o.inputs)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := c.Infer(ctx, o.model, o.version, ins, o.outputs...)
	if err != nil {
		return serverError(server, err)
	}
	took := time.Since(start)

	r := inferResult{Server: server, Model: res.Model, Version: res.Version, LatencyMS: ms(took)}
	for i, in := range ins {
		r.Inputs = append(r.Inputs, valueJSON{Name: in.Name, Shape: shapeOf(in.Tensor), DType: serve.Datatype(in.Tensor.DType()), Source: sources[i]})
	}
	for _, out := range res.Outputs {
		v := valueJSON{Name: out.Name, Shape: shapeOf(out.Tensor), DType: out.Datatype}
		v.summarize(out.Tensor)
		if o.out != "" {
			path, err := writeInferOutput(o.out, out)
			if err != nil {
				return err
			}
			v.File = path
		}
		r.Outputs = append(r.Outputs, v)
	}
	if o.json {
		return json.NewEncoder(stdout).Encode(r)
	}
	r.print(stdout)
	return nil
}

// serverError is a failed call as the user reads it: what the server
// answered, or that it could not be reached.
func serverError(server string, err error) error {
	if client.StatusOf(err) != 0 {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "client: ")
	if strings.Contains(msg, server) {
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %s", server, msg)
}

// bindInferInputs reads the --input flags and names them by the model's
// metadata: NAME=PATH by name, a plain PATH by position, an .npz by its
// keys. Float inputs are converted to the float datatype the model
// declares.
func bindInferInputs(md serve.ModelMetadata, flags []string) ([]client.Input, []string, error) {
	declared := map[string]serve.TensorMetadata{}
	var names []string
	for _, in := range md.Inputs {
		declared[in.Name] = in
		names = append(names, in.Name)
	}
	var ins []client.Input
	var sources []string
	given := map[string]string{}
	add := func(name string, t *tensor.Tensor, src string) error {
		if prev, dup := given[name]; dup {
			return usagef("input %q is given twice (%s and %s)", name, prev, src)
		}
		given[name] = src
		if d, ok := declared[name]; ok && t.DType().IsFloat() {
			if want, err := serve.DTypeOf(d.Datatype); err == nil && want.IsFloat() && want != t.DType() {
				src += fmt.Sprintf(" (%v converted to %s)", t.DType(), d.Datatype)
				t = ops.Cast(t, want)
			}
		}
		ins = append(ins, client.Input{Name: name, Tensor: t})
		sources = append(sources, src)
		return nil
	}
	next := 0 // the next declared input a plain path fills
	for _, f := range flags {
		if name, path, ok := strings.Cut(f, "="); ok && name != "" {
			if _, serr := os.Stat(f); serr != nil {
				t, err := npy.ReadFile(path)
				if err != nil {
					return nil, nil, fmt.Errorf("--input %s: %v", f, err)
				}
				if err := add(name, t, path); err != nil {
					return nil, nil, err
				}
				continue
			}
		}
		if strings.HasSuffix(f, ".npz") {
			keys, ts, err := npy.ReadNPZ(f)
			if err != nil {
				return nil, nil, fmt.Errorf("--input %s: %v", f, err)
			}
			for k, key := range keys {
				if err := add(key, ts[k], f+":"+key); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		for next < len(names) && given[names[next]] != "" {
			next++
		}
		if next == len(names) {
			return nil, nil, usagef("--input %s: model %s declares %s (%s), all already given; name it as NAME=%s", f, md.Name, plural(len(names), "input"), strings.Join(names, ", "), f)
		}
		t, err := npy.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("--input %s: %v", f, err)
		}
		if err := add(names[next], t, f); err != nil {
			return nil, nil, err
		}
	}
	return ins, sources, nil
}

// prepareOutDir makes sure --out names a directory that can be written,
// before anything is sent.
func prepareOutDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return usagef("--out %s: is not a directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %v", dir, err)
	}
	return checkWritable(dir)
}

// writeInferOutput writes one output to DIR/NAME.npy. The name comes from
// the server, so it is reduced to one plain file name: no separator, no
// "..", nothing outside DIR.
func writeInferOutput(dir string, out client.Output) (string, error) {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, out.Name)
	if name == "" || name == "." || name == ".." {
		name = "_" + name
	}
	path := filepath.Join(dir, name+".npy")
	t := out.Tensor
	if t.DType() == tensor.BFloat16 {
		t = ops.Cast(t, tensor.Float32) // exact: NumPy has no bfloat16
	}
	if err := npy.WriteFile(path, t); err != nil {
		return "", err
	}
	return path, nil
}

// inferResult is what spore infer reports; with --json it is printed as
// is, and its keys are stable.
type inferResult struct {
	Server    string      `json:"server"`
	Model     string      `json:"model"`
	Version   string      `json:"version"`
	LatencyMS float64     `json:"latency_ms"`
	Inputs    []valueJSON `json:"inputs"`
	Outputs   []valueJSON `json:"outputs"`
}

// print writes the result for people.
func (r *inferResult) print(w io.Writer) {
	version := ""
	if r.Version != "" {
		version = " version " + r.Version
	}
	fmt.Fprintf(w, "%s%s at %s: answered in %.1f ms\n", r.Model, version, r.Server, r.LatencyMS)
	printValues(w, r.Inputs, r.Outputs)
}
