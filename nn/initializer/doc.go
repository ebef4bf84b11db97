// Package initializer creates the initial values of parameters, as
// MindSpore's mindspore.common.initializer: Zero, One, Constant, Normal,
// Uniform, TruncatedNormal, XavierUniform, XavierNormal, HeUniform and
// HeNormal.
//
// Random initialisers draw from the framework's random source, so
//
//	spore.SetSeed(1)
//
// before building a network makes its weights the same on every run.
//
// Fan-in and fan-out follow MindSpore: a weight of shape [out, in, k...]
// has fan_in = in·Πk and fan_out = out·Πk (Fans). The He (Kaiming)
// initialisers use the gain of a nonlinearity (Gain); with the leaky_relu
// gain and negative slope a, HeUniform draws from U(−b, b) with
//
//	b = √(6 / ((1 + a²)·fan_in))
//
// which for a = √5, the default of MindSpore's Dense and Conv2d, is
// 1/√fan_in.
package initializer
