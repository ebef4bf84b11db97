package mnist

import (
	"bytes"
	"embed"
	"fmt"
	"sync"

	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/internal/core"
	"github.com/sporeml/spore/tensor"
)

//go:embed data/*.gz
var files embed.FS

// The embedded files, by split.
const (
	TrainImagesFile = "train-images-idx3-ubyte.gz"
	TrainLabelsFile = "train-labels-idx1-ubyte.gz"
	TestImagesFile  = "t10k-images-idx3-ubyte.gz"
	TestLabelsFile  = "t10k-labels-idx1-ubyte.gz"
)

// Mean and Std are the mean and standard deviation of the MNIST training
// pixels scaled to [0, 1], the constants of the customary normalisation
// (x - Mean) / Std.
const (
	Mean = 0.1307
	Std  = 0.3081
)

// raw is one split decoded from its IDX files, kept for the life of the
// program: images uint8 [N 28 28], labels uint8 [N].
type raw struct {
	once           sync.Once
	images, labels *tensor.Tensor
	err            error
}

var train, test = &raw{}, &raw{}

// load decodes the split's files the first time it is called; the images
// and labels are decoded concurrently.
func (r *raw) load(imagesFile, labelsFile string) (*tensor.Tensor, *tensor.Tensor, error) {
	r.once.Do(func() {
		var wg sync.WaitGroup
		var lerr error
		wg.Go(func() { r.labels, lerr = readEmbedded(labelsFile) })
		r.images, r.err = readEmbedded(imagesFile)
		wg.Wait()
		if r.err == nil {
			r.err = lerr
		}
		if r.err == nil {
			r.err = check(r.images, r.labels)
		}
	})
	return r.images, r.labels, r.err
}

func readEmbedded(name string) (*tensor.Tensor, error) {
	b, err := files.ReadFile("data/" + name)
	if err != nil {
		return nil, err
	}
	t, err := dataset.ReadIDX(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("mnist: embedded %s: %w", name, err)
	}
	return t, nil
}

// Option changes how images and labels are presented.
type Option func(*config)

type config struct {
	raw       bool
	normalize bool
	mean, std float64
}

// Normalize standardises the pixels after scaling to [0, 1]:
// (x - Mean) / Std, the normalisation of the usual MNIST recipes.
func Normalize() Option {
	return func(c *config) { c.normalize, c.mean, c.std = true, Mean, Std }
}

// NormalizeWith standardises the pixels after scaling to [0, 1] with the
// given mean and standard deviation (for other data sets loaded with Load,
// such as Fashion-MNIST: 0.2860 and 0.3530).
func NormalizeWith(mean, std float64) Option {
	return func(c *config) { c.normalize, c.mean, c.std = true, mean, std }
}

// Raw keeps the images as Uint8 [N 1 H W] with values 0-255, for pipelines
// that convert per batch. It overrides Normalize.
func Raw() Option { return func(c *config) { c.raw = true } }

// Train returns the 60000 training samples as an in-memory dataset with two
// columns: the image, Float32 [1 28 28] in [0, 1] (channels first, as
// MindSpore's Rescale(1/255) followed by HWC2CHW gives), and the label,
// an Int32 scalar 0-9. The embedded files are decoded on the first call
// and kept as bytes (47 MB); each call converts them to a fresh float32
// tensor (188 MB) that the dataset slices without copying, so that an epoch
// costs only the copies into batches.
func Train(opts ...Option) (*dataset.Dataset, error) {
	xi, yi, err := train.load(TrainImagesFile, TrainLabelsFile)
	if err != nil {
		return nil, err
	}
	return datasetOf(xi, yi, opts)
}

// Test returns the 10000 test samples, as Train does the training samples.
func Test(opts ...Option) (*dataset.Dataset, error) {
	xi, yi, err := test.load(TestImagesFile, TestLabelsFile)
	if err != nil {
		return nil, err
	}
	return datasetOf(xi, yi, opts)
}

// TrainTensors returns the training images, Float32 [60000 1 28 28] (188
// MB; Uint8 with Raw, sharing the decoded bytes), and labels, Int32
// [60000], as whole tensors, for evaluation in one pass or a pipeline of
// one's own. The tensors must not be modified.
func TrainTensors(opts ...Option) (images, labels *tensor.Tensor, err error) {
	xi, yi, err := train.load(TrainImagesFile, TrainLabelsFile)
	if err != nil {
		return nil, nil, err
	}
	return convert(xi, yi, opts)
}

// TestTensors returns the test images and labels, as TrainTensors does.
func TestTensors(opts ...Option) (images, labels *tensor.Tensor, err error) {
	xi, yi, err := test.load(TestImagesFile, TestLabelsFile)
	if err != nil {
		return nil, nil, err
	}
	return convert(xi, yi, opts)
}

// Load reads an image file and a label file in MNIST's IDX format, gzipped
// or not — Fashion-MNIST, KMNIST or MNIST itself from disk — and returns
// them as Train does. The images must be ubyte [N H W], the labels ubyte
// [N]; anything else is an error naming the file.
func Load(imagesPath, labelsPath string, opts ...Option) (*dataset.Dataset, error) {
	xi, yi, err := readFiles(imagesPath, labelsPath)
	if err != nil {
		return nil, err
	}
	return datasetOf(xi, yi, opts)
}

// LoadTensors reads IDX files as Load does and returns whole tensors, as
// TrainTensors does.
func LoadTensors(imagesPath, labelsPath string, opts ...Option) (images, labels *tensor.Tensor, err error) {
	xi, yi, err := readFiles(imagesPath, labelsPath)
	if err != nil {
		return nil, nil, err
	}
	return convert(xi, yi, opts)
}

// readFiles reads and checks an image file and a label file concurrently.
func readFiles(imagesPath, labelsPath string) (images, labels *tensor.Tensor, err error) {
	var wg sync.WaitGroup
	var xerr, yerr error
	wg.Go(func() { labels, yerr = dataset.ReadIDXFile(labelsPath) })
	images, xerr = dataset.ReadIDXFile(imagesPath)
	wg.Wait()
	if xerr != nil {
		return nil, nil, xerr
	}
	if yerr != nil {
		return nil, nil, yerr
	}
	if err := checkFiles(images, labels, imagesPath, labelsPath); err != nil {
		return nil, nil, err
	}
	return images, labels, nil
}

func check(images, labels *tensor.Tensor) error {
	return checkFiles(images, labels, "images", "labels")
}

func checkFiles(images, labels *tensor.Tensor, imagesName, labelsName string) error {
	if images.DType() != tensor.Uint8 || images.Rank() != 3 {
		return fmt.Errorf("mnist: %s: want ubyte images [N H W], got %v %v", imagesName, images.DType(), images.Shape())
	}
	if labels.DType() != tensor.Uint8 || labels.Rank() != 1 {
		return fmt.Errorf("mnist: %s: want ubyte labels [N], got %v %v", labelsName, labels.DType(), labels.Shape())
	}
	if images.Dim(0) != labels.Dim(0) {
		return fmt.Errorf("mnist: %s has %d images but %s has %d labels", imagesName, images.Dim(0), labelsName, labels.Dim(0))
	}
	return nil
}

// settings resolves opts.
func settings(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.normalize && !(c.std > 0) {
		return c, fmt.Errorf("mnist: normalisation std %v; need > 0", c.std)
	}
	return c, nil
}

// table maps each byte value to its float32 pixel, so that conversion is a
// lookup.
func (c config) table() *[256]float32 {
	var lut [256]float32
	for v := range lut {
		x := float64(v) / 255
		if c.normalize {
			x = (x - c.mean) / c.std
		}
		lut[v] = float32(x)
	}
	return &lut
}

// convert turns raw uint8 images [N H W] and labels [N] into whole tensors
// as opts ask.
func convert(xi, yi *tensor.Tensor, opts []Option) (images, labels *tensor.Tensor, err error) {
	c, err := settings(opts)
	if err != nil {
		return nil, nil, err
	}
	n, h, w := xi.Dim(0), xi.Dim(1), xi.Dim(2)
	px := xi.Data().([]uint8)
	if c.raw {
		images = core.FromBuffer(px, tensor.Shape{n, 1, h, w})
	} else {
		lut := c.table()
		out := make([]float32, len(px))
		parallelFor(len(px), func(lo, hi int) {
			dst := out[lo:hi]
			for i, v := range px[lo:hi] {
				dst[i] = lut[v]
			}
		})
		images = core.FromBuffer(out, tensor.Shape{n, 1, h, w})
	}
	return images, labelTensor(yi), nil
}

func labelTensor(yi *tensor.Tensor) *tensor.Tensor {
	lb := yi.Data().([]uint8)
	ys := make([]int32, len(lb))
	for i, v := range lb {
		ys[i] = int32(v)
	}
	return core.FromBuffer(ys, tensor.Shape{len(ys)})
}

// datasetOf converts raw images and labels as opts ask and slices them into
// a dataset.
func datasetOf(xi, yi *tensor.Tensor, opts []Option) (*dataset.Dataset, error) {
	x, y, err := convert(xi, yi, opts)
	if err != nil {
		return nil, err
	}
	return dataset.FromTensors(x, y), nil
}

// parallelFor splits [0, n) into a few contiguous blocks run concurrently.
func parallelFor(n int, f func(lo, hi int)) {
	const blocks = 4
	if n < 1<<20 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for b := range blocks {
		lo, hi := n*b/blocks, n*(b+1)/blocks
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}
