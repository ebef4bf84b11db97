package train_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/checkpoint"
	"github.com/sporeml/spore/models"
	"github.com/sporeml/spore/train"
)

func TestSaveLoadParamIntoNet(t *testing.T) {
	for _, ext := range []string{".ckpt", ".safetensors"} {
		path := filepath.Join(t.TempDir(), "net"+ext)
		spore.SetSeed(1)
		src := models.NewNetwork()
		if err := train.SaveCheckpoint(src, path); err != nil {
			t.Fatal(err)
		}
		spore.SetSeed(2)
		dst := models.NewNetwork()
		params, err := train.LoadCheckpoint(path)
		if err != nil {
			t.Fatal(err)
		}
		if notLoaded, unused, err := train.LoadParamIntoNet(dst, params, true); err != nil || len(notLoaded)+len(unused) != 0 {
			t.Fatalf("%s: %v %v %v", ext, notLoaded, unused, err)
		}
		x := models.Ones(2)
		a, b := src.Call(x).Float32s(), dst.Call(x).Float32s()
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: loaded network differs at %d: %v vs %v", ext, i, a[i], b[i])
			}
		}

		// Into the wrong model: strict fails naming everything, changes nothing.
		lenet := models.NewLeNet5(10)
		before := lenet.Fc3.Weight.Float32s()
		var le *checkpoint.LoadError
		if _, _, err := train.LoadParamIntoNet(lenet, params, true); !errors.As(err, &le) || len(le.Missing) == 0 || len(le.Unexpected) == 0 {
			t.Fatalf("%s: strict load into the wrong model: %v", ext, err)
		}
		if lenet.Fc3.Weight.Float32s()[0] != before[0] {
			t.Fatalf("%s: a failed strict load changed a parameter", ext)
		}
		notLoaded, unused, err := train.LoadParamIntoNet(lenet, params, false)
		if err != nil || len(notLoaded) != 8 || len(unused) != 6 {
			t.Fatalf("%s: non-strict: not loaded %v, unused %v, %v", ext, notLoaded, unused, err)
		}
	}
}
