package onnx

import "testing"

func TestSignalSuiteCases(t *testing.T) {
	cases := []struct {
		name  string
		fixed []string // inputs read as values: sizes, steps, lengths
	}{
		{"test_dft", nil},
		{"test_dft_axis", nil},
		{"test_dft_inverse", nil},
		{"test_stft", []string{"frame_step", "frame_length"}},
		{"test_stft_with_window", []string{"frame_step"}},
		{"test_hannwindow", []string{"x"}},
		{"test_hannwindow_symmetric", []string{"x"}},
		{"test_hammingwindow", []string{"x"}},
		{"test_hammingwindow_symmetric", []string{"x"}},
		{"test_blackmanwindow", []string{"x"}},
		{"test_blackmanwindow_symmetric", []string{"x"}},
		{"test_melweightmatrix", []string{"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { suiteOpCase(t, tc.name, tc.fixed...) })
	}
}

// The transforms' and samplers' gradients are checked by TestOpGradients
// (central differences, and Graph mode against PyNative) on their
// fixtures.
func init() {
	gradCases = append(gradCases,
		"dft_complex_padded", "dft_inverse_truncated", "stft_window",
		"gridsample_bilinear_border_1", "gridsample_bicubic_zeros_1", "gridsample_bilinear_reflection_0",
		"roialign_max", "roialign_adaptive")
}
