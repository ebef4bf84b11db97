package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/train"
)

func cmdEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", "Reports the test accuracy of a checkpoint written by 'spore train --save'.", stdout)
	ckpt := fs.String("ckpt", "", "checkpoint to evaluate (required)")
	model := fs.String("model", "", "model the checkpoint was trained with: mlp, lenet or vit (default: the one whose parameter names the checkpoint holds)")
	mode := fs.String("mode", "graph", "execution mode: graph or pynative")
	data := fs.String("data", "", "directory with MNIST-format test files (t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, gzipped or not) to use instead of MNIST")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *ckpt == "" {
		return usagef("--ckpt is required (see 'spore eval --help')")
	}
	if err := setMode(*mode); err != nil {
		return err
	}
	if err := checkEnv(); err != nil {
		return err
	}
	if *model != "" {
		if _, ok := defaults[*model]; !ok {
			return usagef("unknown --model %q (want %s)", *model, orList(modelNames))
		}
	}
	src, _, err := checkpoint.Load(*ckpt)
	if err != nil {
		return err
	}
	if *model == "" {
		if *model, err = inferModel(src, *ckpt); err != nil {
			return err
		}
	}
	spore.SetSeed(0)
	net, err := newModel(*model)
	if err != nil {
		return err
	}
	if err := fitNetwork(net, *model, *ckpt, src); err != nil {
		return err
	}
	m := train.NewModel(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean), nil, train.NewAccuracy())
	test, err := loadSplit(*data, testSplit)
	if err != nil {
		return err
	}
	acc, n, err := accuracy(m, test)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "test accuracy %.2f%% on %d images (%s, %s)\n", 100*acc, n, *model, *ckpt)
	return nil
}

// inferModel names the model whose network parameters the checkpoint at
// path (read as src) holds, all of them by name (their shapes are checked
// when they are loaded): what --model defaults to. The models' parameter
// names do not overlap, so at most one fits a checkpoint of spore train.
func inferModel(src []checkpoint.Param, path string) (string, error) {
	have := map[string]bool{}
	for _, p := range src {
		have[p.Name] = true
	}
	var fits []string
	for _, name := range modelNames {
		net, err := newModel(name)
		if err != nil {
			return "", err
		}
		all := true
		for _, p := range train.NetParams(net) {
			all = all && have[p.Name]
		}
		if all {
			fits = append(fits, name)
		}
	}
	switch len(fits) {
	case 1:
		return fits[0], nil
	case 0:
		return "", fmt.Errorf("%s holds the parameters of none of spore's models (%s); was it written by 'spore train --save'? (or pass --model)", path, orList(modelNames))
	}
	return "", usagef("%s holds the parameters of %s; pass --model", path, strings.Join(fits, " and "))
}

// loadNetwork loads the network's parameters from a checkpoint, ignoring
// optimiser state saved beside them; every parameter must be present with
// its shape and dtype.
func loadNetwork(net nn.Layer, model, path string) error {
	src, _, err := checkpoint.Load(path)
	if err != nil {
		return err
	}
	return fitNetwork(net, model, path, src)
}

// fitNetwork is loadNetwork with the checkpoint at path already read, as
// src.
func fitNetwork(net nn.Layer, model, path string, src []checkpoint.Param) error {
	dst := train.NetParams(net)
	want := map[string]bool{}
	for _, p := range dst {
		want[p.Name] = true
	}
	var own []checkpoint.Param
	for _, p := range src {
		if want[p.Name] {
			own = append(own, p)
		}
	}
	// Strict on the network's own names: a missing or mismatched
	// parameter fails the whole load before anything is assigned.
	if _, _, _, err := checkpoint.LoadInto(dst, own, true); err != nil {
		var le *checkpoint.LoadError
		if !errors.As(err, &le) {
			return fmt.Errorf("%s: %w", path, err)
		}
		// Only the network's own names were passed: nothing is
		// unexpected, so the problems are missing and mismatched ones.
		var problems []string
		if len(le.Missing) > 0 {
			problems = append(problems, fmt.Sprintf("%d missing from the checkpoint (%s)", len(le.Missing), strings.Join(le.Missing, ", ")))
		}
		if len(le.Details) > 0 {
			problems = append(problems, fmt.Sprintf("%d mismatched (%s)", len(le.Details), strings.Join(le.Details, ", ")))
		}
		return fmt.Errorf("%s does not fit --model %s: %s", path, model, strings.Join(problems, "; "))
	}
	return nil
}
