package main

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sporeml/spore"
	"github.com/sporeml/spore/tensor"
)

// alphabet is the model's vocabulary: newline, tab and printable ASCII.
// Every other byte (the bytes of non-ASCII UTF-8, rare in Go's sources)
// maps to one more token, unknown, printed as '?'. A character is thus
// one byte, and the loss is in nats per byte of source.
const alphabet = "\n\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// vocab is the number of tokens: the alphabet and unknown.
const vocab = len(alphabet) + 1

// unknown is the token of bytes outside the alphabet.
const unknown = byte(len(alphabet))

// tokenOf maps each byte to its token.
var tokenOf = func() (t [256]byte) {
	for i := range t {
		t[i] = unknown
	}
	for i := range len(alphabet) {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// decode turns tokens back into text.
func decode(toks []int) string {
	var b strings.Builder
	for _, t := range toks {
		if t >= 0 && t < len(alphabet) {
			b.WriteByte(alphabet[t])
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// encode turns text into tokens.
func encode(s string) []byte {
	out := make([]byte, len(s))
	for i := range len(s) {
		out[i] = tokenOf[s[i]]
	}
	return out
}

// corpus is the token streams of the training and validation files.
type corpus struct {
	train, val           []byte
	trainFiles, valFiles int
}

// goSource returns $GOROOT/src: from the GOROOT variable, else from
// `go env GOROOT`, else from the GOROOT this program was built with.
func goSource() (string, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			root = strings.TrimSpace(string(out))
		}
	}
	if root == "" {
		root = runtime.GOROOT() // the last resort: no go command on PATH
	}
	if root == "" {
		return "", fmt.Errorf("cannot find GOROOT: set GOROOT or put the go command on PATH, or give -src")
	}
	return filepath.Join(root, "src"), nil
}

// loadCorpus reads every .go file under dir (outside testdata
// directories), in lexical order of path, so that runs are reproducible.
// A file goes to validation when the FNV-1a hash of its path relative to
// dir is 0 mod valEvery: a split that stays put as files come and go, and
// that keeps whole files apart, so validation text is never seen in
// training.
func loadCorpus(dir string, valEvery int) (*corpus, error) {
	c := &corpus{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := fnv.New32a()
		h.Write([]byte(filepath.ToSlash(rel)))
		toks := encode(string(b))
		if h.Sum32()%uint32(valEvery) == 0 {
			c.val = append(c.val, toks...)
			c.valFiles++
		} else {
			c.train = append(c.train, toks...)
			c.trainFiles++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the corpus: %v", err)
	}
	if c.trainFiles == 0 || c.valFiles == 0 {
		return nil, fmt.Errorf("%s: %d training and %d validation .go files; need at least one of each", dir, c.trainFiles, c.valFiles)
	}
	return c, nil
}

// batch draws batch windows of ctx+1 tokens at random offsets of stream:
// the inputs, [batch, ctx] Int32, and the targets, each input shifted by
// one, flattened to [batch·ctx] as the loss takes them.
func batch(stream []byte, rng *rand.Rand, n, ctx int) (x, y *spore.Tensor) {
	xs, ys := make([]int32, n*ctx), make([]int32, n*ctx)
	for i := range n {
		off := rng.IntN(len(stream) - ctx)
		for j := range ctx {
			xs[i*ctx+j] = int32(stream[off+j])
			ys[i*ctx+j] = int32(stream[off+j+1])
		}
	}
	return tensor.FromSlice(xs, n, ctx), tensor.FromSlice(ys, n*ctx)
}
