package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/onnx"
	"github.com/sporeml/spore/tensor"
)

const onnxUsage = `usage: spore onnx SUBCOMMAND [flags]

subcommands:
  check F    report on an ONNX model without running it: versions, inputs,
             outputs, ops, and any ops spore cannot run (exit 1 if so)
  export     write one of spore's MNIST models (mlp, lenet) as ONNX

Run 'spore onnx SUBCOMMAND --help' for its flags.`

func cmdOnnx(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: check or export (see 'spore onnx --help')")
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprintln(stdout, onnxUsage)
		return flag.ErrHelp
	case "check":
		return cmdOnnxCheck(args[1:], stdout)
	case "export":
		return cmdOnnxExport(args[1:], stdout, stderr)
	}
	return usagef("unknown subcommand %q (want check or export)", args[0])
}

// cmdOnnxCheck prints onnx.CheckFile's report, with the shapes checked
// (Report.CheckShapes) when the model loads; a model spore cannot load, or
// whose shapes do not fit, makes it fail, after the report.
func cmdOnnxCheck(args []string, stdout io.Writer) error {
	fs := newFlags("onnx check", "spore onnx check MODEL.onnx\n\nReports on an ONNX model without running it: IR and opset versions, producer,\n"+
		"inputs and outputs, the ops it uses, and those spore cannot run; then, when\n"+
		"spore can load it, whether its shapes fit (the graph traced, without\n"+
		"computing, at the declared input shapes, dynamic dimensions as 1). Exits with\n"+
		"status 1 when spore cannot load the model or its shapes do not fit.", stdout)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one model file, got %d arguments (see 'spore onnx check --help')", len(pos))
	}
	rep, err := onnx.CheckFile(pos[0])
	if err != nil {
		return fmt.Errorf("check %s: %s", pos[0], message(err))
	}
	if rep.OK() {
		// The structure and the ops are fine: load the weights and
		// trace the graph at the declared input shapes, so that a node
		// spore run would refuse for its shapes is found here.
		m, err := onnx.LoadFile(pos[0])
		if err != nil {
			fmt.Fprint(stdout, rep)
			return fmt.Errorf("check %s: spore cannot load it: %s", pos[0], message(err))
		}
		rep.CheckShapes(m)
	}
	fmt.Fprint(stdout, rep)
	if rep.OK() && rep.Shapes != onnx.ShapesDoNotFit {
		return nil
	}
	if rep.OK() {
		return fmt.Errorf("check %s: spore cannot run it at its declared input shapes: %s", pos[0], rep.ShapeNote)
	}
	var why []string
	if n := len(rep.Unsupported); n > 0 {
		ops := make([]string, n)
		for i, u := range rep.Unsupported {
			ops[i] = u.OpType
		}
		why = append(why, fmt.Sprintf("%s unsupported (%s)", plural(n, "op type"), strings.Join(ops, ", ")))
	}
	if rep.Problem != "" {
		why = append(why, rep.Problem)
	}
	return fmt.Errorf("check %s: spore cannot load it: %s", pos[0], strings.Join(why, "; "))
}

// exportModels are the models export offers: the convolutional and dense
// MNIST networks of spore train.
var exportModels = []string{"mlp", "lenet"}

func cmdOnnxExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("onnx export", "spore onnx export --model mlp|lenet [--ckpt F] --out F.onnx\n\n"+
		"Writes one of spore train's MNIST models as ONNX (input \"x\", float32 [batch, 1, 28, 28];\n"+
		"output \"logits\" [batch, 10]), with the weights of a checkpoint written by\n"+
		"'spore train --save' or, without --ckpt, the freshly initialised ones (seed 0).\n"+
		"The file is then loaded back and run to check that it gives the model's outputs.", stdout)
	model := fs.String("model", "mlp", "model to export: "+orList(exportModels))
	ckpt := fs.String("ckpt", "", "checkpoint with the model's weights (.safetensors or .ckpt)")
	out := fs.String("out", "", "ONNX file to write (required)")
	dyn := fs.Bool("dynamic-batch", false, "make the batch axis dynamic (any batch size)")
	batch := fs.Int("batch", 1, "batch size of the example input the model is traced with (and of the file's input, unless --dynamic-batch)")
	opset := fs.Int64("opset", 17, "ai.onnx opset version to write (17 to 21)")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case !slices.Contains(exportModels, *model):
		return usagef("unknown --model %q (want %s)", *model, orList(exportModels))
	case *out == "":
		return usagef("--out is required (see 'spore onnx export --help')")
	case !strings.HasSuffix(*out, ".onnx"):
		return usagef("--out %s: want a .onnx file", *out)
	case *batch <= 0:
		return usagef("--batch must be positive")
	case *opset < 17 || *opset > 21:
		return usagef("--opset %d: spore writes opsets 17 to 21", *opset)
	}
	if err := checkOutPath("--out", *out); err != nil {
		return err
	}
	if err := checkEnv(); err != nil {
		return err
	}
	spore.SetSeed(0)
	net, err := newModel(*model)
	if err != nil {
		return err
	}
	if *ckpt != "" {
		if err := loadNetwork(net, *model, *ckpt); err != nil {
			return err
		}
	}
	x := models.Ones(*batch)
	opts := []onnx.ExportOption{onnx.InputNames("x"), onnx.OutputNames("logits"), onnx.Opset(*opset)}
	if *dyn {
		opts = append(opts, onnx.DynamicBatch())
	}
	if err := onnx.Export(net, []*tensor.Tensor{x}, *out, opts...); err != nil {
		return err
	}
	weights := "initial weights (seed 0)"
	if *ckpt != "" {
		weights = "weights from " + *ckpt
	}
	shape := fmt.Sprintf("[%d 1 28 28]", *batch)
	if *dyn {
		shape = "[batch 1 28 28]"
	}
	fmt.Fprintf(stdout, "wrote %s: %s with %s, opset %d, input x %s float32, output logits\n", *out, *model, weights, *opset, shape)

	// Read the file back and compare: a file that spore cannot run again
	// is worth a warning, though other runtimes may take it.
	diff, err := checkRoundTrip(*out, net.Base(), x)
	if err != nil {
		fmt.Fprintf(stderr, "spore onnx export: warning: %s does not run back in spore: %s\n", *out, message(err))
		return nil
	}
	fmt.Fprintf(stdout, "loaded back: outputs match the model's (max |difference| %.3g)\n", diff)
	return nil
}

// checkRoundTrip loads the exported file and returns the largest absolute
// difference between its output and the network's on x.
func checkRoundTrip(path string, net interface {
	Call(...*tensor.Tensor) *tensor.Tensor
}, x *tensor.Tensor) (float64, error) {
	m, err := onnx.LoadFile(path)
	if err != nil {
		return 0, err
	}
	outs, err := m.Run(x)
	if err != nil {
		return 0, err
	}
	want := net.Call(x).Float64s()
	got := outs[0].Float64s()
	if len(got) != len(want) {
		return 0, errors.New("the output's size differs from the model's")
	}
	diff := 0.0
	for i := range got {
		diff = math.Max(diff, math.Abs(got[i]-want[i]))
	}
	if math.IsNaN(diff) || diff > 1e-4 {
		return 0, fmt.Errorf("outputs differ from the model's by up to %.3g", diff)
	}
	return diff, nil
}
