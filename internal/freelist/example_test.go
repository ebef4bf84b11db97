package freelist_test

import (
	"fmt"

	"github.com/sporeml/spore/internal/freelist"
)

func ExampleList() {
	var scratch freelist.List[[]float32]
	buf := scratch.Get()
	defer scratch.Put(buf)
	*buf = append((*buf)[:0], 1, 2, 3)
	fmt.Println(len(*buf))
	// Output: 3
}
