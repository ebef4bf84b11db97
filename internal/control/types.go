package control

import "github.com/sporeml/spore/tensor"

// Tensor is the tensor type the control-flow primitives take and return.
type Tensor = tensor.Tensor
