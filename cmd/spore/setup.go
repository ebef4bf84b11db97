package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/dataset/mnist"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/tensor"
)

// newModel builds the named network with weights from the framework seed.
func newModel(name string) (nn.Layer, error) {
	switch name {
	case "mlp":
		return models.NewNetwork(), nil
	case "lenet":
		return models.NewLeNet5(10), nil
	}
	return nil, usagef("unknown --model %q (want mlp or lenet)", name)
}

// newOptimizer builds the named optimiser over params.
func newOptimizer(name string, params []*tensor.Tensor, lr float64) (optim.Optimizer, error) {
	if !(lr > 0) {
		return nil, usagef("--lr must be positive, got %v", lr)
	}
	c := optim.Common{LR: optim.Constant(lr)}
	switch name {
	case "sgd":
		return optim.NewSGD(params, optim.SGDConfig{Common: c}), nil
	case "momentum":
		return optim.NewSGD(params, optim.SGDConfig{Common: c, Momentum: 0.9}), nil
	case "nesterov":
		return optim.NewSGD(params, optim.SGDConfig{Common: c, Momentum: 0.9, Nesterov: true}), nil
	case "adam":
		return optim.NewAdam(params, optim.AdamConfig{Common: c}), nil
	case "adamw":
		return optim.NewAdamW(params, optim.AdamConfig{Common: c}), nil
	}
	return nil, usagef("unknown --optimizer %q (want sgd, momentum, nesterov, adam or adamw)", name)
}

// setMode sets the global execution mode from a flag value.
func setMode(name string) error {
	switch name {
	case "graph":
		spore.SetContext(spore.WithMode(spore.GraphMode))
	case "pynative":
		spore.SetContext(spore.WithMode(spore.PyNativeMode))
	default:
		return usagef("unknown --mode %q (want graph or pynative)", name)
	}
	return nil
}

// loadData returns the training and test sets: the embedded MNIST, or the
// four IDX files (gzipped or not) in dir, e.g. Fashion-MNIST.
func loadData(dir string) (train, test *dataset.Dataset, err error) {
	if dir == "" {
		if train, err = mnist.Train(mnist.Normalize()); err != nil {
			return nil, nil, err
		}
		test, err = mnist.Test(mnist.Normalize())
		return train, test, err
	}
	find := func(base string) (string, error) {
		for _, name := range []string{base + ".gz", base} {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("--data %s: no %s or %s.gz", dir, base, base)
	}
	paths := make([]string, 4)
	for i, base := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		if paths[i], err = find(base); err != nil {
			return nil, nil, err
		}
	}
	if train, err = mnist.Load(paths[0], paths[1], mnist.Normalize()); err != nil {
		return nil, nil, err
	}
	test, err = mnist.Load(paths[2], paths[3], mnist.Normalize())
	return train, test, err
}

// sgdStep is the training step bench and graph measure and show: the
// network with cross-entropy and plain SGD (lr 0.01), as the PyTorch
// reference script trains it.
func sgdStep(net nn.Layer, cfg ...nn.TrainOneStepConfig) *nn.TrainOneStepCell {
	opt := optim.NewSGD(net.Base().TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.01)}})
	return nn.NewTrainOneStepCell(nn.NewWithLossCell(net, nn.NewSoftmaxCrossEntropyWithLogits(true, nn.Mean)), opt, cfg...)
}
