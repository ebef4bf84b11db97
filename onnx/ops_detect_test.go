package onnx

import "testing"

func TestDetectSuiteCases(t *testing.T) {
	nms := []string{"boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"}
	cases := []struct {
		name  string
		fixed []string // inputs read as values
	}{
		{"test_gridsample", nil},
		{"test_gridsample_aligncorners_true", nil},
		{"test_gridsample_bicubic", nil},
		{"test_gridsample_bilinear", nil},
		{"test_gridsample_border_padding", nil},
		{"test_gridsample_nearest", nil},
		{"test_gridsample_reflection_padding", nil},
		{"test_gridsample_zeros_padding", nil},
		{"test_roialign_aligned_false", nil},
		{"test_roialign_aligned_true", nil},
		{"test_nonmaxsuppression_center_point_box_format", nms},
		{"test_nonmaxsuppression_flipped_coordinates", nms},
		{"test_nonmaxsuppression_identical_boxes", nms},
		{"test_nonmaxsuppression_limit_output_size", nms},
		{"test_nonmaxsuppression_single_box", nms},
		{"test_nonmaxsuppression_suppress_by_IOU", nms},
		{"test_nonmaxsuppression_suppress_by_IOU_and_scores", nms},
		{"test_nonmaxsuppression_two_batches", nms},
		{"test_nonmaxsuppression_two_classes", nms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { suiteOpCase(t, tc.name, tc.fixed...) })
	}
}
