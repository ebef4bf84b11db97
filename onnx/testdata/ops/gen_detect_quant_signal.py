#!/usr/bin/python3
"""Writes the fixtures of the detection, quantization and signal ops
(ops_detect.go, ops_quant.go, ops_signal.go) as gen.py writes the others,
with ONNX Runtime's outputs as the expected values.

Usage (from the repository root), as for gen.py:

    NODE_PATH=DIR/node_modules /usr/bin/python3 onnx/testdata/ops/gen_detect_quant_signal.py [CASE ...]

Operands these ops read as values (window sizes, frame steps, the boxes
of NonMaxSuppression, the regions of an adaptive RoiAlign) are
initializers; the rest are graph inputs, traced in Graph mode.
"""
import os
import sys

import numpy as np
from onnx import TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

gen.CASES.clear()
gen.NP2ONNX[np.uint8] = TensorProto.UINT8
case, node, randn, ints = gen.case, gen.node, gen.randn, gen.ints
rng = np.random.default_rng(23)
F, D, I64, U8, I32 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.UINT8, TensorProto.INT32


def u8(*shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


def f32(*v):
    return np.array(v, np.float32)


def scalar(v, dtype):
    return np.array(v, dtype)


# ---- quantization ------------------------------------------------------
case('quantizelinear_axis', [node('QuantizeLinear', ['x', 's', 'z'], axis=1)], {'x': randn(2, 3, 4) * 60},
     {'s': f32(0.5, 1.0, 0.25), 'z': np.array([128, 10, 250], np.uint8)}, [('y', U8)], opset=13)
case('quantizelinear_no_zero_point', [node('QuantizeLinear', ['x', 's'])], {'x': np.abs(randn(3, 5)) * 100},
     {'s': scalar(0.7, np.float32)}, [('y', U8)], opset=13)
case('quantizelinear_halves', [node('QuantizeLinear', ['x', 's', 'z'])], {'x': f32(-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 200, -200)},
     {'s': scalar(1, np.float32), 'z': scalar(100, np.uint8)}, [('y', U8)], opset=13)
case('dequantizelinear_axis2', [node('DequantizeLinear', ['x', 's', 'z'], axis=2)], {'x': u8(2, 3, 4)},
     {'s': f32(0.5, 2, 0.1, 3), 'z': np.array([0, 128, 255, 7], np.uint8)}, opset=13)
case('dequantizelinear_int32', [node('DequantizeLinear', ['x', 's'])], {'x': rng.integers(-100000, 100000, (3, 4)).astype(np.int32)},
     {'s': scalar(0.01, np.float32)}, opset=13)
case('dynamicquantizelinear', [node('DynamicQuantizeLinear', ['x'], ['y', 's', 'z'])], {'x': randn(4, 5) * 3},
     outputs=[('y', U8), ('s', F), ('z', U8)], opset=13)
case('dynamicquantizelinear_positive', [node('DynamicQuantizeLinear', ['x'], ['y', 's', 'z'])], {'x': np.abs(randn(6)) + 1},
     outputs=[('y', U8), ('s', F), ('z', U8)], opset=13)
case('matmulinteger_zero_points', [node('MatMulInteger', ['a', 'b', 'az', 'bz'])], {'a': u8(2, 3, 4)},
     {'b': u8(4, 5), 'az': scalar(120, np.uint8), 'bz': np.array([1, 50, 128, 200, 255], np.uint8)}, [('y', I32)], opset=13)
case('convinteger', [node('ConvInteger', ['x', 'w', 'xz', 'wz'], pads=[1, 0, 1, 2], strides=[2, 1])], {'x': u8(1, 2, 5, 6)},
     {'w': u8(3, 2, 3, 3), 'xz': scalar(128, np.uint8), 'wz': scalar(100, np.uint8)}, [('y', I32)], opset=13)
case('qlinearmatmul', [node('QLinearMatMul', ['a', 'as', 'az', 'b', 'bs', 'bz', 'ys', 'yz'])], {'a': u8(2, 3, 4)},
     {'as': scalar(0.02, np.float32), 'az': scalar(130, np.uint8), 'b': u8(4, 3), 'bs': scalar(0.01, np.float32),
      'bz': scalar(120, np.uint8), 'ys': scalar(0.05, np.float32), 'yz': scalar(128, np.uint8)}, [('y', U8)], opset=13)
case('qlinearconv_per_channel', [node('QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz', 'b'], pads=[1, 1, 1, 1], strides=[2, 2])],
     {'x': u8(1, 2, 6, 5)},
     {'xs': scalar(0.03, np.float32), 'xz': scalar(120, np.uint8), 'w': u8(4, 2, 3, 3), 'ws': f32(0.01, 0.02, 0.005, 0.015),
      'wz': scalar(128, np.uint8), 'ys': scalar(0.2, np.float32), 'yz': scalar(100, np.uint8),
      'b': np.array([-500, 0, 300, 1000], np.int32)}, [('y', U8)], opset=13)

# ---- signal ------------------------------------------------------------
case('dft_onesided', [node('DFT', ['x'], onesided=1)], {'x': randn(2, 8, 1)})
case('dft_complex_padded', [node('DFT', ['x', 'n'], axis=1)], {'x': randn(2, 6, 3, 2)}, {'n': scalar(8, np.int64)})
case('dft_inverse_truncated', [node('DFT', ['x', 'n'], axis=-2, inverse=1)], {'x': randn(1, 3, 7, 2)}, {'n': scalar(5, np.int64)})
case('dft_op20_axis', [node('DFT', ['x', '', 'a'])], {'x': randn(2, 5, 4, 2)}, {'a': scalar(1, np.int64)}, opset=20)
case('dft_f64', [node('DFT', ['x'], axis=1)], {'x': randn(2, 9, 1, dtype=np.float64)}, outputs=[('y', D)])
case('stft_complex', [node('STFT', ['x', 'step', '', 'len'], onesided=0)], {'x': randn(1, 32, 2)},
     {'step': scalar(4, np.int64), 'len': scalar(8, np.int64)})
case('stft_window', [node('STFT', ['x', 'step', 'win'])], {'x': randn(2, 40, 1), 'win': np.hanning(10).astype(np.float32)},
     {'step': scalar(5, np.int64)})
case('hannwindow_f64', [node('HannWindow', ['n'], output_datatype=TensorProto.DOUBLE)], {}, {'n': scalar(12, np.int64)}, [('y', D)])
case('hammingwindow_symmetric', [node('HammingWindow', ['n'], periodic=0)], {}, {'n': scalar(7, np.int32)})
case('blackmanwindow', [node('BlackmanWindow', ['n'])], {}, {'n': scalar(9, np.int64)})
case('melweightmatrix', [node('MelWeightMatrix', ['bins', 'len', 'rate', 'lo', 'hi'])], {},
     {'bins': scalar(10, np.int64), 'len': scalar(64, np.int64), 'rate': scalar(16000, np.int64),
      'lo': scalar(20, np.float32), 'hi': scalar(8000, np.float32)})

# ---- detection and sampling --------------------------------------------
for i, (mode, pad, align) in enumerate([('bicubic', 'border', 0), ('bicubic', 'reflection', 1), ('nearest', 'reflection', 0),
                                        ('bilinear', 'border', 1), ('bicubic', 'zeros', 1), ('nearest', 'border', 1),
                                        ('bilinear', 'reflection', 0)]):
    case('gridsample_%s_%s_%d' % (mode, pad, align), [node('GridSample', ['x', 'g'], mode=mode, padding_mode=pad, align_corners=align)],
         {'x': randn(2, 3, 5, 6), 'g': rng.uniform(-1.4, 1.4, (2, 4, 7, 2)).astype(np.float32)}, opset=16)
case('roialign_max', [node('RoiAlign', ['x', 'r', 'b'], mode='max', sampling_ratio=2, spatial_scale=0.5, output_height=3, output_width=2)],
     {'x': randn(2, 3, 8, 8), 'r': f32([0, 0, 10, 12], [3, 2, 15, 9], [-2.3, 1, 6, 14], [5, 5, 7, 6])},
     {'b': ints(0, 1, 1, 0)}, opset=16)
case('roialign_adaptive', [node('RoiAlign', ['x', 'r', 'b'], coordinate_transformation_mode='output_half_pixel', output_height=2, output_width=3)],
     {'x': randn(2, 2, 9, 7)}, {'r': f32([0, 0, 6, 8], [1.5, 2, 4, 3], [2, 0.5, 6.5, 8.5]), 'b': ints(1, 0, 1)}, opset=16)
case('roialign_adaptive_half_pixel', [node('RoiAlign', ['x', 'r', 'b'], output_height=2, output_width=2, spatial_scale=0.25)],
     {'x': randn(1, 2, 6, 6)}, {'r': f32([0, 0, 20, 16], [4, 4, 4, 4]), 'b': ints(0, 0)}, opset=16)
boxes = np.concatenate([rng.uniform(0, 1, (1, 12, 2)), rng.uniform(0, 1, (1, 12, 2))], axis=2).astype(np.float32)
case('nonmaxsuppression', [node('NonMaxSuppression', ['b', 's', 'm', 'iou', 'st'], ['y'])], {},
     {'b': boxes, 's': rng.uniform(0, 1, (1, 2, 12)).astype(np.float32), 'm': ints(4),
      'iou': f32(0.2), 'st': f32(0.15)}, [('y', I64)], opset=11)
case('nonmaxsuppression_center_no_threshold', [node('NonMaxSuppression', ['b', 's', 'm'], ['y'], center_point_box=1)], {},
     {'b': np.concatenate([rng.uniform(0, 4, (2, 8, 2)), rng.uniform(0.5, 2, (2, 8, 2))], axis=2).astype(np.float32),
      's': rng.uniform(0, 1, (2, 3, 8)).astype(np.float32), 'm': ints(3)}, [('y', I64)], opset=11)

if __name__ == '__main__':
    gen.main()
