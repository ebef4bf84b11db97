package train_test

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/dataset"
	"github.com/sporeml/spore/nn"
	"github.com/sporeml/spore/optim"
	"github.com/sporeml/spore/summary"
	"github.com/sporeml/spore/train"
)

// Record a Fit with validation for TensorBoard (or spore dashboard), then
// read back what was written.
func ExampleSummaryCollector() {
	x, y := blobs(1, 256, 10, 4)
	trainSet := dataset.FromTensors(x, y).Batch(32, false) // 8 steps per epoch
	vx, vy := blobs(2, 128, 10, 4)
	valid := dataset.FromTensors(vx, vy).Batch(64, false)

	spore.SetSeed(1)
	net := nn.NewSequentialCell(nn.NewDense(10, 32), nn.NewReLU(), nn.NewDense(32, 4))
	opt := optim.NewSGD(net.TrainableParameters(), optim.SGDConfig{Common: optim.Common{LR: optim.Constant(0.05)}})
	model := train.NewModel(net, nn.NewCrossEntropyLoss("", 0), opt, train.NewAccuracy())

	dir, err := os.MkdirTemp("", "summaries")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	collector, err := train.NewSummaryCollector(dir, train.SummaryConfig{HistogramFreq: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := model.Fit(2, trainSet, valid, collector); err != nil {
		fmt.Println(err)
		return
	}
	if err := collector.Close(); err != nil {
		fmt.Println(err)
		return
	}

	runs, err := summary.ReadLogdir(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := runs[0]
	var tags []string
	for tag, s := range r.Scalars {
		tags = append(tags, fmt.Sprintf("%s×%d", tag, len(s)))
	}
	for tag, h := range r.Histograms {
		if strings.HasSuffix(tag, ".weight") {
			tags = append(tags, fmt.Sprintf("%s×%d", tag, len(h)))
		}
	}
	slices.Sort(tags)
	fmt.Println(strings.Join(tags, "\n"))
	// Output:
	// eval/accuracy×2
	// grad/0.weight×3
	// grad/2.weight×3
	// loss×16
	// lr×16
	// param/0.weight×3
	// param/2.weight×3
	// throughput×16
}
