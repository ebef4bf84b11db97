package tensor_test

import (
	"os"
	"reflect"
	"regexp"
	"testing"

	"github.com/sporeml/spore/tensor"
)

// Documentation tools show the Tensor alias without its methods, so its doc
// comment lists them; this keeps the list complete.
func TestTensorDocListsEveryMethod(t *testing.T) {
	src, err := os.ReadFile("tensor.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := regexp.MustCompile(`(?s)// Tensor is an.*?type Tensor = `).Find(src)
	if doc == nil {
		t.Fatal("no doc comment on type Tensor in tensor.go")
	}
	typ := reflect.TypeFor[*tensor.Tensor]()
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if !regexp.MustCompile(`\b` + name + `\b`).Match(doc) {
			t.Errorf("Tensor's doc comment does not list method %s", name)
		}
	}
}
