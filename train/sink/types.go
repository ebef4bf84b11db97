package sink

import "github.com/sporeml/spore/tensor"

// Tensor is the tensor type a sink's steps take and return.
type Tensor = tensor.Tensor
