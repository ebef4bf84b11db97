package ad

import (
	"reflect"

	"github.com/sporeml/spore/tensor"
)

// Tensor is the tensor type the transforms take and return.
type Tensor = tensor.Tensor

// tensorType is the reflected *Tensor, for checking the signatures of the
// functions the transforms are given.
var tensorType = reflect.TypeFor[*Tensor]()
