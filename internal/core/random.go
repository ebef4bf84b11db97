package core

import (
	"math"
	"math/rand/v2"
	"sync"
)

// The framework's random source, like ms.set_seed: every random tensor,
// initialiser and dropout mask draws from it, so a program that sets the
// seed first is reproducible run to run.
var (
	rngMu sync.Mutex
	rng   = rand.New(rand.NewPCG(0, 0x5eed))
)

// SetSeed reseeds the framework's random source.
func SetSeed(seed int64) {
	rngMu.Lock()
	rng = rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	rngMu.Unlock()
}

// RandUint64 draws 64 random bits from the framework source (for ops that seed
// their own generators, such as dropout).
func RandUint64() uint64 {
	rngMu.Lock()
	defer rngMu.Unlock()
	return rng.Uint64()
}

// RandUniform returns a tensor of values drawn uniformly from [lo, hi).
func RandUniform(dt DType, lo, hi float64, shape ...int) *Tensor {
	t := New(dt, shape...)
	rngMu.Lock()
	defer rngMu.Unlock()
	for i := range t.Size() {
		t.setFloat(i, lo+(hi-lo)*rng.Float64())
	}
	return t
}

// RandNormal returns a tensor of values drawn from N(mean, std²).
func RandNormal(dt DType, mean, std float64, shape ...int) *Tensor {
	t := New(dt, shape...)
	rngMu.Lock()
	defer rngMu.Unlock()
	for i := range t.Size() {
		t.setFloat(i, mean+std*rng.NormFloat64())
	}
	return t
}

// RandTruncNormal returns values from N(mean, std²) redrawn until they fall
// within two standard deviations, as TruncatedNormal initialisers expect.
func RandTruncNormal(dt DType, mean, std float64, shape ...int) *Tensor {
	t := New(dt, shape...)
	rngMu.Lock()
	defer rngMu.Unlock()
	for i := range t.Size() {
		z := rng.NormFloat64()
		for math.Abs(z) > 2 {
			z = rng.NormFloat64()
		}
		t.setFloat(i, mean+std*z)
	}
	return t
}
