package train

import "github.com/sporeml/spore/nn"

// applyAmp puts the network at the model's AmpLevel, once: the level lives
// with the network's dispatch (nn.AutoMixedPrecision), so training, Eval
// and Predict all see it. bfloat16 keeps float32's exponent range, so no
// loss scaling is needed, unlike MindSpore's float16 levels.
func (m *Model) applyAmp() {
	if m.AmpLevel == "" || nn.AmpLevelOf(m.Network) == m.AmpLevel {
		return
	}
	nn.AutoMixedPrecision(m.Network, m.AmpLevel)
}
