package jit

import "github.com/sporeml/spore/tensor"

// Tensor is the tensor type compiled functions take and return.
type Tensor = tensor.Tensor
