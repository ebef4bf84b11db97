#!/usr/bin/python3
"""Writes one tiny ONNX model per operator case, with random inputs, and
asks ONNX Runtime for the expected outputs: the fixtures of ops_test.go.

Usage (from the repository root):

    NODE_PATH=DIR/node_modules /usr/bin/python3 onnx/testdata/ops/gen.py

where DIR/node_modules holds onnxruntime-node. Each case is a directory
onnx/testdata/ops/CASE holding model.onnx, one NAME.npy per graph input
and out/NAME.npy per graph output (written by ../ortrun.js). Constant
operands (shapes, axes, weights) are initializers, as exporters write
them; the graph inputs are what the Go test traces in Graph mode.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ORTRUN = os.path.join(HERE, '..', 'ortrun.js')
F, D, I64, I32, B = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL
NP2ONNX = {np.float32: F, np.float64: D, np.int64: I64, np.int32: I32, np.bool_: B}
rng = np.random.default_rng(11)
CASES = []


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def ints(*v):
    return np.array(v, dtype=np.int64)


def case(name, nodes, inputs, inits=None, outputs=(('y', F),), opset=17):
    """One model: nodes (helper.make_node or (op, ins, outs, attrs)),
    graph inputs {name: array}, initializers {name: array}, outputs
    [(name, elem type)]."""
    CASES.append((name, nodes, inputs, inits or {}, outputs, opset))


def node(op, ins, outs=('y',), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


def ir_version(opset):
    return 10 if opset >= 21 else 9 if opset >= 19 else 8


def build(name, nodes, inputs, inits, outputs, opset):
    vi = [helper.make_tensor_value_info(k, NP2ONNX[v.dtype.type], list(v.shape)) for k, v in inputs.items()]
    inis = [numpy_helper.from_array(v, k) for k, v in inits.items()]
    outs = [helper.make_tensor_value_info(k, t, None) for k, t in outputs]
    g = helper.make_graph(nodes, name, vi, outs, inis)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='spore-ops-gen')
    m.ir_version = ir_version(opset)
    return m


# ---- elementwise ------------------------------------------------------
for op in ['Relu', 'Sigmoid', 'Tanh', 'Erf', 'Exp', 'Neg', 'Abs', 'Reciprocal']:
    case(op.lower(), [node(op, ['x'])], {'x': randn(3, 4)})
for op in ['Sqrt', 'Log']:
    case(op.lower(), [node(op, ['x'])], {'x': np.abs(randn(3, 4)) + 0.1})
case('relu_f64', [node('Relu', ['x'])], {'x': randn(5, dtype=np.float64)}, outputs=[('y', D)])
for op in ['Add', 'Sub', 'Mul', 'Div']:
    case(op.lower() + '_bcast', [node(op, ['a', 'b'])], {'a': randn(2, 3, 4), 'b': randn(3, 1) + 3})
case('add_init', [node('Add', ['a', 'b'])], {'a': randn(2, 3)}, {'b': randn(3)})
case('div_int', [node('Div', ['a', 'b'])], {}, {'a': ints(7, -7, 7, -7, 0, 9), 'b': ints(2, 2, -2, -2, 3, 3)}, [('y', I64)])
case('pow', [node('Pow', ['a', 'b'])], {'a': np.abs(randn(3, 4)) + 0.5, 'b': randn(4)})
case('pow_int_exp', [node('Pow', ['a', 'b'])], {'a': randn(3, 4)}, {'b': ints(2)})
case('leakyrelu', [node('LeakyRelu', ['x'], alpha=0.2)], {'x': randn(3, 5)})
case('leakyrelu_default', [node('LeakyRelu', ['x'])], {'x': randn(3, 5)})
case('clip', [node('Clip', ['x', 'lo', 'hi'])], {'x': randn(4, 4)}, {'lo': np.array(-0.5, np.float32), 'hi': np.array(0.7, np.float32)})
case('clip_min_only', [node('Clip', ['x', 'lo'])], {'x': randn(4, 4)}, {'lo': np.array(0, np.float32)})
case('clip_max_only', [node('Clip', ['x', '', 'hi'])], {'x': randn(4, 4)}, {'hi': np.array(0.1, np.float32)})
case('clip_none', [node('Clip', ['x'])], {'x': randn(4)})
case('min3', [node('Min', ['a', 'b', 'c'])], {'a': randn(3, 4), 'b': randn(4), 'c': randn(3, 1)})
case('max2', [node('Max', ['a', 'b'])], {'a': randn(3, 4), 'b': randn(3, 4)})
case('max1', [node('Max', ['a'])], {'a': randn(3, 4)})
case('where', [node('Less', ['a', 'b'], ['c']), node('Where', ['c', 'a', 'b'])], {'a': randn(3, 4), 'b': randn(4)})
for op in ['Equal', 'Less', 'Greater', 'LessOrEqual', 'GreaterOrEqual']:
    a = np.round(randn(3, 4))
    case(op.lower(), [node(op, ['a', 'b'])], {'a': a, 'b': np.round(randn(4))}, outputs=[('y', B)])
case('equal_int', [node('Equal', ['a', 'b'])], {}, {'a': ints(1, 2, 3), 'b': ints(1, 0, 3)}, [('y', B)])
case('not_and_or', [node('Less', ['a', 'b'], ['l']), node('Greater', ['a', 'c'], ['g']),
                    node('Not', ['l'], ['n']), node('And', ['n', 'g'], ['y1']), node('Or', ['l', 'g'], ['y2'])],
     {'a': randn(3, 4), 'b': randn(3, 4), 'c': randn(4)}, outputs=[('y1', B), ('y2', B)])
case('cast_f2i', [node('Cast', ['x'], to=I64)], {'x': randn(3, 4) * 4}, outputs=[('y', I64)])
case('cast_i2f', [node('Cast', ['x'], to=F)], {}, {'x': ints(-3, 0, 5)})
case('cast_f2b', [node('Cast', ['x'], to=B)], {'x': np.array([0, 1.5, -2, 0], np.float32)}, outputs=[('y', B)])
case('cast_f2d', [node('Cast', ['x'], to=D)], {'x': randn(3)}, outputs=[('y', D)])
case('identity', [node('Identity', ['x'])], {'x': randn(2, 3)})

# ---- matrix products --------------------------------------------------
case('gemm', [node('Gemm', ['a', 'b', 'c'])], {'a': randn(3, 4)}, {'b': randn(4, 5), 'c': randn(5)})
case('gemm_trans', [node('Gemm', ['a', 'b', 'c'], alpha=0.5, beta=2.0, transA=1, transB=1)], {'a': randn(4, 3)}, {'b': randn(5, 4), 'c': randn(3, 5)})
case('gemm_noc', [node('Gemm', ['a', 'b'], transB=1)], {'a': randn(2, 4)}, {'b': randn(6, 4)})
case('gemm_scalar_c', [node('Gemm', ['a', 'b', 'c'])], {'a': randn(2, 4)}, {'b': randn(4, 3), 'c': np.array([0.5], np.float32)})
case('matmul_2d', [node('MatMul', ['a', 'b'])], {'a': randn(3, 4), 'b': randn(4, 5)})
case('matmul_batched', [node('MatMul', ['a', 'b'])], {'a': randn(2, 1, 3, 4), 'b': randn(5, 4, 2)})
case('matmul_1d_left', [node('MatMul', ['a', 'b'])], {'a': randn(4), 'b': randn(2, 4, 3)})
case('matmul_1d_right', [node('MatMul', ['a', 'b'])], {'a': randn(2, 3, 4), 'b': randn(4)})
case('matmul_1d_both', [node('MatMul', ['a', 'b'])], {'a': randn(4), 'b': randn(4)})

# ---- convolution ------------------------------------------------------
case('conv', [node('Conv', ['x', 'w', 'b'])], {'x': randn(2, 3, 7, 6)}, {'w': randn(4, 3, 3, 3), 'b': randn(4)})
case('conv_pads_strides', [node('Conv', ['x', 'w'], pads=[1, 0, 2, 1], strides=[2, 1])], {'x': randn(1, 2, 7, 6)}, {'w': randn(3, 2, 3, 2)})
case('conv_groups', [node('Conv', ['x', 'w', 'b'], group=2, pads=[1, 1, 1, 1])], {'x': randn(1, 4, 5, 5)}, {'w': randn(6, 2, 3, 3), 'b': randn(6)})
case('conv_depthwise', [node('Conv', ['x', 'w'], group=3, kernel_shape=[3, 3])], {'x': randn(2, 3, 6, 6)}, {'w': randn(3, 1, 3, 3)})
case('conv_dilations', [node('Conv', ['x', 'w'], dilations=[2, 3], pads=[2, 1, 0, 3])], {'x': randn(1, 2, 9, 9)}, {'w': randn(2, 2, 3, 3)})
for ap in ['SAME_UPPER', 'SAME_LOWER', 'VALID']:
    case('conv_' + ap.lower(), [node('Conv', ['x', 'w'], auto_pad=ap, strides=[2, 2])], {'x': randn(1, 2, 8, 7)}, {'w': randn(3, 2, 4, 3)})
case('conv_1d', [node('Conv', ['x', 'w', 'b'], pads=[1, 2], strides=[2], dilations=[1])], {'x': randn(2, 3, 11)}, {'w': randn(4, 3, 3), 'b': randn(4)})
case('convtranspose', [node('ConvTranspose', ['x', 'w', 'b'])], {'x': randn(1, 3, 4, 5)}, {'w': randn(3, 2, 3, 3), 'b': randn(2)})
case('convtranspose_strided', [node('ConvTranspose', ['x', 'w'], strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0])],
     {'x': randn(2, 2, 3, 4)}, {'w': randn(2, 3, 3, 2)})
case('convtranspose_groups_dil', [node('ConvTranspose', ['x', 'w'], group=2, dilations=[2, 1], strides=[1, 2])],
     {'x': randn(1, 4, 3, 3)}, {'w': randn(4, 1, 2, 3)})
case('convtranspose_output_shape', [node('ConvTranspose', ['x', 'w'], strides=[2, 2], output_shape=[9, 10])],
     {'x': randn(1, 2, 4, 5)}, {'w': randn(2, 2, 3, 3)})
case('convtranspose_same_upper', [node('ConvTranspose', ['x', 'w'], strides=[2, 2], auto_pad='SAME_UPPER')],
     {'x': randn(1, 2, 3, 4)}, {'w': randn(2, 1, 4, 3)})
case('convtranspose_1d', [node('ConvTranspose', ['x', 'w'], strides=[3], pads=[1, 0])], {'x': randn(1, 2, 5)}, {'w': randn(2, 3, 4)})

# ---- normalisation and activations -------------------------------------
bn = {'s': randn(3), 'b': randn(3), 'm': randn(3), 'v': np.abs(randn(3)) + 0.5}
case('batchnorm', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], epsilon=1e-3)], {'x': randn(2, 3, 4, 5)}, bn)
case('batchnorm_2d', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'])], {'x': randn(4, 3)}, bn)
case('batchnorm_3d', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'])], {'x': randn(2, 3, 5)}, bn)
case('batchnorm_op15', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'])], {'x': randn(2, 3, 2, 2)}, bn, opset=15)
for axis in [-1, 1, 0]:
    case('softmax_axis%d' % axis, [node('Softmax', ['x'], axis=axis)], {'x': randn(2, 3, 4)})
    case('logsoftmax_axis%d' % axis, [node('LogSoftmax', ['x'], axis=axis)], {'x': randn(2, 3, 4)})
case('softmax_default_op13', [node('Softmax', ['x'])], {'x': randn(2, 3, 4)}, opset=13)
case('layernorm', [node('LayerNormalization', ['x', 's', 'b'], epsilon=1e-5)], {'x': randn(2, 3, 8)}, {'s': randn(8), 'b': randn(8)})
case('layernorm_axis1_nobias', [node('LayerNormalization', ['x', 's'], axis=1)], {'x': randn(2, 3, 4)}, {'s': randn(3, 4)})
case('layernorm_stats', [node('LayerNormalization', ['x', 's', 'b'], ['y', 'mean', 'invstd'], axis=-2)], {'x': randn(2, 3, 4)},
     {'s': randn(3, 4), 'b': randn(3, 4)}, [('y', F), ('mean', F), ('invstd', F)])
case('gelu', [node('Gelu', ['x'])], {'x': randn(3, 5) * 2}, opset=20)
case('gelu_tanh', [node('Gelu', ['x'], approximate='tanh')], {'x': randn(3, 5) * 2}, opset=20)
case('dropout', [node('Dropout', ['x', 'r'])], {'x': randn(3, 4)}, {'r': np.array(0.3, np.float32)})
case('dropout_mask', [node('Dropout', ['x'], ['y', 'mask'])], {'x': randn(3, 4)}, outputs=[('y', F), ('mask', B)])

# ---- pooling ----------------------------------------------------------
case('maxpool', [node('MaxPool', ['x'], kernel_shape=[2, 2], strides=[2, 2])], {'x': randn(2, 3, 6, 7)})
case('maxpool_pads', [node('MaxPool', ['x'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {'x': randn(1, 2, 7, 7)})
case('maxpool_ceil', [node('MaxPool', ['x'], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)], {'x': randn(1, 2, 8, 6)})
case('maxpool_same_upper', [node('MaxPool', ['x'], kernel_shape=[3, 2], strides=[2, 2], auto_pad='SAME_UPPER')], {'x': randn(1, 2, 7, 5)})
case('maxpool_1d', [node('MaxPool', ['x'], kernel_shape=[3], strides=[2])], {'x': randn(2, 3, 9)})
case('avgpool', [node('AveragePool', ['x'], kernel_shape=[2, 2], strides=[2, 2])], {'x': randn(2, 3, 6, 6)})
case('avgpool_pads_exclude', [node('AveragePool', ['x'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {'x': randn(1, 2, 7, 6)})
case('avgpool_pads_include', [node('AveragePool', ['x'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)], {'x': randn(1, 2, 7, 6)})
case('avgpool_ceil', [node('AveragePool', ['x'], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)], {'x': randn(1, 2, 8, 6)})
case('avgpool_op19', [node('AveragePool', ['x'], kernel_shape=[2, 3], strides=[1, 2])], {'x': randn(1, 2, 5, 7)}, opset=19)
case('globalavgpool', [node('GlobalAveragePool', ['x'])], {'x': randn(2, 3, 4, 5)})
case('globalmaxpool', [node('GlobalMaxPool', ['x'])], {'x': randn(2, 3, 4, 5)})

# ---- reductions -------------------------------------------------------
case('reducesum', [node('ReduceSum', ['x', 'a'])], {'x': randn(2, 3, 4)}, {'a': ints(1)})
case('reducesum_noaxes', [node('ReduceSum', ['x'], keepdims=0)], {'x': randn(2, 3, 4)})
case('reducesum_noop', [node('ReduceSum', ['x'], noop_with_empty_axes=1)], {'x': randn(2, 3)})
case('reducesum_neg_nokeep', [node('ReduceSum', ['x', 'a'], keepdims=0)], {'x': randn(2, 3, 4)}, {'a': ints(-1, 0)})
case('reducemean_op17', [node('ReduceMean', ['x'], axes=[-1])], {'x': randn(2, 3, 4)}, opset=17)
case('reducemean_op18', [node('ReduceMean', ['x', 'a'], keepdims=0)], {'x': randn(2, 3, 4)}, {'a': ints(0, 2)}, opset=18)
case('reducemean_op18_all', [node('ReduceMean', ['x'])], {'x': randn(2, 3, 4)}, opset=18)
case('reducemax_op13', [node('ReduceMax', ['x'], axes=[1], keepdims=0)], {'x': randn(2, 3, 4)}, opset=13)
case('reducemax_op18', [node('ReduceMax', ['x', 'a'])], {'x': randn(2, 3, 4)}, {'a': ints(2)}, opset=18)
case('reducemax_op20_noop', [node('ReduceMax', ['x'], noop_with_empty_axes=1)], {'x': randn(2, 3)}, opset=20)
case('argmax', [node('ArgMax', ['x'], axis=1)], {'x': randn(2, 3, 4)}, outputs=[('y', I64)])
case('argmax_nokeep', [node('ArgMax', ['x'], axis=-1, keepdims=0)], {'x': randn(2, 3, 4)}, outputs=[('y', I64)])
case('argmax_last', [node('ArgMax', ['x'], axis=1, select_last_index=1)], {'x': np.round(randn(3, 6))}, outputs=[('y', I64)])

# ---- shapes and layout ------------------------------------------------
case('reshape', [node('Reshape', ['x', 's'])], {'x': randn(2, 3, 4)}, {'s': ints(0, -1, 2)})
case('reshape_allowzero', [node('Reshape', ['x', 's'], allowzero=1)], {'x': randn(2, 3, 4)}, {'s': ints(4, 6)}, opset=14)
case('transpose', [node('Transpose', ['x'], perm=[1, 2, 0])], {'x': randn(2, 3, 4)})
case('transpose_default', [node('Transpose', ['x'])], {'x': randn(2, 3, 4)})
for axis in [0, 1, 2, -1]:
    case('flatten_axis%d' % axis, [node('Flatten', ['x'], axis=axis)], {'x': randn(2, 3, 4)})
case('concat', [node('Concat', ['a', 'b', 'c'], axis=1)], {'a': randn(2, 1, 3), 'b': randn(2, 4, 3)}, {'c': randn(2, 2, 3)})
case('concat_neg', [node('Concat', ['a', 'b'], axis=-1)], {'a': randn(2, 3), 'b': randn(2, 2)})
case('split_equal', [node('Split', ['x'], ['y0', 'y1', 'y2'], axis=1)], {'x': randn(2, 6)}, outputs=[('y0', F), ('y1', F), ('y2', F)], opset=13)
case('split_sizes', [node('Split', ['x', 's'], ['y0', 'y1'], axis=-1)], {'x': randn(2, 3, 7)}, {'s': ints(2, 5)}, [('y0', F), ('y1', F)], opset=13)
case('split_num_outputs', [node('Split', ['x'], ['y0', 'y1', 'y2'], axis=0, num_outputs=3)], {'x': randn(7, 2)},
     outputs=[('y0', F), ('y1', F), ('y2', F)], opset=18)
case('slice', [node('Slice', ['x', 's', 'e'])], {'x': randn(5, 6)}, {'s': ints(1, 0), 'e': ints(4, 5)})
case('slice_axes_steps', [node('Slice', ['x', 's', 'e', 'a', 't'])], {'x': randn(4, 10, 5)}, {'s': ints(1, -2), 'e': ints(9, 100), 'a': ints(1, -1), 't': ints(2, 1)})
case('slice_neg_step', [node('Slice', ['x', 's', 'e', 'a', 't'])], {'x': randn(4, 10)}, {'s': ints(-1, 8), 'e': ints(-9223372036854775807, 1), 'a': ints(0, 1), 't': ints(-1, -3)})
case('slice_clamped', [node('Slice', ['x', 's', 'e', 'a'])], {'x': randn(4, 6)}, {'s': ints(-100, 2), 'e': ints(100, 9223372036854775807), 'a': ints(0, 1)})
case('slice_empty', [node('Slice', ['x', 's', 'e', 'a'])], {'x': randn(4, 6)}, {'s': ints(3), 'e': ints(1), 'a': ints(1)})
case('gather', [node('Gather', ['x', 'i'], axis=0)], {'x': randn(5, 3)}, {'i': ints(0, -1, 2, 2)})
case('gather_axis1_2d', [node('Gather', ['x', 'i'], axis=1)], {'x': randn(2, 5, 3)}, {'i': np.array([[0, 4], [-2, 1]], np.int64)})
case('gather_scalar', [node('Gather', ['x', 'i'], axis=-1)], {'x': randn(2, 5)}, {'i': np.array(3, np.int64)})
case('gather_int32_idx', [node('Gather', ['x', 'i'])], {'x': randn(4, 2)}, {'i': np.array([3, 0], np.int32)})
case('squeeze', [node('Squeeze', ['x', 'a'])], {'x': randn(1, 3, 1, 2)}, {'a': ints(0, -2)})
case('squeeze_all', [node('Squeeze', ['x'])], {'x': randn(1, 3, 1, 2)})
case('unsqueeze', [node('Unsqueeze', ['x', 'a'])], {'x': randn(3, 2)}, {'a': ints(0, -1, 2)})
case('expand', [node('Expand', ['x', 's'])], {'x': randn(3, 1)}, {'s': ints(2, 1, 4)})
case('expand_smaller_shape', [node('Expand', ['x', 's'])], {'x': randn(2, 3, 1)}, {'s': ints(1, 5)})
case('tile', [node('Tile', ['x', 'r'])], {'x': randn(2, 3)}, {'r': ints(2, 3)})
case('pad_constant', [node('Pad', ['x', 'p'])], {'x': randn(2, 3)}, {'p': ints(1, 0, 2, 3)})
case('pad_constant_value', [node('Pad', ['x', 'p', 'v'])], {'x': randn(2, 3)}, {'p': ints(0, 2, 1, 1), 'v': np.array(1.5, np.float32)})
case('pad_negative', [node('Pad', ['x', 'p'])], {'x': randn(4, 5)}, {'p': ints(-1, 2, 1, -2)})
case('pad_reflect', [node('Pad', ['x', 'p'], mode='reflect')], {'x': randn(1, 2, 4, 5)}, {'p': ints(0, 0, 2, 3, 0, 0, 3, 4)})
case('pad_edge', [node('Pad', ['x', 'p'], mode='edge')], {'x': randn(3, 4)}, {'p': ints(2, 0, 1, 3)})
case('pad_axes_op18', [node('Pad', ['x', 'p', 'v', 'a'])], {'x': randn(2, 3, 4)}, {'p': ints(1, 2, 0, 1), 'v': np.array(-1, np.float32), 'a': ints(-1, 0)}, opset=18)
case('pad_wrap_op19', [node('Pad', ['x', 'p'], mode='wrap')], {'x': randn(3, 4)}, {'p': ints(1, 2, 2, 3)}, opset=19)

# ---- shape sub-graphs and constants ------------------------------------
case('shape', [node('Shape', ['x'])], {'x': randn(2, 3, 4)}, outputs=[('y', I64)])
case('shape_start_end', [node('Shape', ['x'], start=1, end=-1)], {'x': randn(2, 3, 4, 5)}, outputs=[('y', I64)], opset=15)
case('size', [node('Size', ['x'])], {'x': randn(2, 3, 4)}, outputs=[('y', I64)])
case('shape_subgraph', [
    node('Shape', ['x'], ['s']),
    node('Gather', ['s', 'i0'], ['n'], axis=0),
    node('Unsqueeze', ['n', 'ax'], ['n1']),
    node('Concat', ['n1', 'minus1'], ['shape'], axis=0),
    node('Reshape', ['x', 'shape'])],
    {'x': randn(3, 4, 5)}, {'i0': np.array(0, np.int64), 'ax': ints(0), 'minus1': ints(-1)})
case('shape_arith', [
    node('Shape', ['x'], ['s']),
    node('Gather', ['s', 'i'], ['d'], axis=0),
    node('Div', ['d', 'two'], ['h']),
    node('Mul', ['h', 'two'], ['h2']),
    node('Sub', ['d', 'h2'], ['r']),
    node('Add', ['h', 'r'], ['q']),
    node('Concat', ['q', 'h'], ['y'], axis=0)],
    {'x': randn(2, 7)}, {'i': ints(1), 'two': ints(2)}, [('y', I64)])
case('constant', [node('Constant', [], ['c'], value=numpy_helper.from_array(randn(2, 3))), node('Add', ['x', 'c'])], {'x': randn(2, 3)})
case('constant_value_float', [node('Constant', [], ['c'], value_float=2.5), node('Mul', ['x', 'c'])], {'x': randn(3)})
case('constant_value_floats', [node('Constant', [], ['c'], value_floats=[1.0, -2.0, 3.0]), node('Mul', ['x', 'c'])], {'x': randn(2, 3)})
case('constant_value_ints', [node('Constant', [], ['y'], value_ints=[3, -1, 4])], {}, outputs=[('y', I64)])
case('constant_value_int', [node('Constant', [], ['y'], value_int=7)], {}, outputs=[('y', I64)])
case('constantofshape', [node('ConstantOfShape', ['s'])], {}, {'s': ints(2, 3)})
case('constantofshape_int', [node('Shape', ['x'], ['s']), node('ConstantOfShape', ['s'], value=numpy_helper.from_array(ints(5)))],
     {'x': randn(2, 4)}, outputs=[('y', I64)])
case('range_int', [node('Range', ['a', 'b', 'c'])], {}, {'a': np.array(2, np.int64), 'b': np.array(11, np.int64), 'c': np.array(3, np.int64)}, [('y', I64)])
case('range_float_neg', [node('Range', ['a', 'b', 'c'])], {}, {'a': np.array(1, np.float32), 'b': np.array(-2, np.float32), 'c': np.array(-0.7, np.float32)})

# ---- newest opsets ----------------------------------------------------
case('add_op21', [node('Add', ['a', 'b'])], {'a': randn(2, 3), 'b': randn(3)}, opset=21)
case('reshape_op21', [node('Reshape', ['x', 's'])], {'x': randn(2, 6)}, {'s': ints(3, -1)}, opset=21)
case('squeeze_op21', [node('Squeeze', ['x', 'a'])], {'x': randn(2, 1, 3)}, {'a': ints(1)}, opset=21)
case('reducemean_op21', [node('ReduceMean', ['x', 'a'])], {'x': randn(2, 3, 4)}, {'a': ints(-1)}, opset=21)

# ---- opsets 11 and 12, where axes and split were attributes -------------
case('squeeze_op11', [node('Squeeze', ['x'], axes=[0, 2])], {'x': randn(1, 3, 1, 2)}, opset=11)
case('squeeze_all_op12', [node('Squeeze', ['x'])], {'x': randn(1, 3, 1, 2)}, opset=12)
case('unsqueeze_op11', [node('Unsqueeze', ['x'], axes=[0, 3])], {'x': randn(3, 2)}, opset=11)
case('split_op11', [node('Split', ['x'], ['y0', 'y1'], axis=1, split=[1, 3])], {'x': randn(2, 4)}, outputs=[('y0', F), ('y1', F)], opset=11)
case('split_equal_op12', [node('Split', ['x'], ['y0', 'y1'], axis=0)], {'x': randn(4, 3)}, outputs=[('y0', F), ('y1', F)], opset=12)
case('reducesum_op12', [node('ReduceSum', ['x'], axes=[0, -1], keepdims=0)], {'x': randn(2, 3, 4)}, opset=12)
case('reducemean_op11', [node('ReduceMean', ['x'], axes=[1])], {'x': randn(2, 3, 4)}, opset=11)
case('reducemax_op12_all', [node('ReduceMax', ['x'], keepdims=0)], {'x': randn(2, 3)}, opset=12)
case('softmax_op11', [node('Softmax', ['x'])], {'x': randn(2, 3, 4)}, opset=11)
case('logsoftmax_op12_axis2', [node('LogSoftmax', ['x'], axis=2)], {'x': randn(2, 3, 4)}, opset=12)
case('dropout_op11', [node('Dropout', ['x'], ratio=0.2)], {'x': randn(3, 4)}, opset=11)
case('clip_op12', [node('Clip', ['x', 'lo', 'hi'])], {'x': randn(4, 4)}, {'lo': np.array(-0.5, np.float32), 'hi': np.array(0.7, np.float32)}, opset=12)
case('pad_op11', [node('Pad', ['x', 'p', 'v'])], {'x': randn(2, 3)}, {'p': ints(1, 0, 0, 2), 'v': np.array(2, np.float32)}, opset=11)
case('gemm_op11', [node('Gemm', ['a', 'b', 'c'], transB=1)], {'a': randn(3, 4)}, {'b': randn(5, 4), 'c': randn(5)}, opset=11)
case('conv_op11', [node('Conv', ['x', 'w', 'b'], pads=[1, 1, 1, 1])], {'x': randn(1, 2, 5, 5)}, {'w': randn(3, 2, 3, 3), 'b': randn(3)}, opset=11)
case('maxpool_op12', [node('MaxPool', ['x'], kernel_shape=[2, 2], strides=[2, 2])], {'x': randn(1, 2, 6, 6)}, opset=12)
case('slice_op11', [node('Slice', ['x', 's', 'e', 'a', 't'])], {'x': randn(4, 6)}, {'s': ints(3, 0), 'e': ints(0, 6), 'a': ints(0, 1), 't': ints(-1, 2)}, opset=11)
case('gather_op11', [node('Gather', ['x', 'i'], axis=1)], {'x': randn(3, 4)}, {'i': ints(-1, 0)}, opset=11)
case('argmax_op12_last', [node('ArgMax', ['x'], axis=0, select_last_index=1)], {'x': np.round(randn(4, 3))}, outputs=[('y', I64)], opset=12)

# ---- beyond the core set ---------------------------------------------
case('round', [node('Round', ['x'])], {'x': np.array([0.5, 1.5, -2.5, 2.4, -0.6], np.float32)})
case('elu', [node('Elu', ['x'], alpha=0.7)], {'x': randn(3, 4)})
case('selu', [node('Selu', ['x'])], {'x': randn(3, 4)})
case('hardsigmoid', [node('HardSigmoid', ['x'], alpha=0.3)], {'x': randn(3, 4) * 3})
case('hardswish', [node('HardSwish', ['x'])], {'x': randn(3, 4) * 3}, opset=14)
case('softsign', [node('Softsign', ['x'])], {'x': randn(3, 4)})
case('prelu', [node('PRelu', ['x', 's'])], {'x': randn(2, 3, 4)}, {'s': np.abs(randn(3, 1))})
case('isnan', [node('Div', ['a', 'b'], ['q']), node('IsNaN', ['q'])], {'a': np.array([0, 1, 0], np.float32), 'b': np.array([0, 2, 1], np.float32)}, outputs=[('y', B)])
case('mod_int', [node('Mod', ['a', 'b'])], {}, {'a': ints(7, -7, 7, -7), 'b': ints(3, 3, -3, -3)}, [('y', I64)])
case('mod_fmod_int', [node('Mod', ['a', 'b'], fmod=1)], {}, {'a': ints(7, -7, 7, -7), 'b': ints(3, 3, -3, -3)}, [('y', I64)])
case('mod_fmod_float', [node('Mod', ['a', 'b'], fmod=1)], {'a': randn(3, 4) * 5, 'b': np.abs(randn(4)) + 0.5})
case('trilu_upper', [node('Trilu', ['x'])], {'x': randn(2, 4, 5)}, opset=14)
case('trilu_lower_k', [node('Trilu', ['x', 'k'], upper=0)], {'x': randn(4, 5)}, {'k': np.array(-1, np.int64)}, opset=14)
case('cumsum', [node('CumSum', ['x', 'a'])], {'x': randn(3, 4)}, {'a': np.array(1, np.int64)})
case('cumsum_excl_rev', [node('CumSum', ['x', 'a'], exclusive=1, reverse=1)], {'x': randn(3, 4)}, {'a': np.array(0, np.int64)})
case('topk', [node('TopK', ['x', 'k'], ['v', 'i'], axis=1)], {'x': randn(2, 6, 3)}, {'k': ints(3)}, [('v', F), ('i', I64)])
case('instancenorm', [node('InstanceNormalization', ['x', 's', 'b'], epsilon=1e-4)], {'x': randn(2, 3, 4, 5)}, {'s': randn(3), 'b': randn(3)})
case('reducel1', [node('ReduceL1', ['x'], axes=[1])], {'x': randn(2, 3, 4)})
case('reducel2_op18', [node('ReduceL2', ['x', 'a'], keepdims=0)], {'x': randn(2, 3, 4)}, {'a': ints(-1)}, opset=18)
case('reducesumsquare', [node('ReduceSumSquare', ['x'], axes=[0, 2])], {'x': randn(2, 3, 4)})
case('reducelogsumexp', [node('ReduceLogSumExp', ['x'], axes=[1])], {'x': randn(2, 3, 4) * 30})

# ---- more variants ---------------------------------------------------
case('avgpool_ceil_include', [node('AveragePool', ['x'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1, count_include_pad=1)], {'x': randn(1, 2, 8, 6)})
case('avgpool_ceil_include_1d', [node('AveragePool', ['x'], kernel_shape=[2], strides=[2], ceil_mode=1, count_include_pad=1)], {'x': randn(1, 2, 7)})
case('sum3', [node('Sum', ['a', 'b', 'c'])], {'a': randn(3, 4), 'b': randn(4), 'c': randn(3, 1)})
case('mean2', [node('Mean', ['a', 'b'])], {'a': randn(3, 4), 'b': randn(3, 4)})
case('xor', [node('Less', ['a', 'b'], ['l']), node('Greater', ['a', 'c'], ['g']), node('Xor', ['l', 'g'])],
     {'a': randn(3, 4), 'b': randn(3, 4), 'c': randn(4)}, outputs=[('y', B)])
for op in ['Floor', 'Ceil', 'Sin', 'Cos', 'Sign', 'Softplus']:
    case(op.lower(), [node(op, ['x'])], {'x': randn(3, 4) * 3})
case('cast_f2i32', [node('Cast', ['x'], to=I32)], {'x': randn(3, 4) * 4}, outputs=[('y', I32)])
case('cast_f2u8', [node('Cast', ['x'], to=TensorProto.UINT8)], {'x': np.abs(randn(3, 4)) * 40}, outputs=[('y', TensorProto.UINT8)])

case('reducelogsum', [node('ReduceLogSum', ['x'], axes=[2])], {'x': np.abs(randn(2, 3, 4)) + 0.1})
case('reducemin_op18', [node('ReduceMin', ['x', 'a'], keepdims=0)], {'x': randn(2, 3, 4)}, {'a': ints(1)}, opset=18)
case('reduceprod', [node('ReduceProd', ['x'], axes=[0, 1])], {'x': randn(2, 3, 4)})

# ---- Einsum ------------------------------------------------------------
for i, (eq, shapes) in enumerate([
        ('ij,jk->ik', [(3, 4), (4, 5)]),
        ('bij,bjk->bik', [(2, 3, 4), (2, 4, 5)]),
        ('bhqd,bhkd->bhqk', [(2, 3, 4, 5), (2, 3, 6, 5)]),
        ('...ij,...jk->...ik', [(2, 2, 3, 4), (2, 2, 4, 5)]),
        ('ij->ji', [(3, 4)]),
        ('ij->', [(3, 4)]),
        ('i,i->', [(5,), (5,)]),
        ('i,j->ij', [(3,), (4,)]),
        ('bn,anm,bm->ba', [(2, 3), (4, 3, 5), (2, 5)]),
        ('ij,jk', [(3, 4), (4, 2)]),
        ('bij->bj', [(2, 3, 4)]),
        ('ab...,b->a...', [(3, 4, 2, 5), (4,)])]):
    names = ['x%d' % k for k in range(len(shapes))]
    case('einsum_%d' % i, [node('Einsum', names, equation=eq)], {n: randn(*s) for n, s in zip(names, shapes)}, opset=12 if i % 2 else 17)

# ---- more exporters' ops -----------------------------------------------
case('thresholdedrelu', [node('ThresholdedRelu', ['x'], alpha=0.5)], {'x': randn(3, 4)})
case('celu', [node('Celu', ['x'], alpha=0.8)], {'x': randn(3, 4)})
case('mish', [node('Mish', ['x'])], {'x': randn(3, 4) * 3}, opset=18)
case('isinf', [node('Div', ['a', 'b'], ['q']), node('IsInf', ['q'], detect_negative=0)],
     {'a': np.array([1, -1, 0, 2], np.float32), 'b': np.array([0, 0, 1, 0], np.float32)}, outputs=[('y', B)])
case('isinf_both', [node('Div', ['a', 'b'], ['q']), node('IsInf', ['q'])],
     {'a': np.array([1, -1, 0, 2], np.float32), 'b': np.array([0, 0, 1, 0], np.float32)}, outputs=[('y', B)])
case('gatherelements', [node('GatherElements', ['x', 'i'], axis=1)], {'x': randn(3, 4)}, {'i': np.array([[0, 3], [-1, 1], [2, 2]], np.int64)})
case('gatherelements_short', [node('GatherElements', ['x', 'i'], axis=0)], {'x': randn(3, 4)}, {'i': np.array([[2, 0, 1]], np.int64)})
case('onehot', [node('OneHot', ['i', 'd', 'v'])], {}, {'i': np.array([[0, 2], [-1, 5]], np.int64), 'd': np.array(4, np.int64), 'v': np.array([-1, 3], np.float32)})
case('onehot_axis0', [node('OneHot', ['i', 'd', 'v'], axis=0)], {}, {'i': ints(1, 0, 2), 'd': np.array(3, np.int64), 'v': np.array([0, 1], np.float32)})
case('depthtospace_dcr', [node('DepthToSpace', ['x'], blocksize=2)], {'x': randn(1, 8, 2, 3)})
case('depthtospace_crd', [node('DepthToSpace', ['x'], blocksize=2, mode='CRD')], {'x': randn(2, 8, 2, 3)})
case('spacetodepth', [node('SpaceToDepth', ['x'], blocksize=2)], {'x': randn(1, 3, 4, 6)})

case('maxpool_dilated', [node('MaxPool', ['x'], kernel_shape=[2, 3], dilations=[2, 2], strides=[1, 2], pads=[1, 1, 0, 2])], {'x': randn(1, 2, 7, 8)})
case('maxpool_dilated_ceil', [node('MaxPool', ['x'], kernel_shape=[3, 3], dilations=[2, 1], strides=[2, 2], ceil_mode=1)], {'x': randn(2, 1, 9, 8)})

case('conv_same_upper_odd', [node('Conv', ['x', 'w'], auto_pad='SAME_UPPER', strides=[1, 2])], {'x': randn(1, 2, 8, 9)}, {'w': randn(2, 2, 2, 3)})
case('conv_same_lower_1d', [node('Conv', ['x', 'w'], auto_pad='SAME_LOWER', strides=[3])], {'x': randn(1, 2, 10)}, {'w': randn(3, 2, 4)})
case('convtranspose_same_lower', [node('ConvTranspose', ['x', 'w'], strides=[2, 3], auto_pad='SAME_LOWER')], {'x': randn(1, 2, 3, 3)}, {'w': randn(2, 2, 3, 2)})
case('convtranspose_output_shape_1d', [node('ConvTranspose', ['x', 'w', 'b'], strides=[2], output_shape=[10])], {'x': randn(2, 2, 5)}, {'w': randn(2, 1, 3), 'b': randn(1)})
case('convtranspose_valid', [node('ConvTranspose', ['x', 'w'], strides=[2, 2], auto_pad='VALID')], {'x': randn(1, 2, 3, 3)}, {'w': randn(2, 2, 3, 3)})

case('convtranspose_output_shape_grow', [node('ConvTranspose', ['x', 'w'], strides=[2, 3], output_shape=[8, 10])], {'x': randn(1, 2, 3, 3)}, {'w': randn(2, 2, 3, 2)})

case('shrink', [node('Shrink', ['x'], lambd=0.6, bias=0.2)], {'x': randn(3, 4)})
case('hardmax', [node('Hardmax', ['x'], axis=1)], {'x': randn(2, 5, 3)})
case('lpnorm_l2', [node('LpNormalization', ['x'], axis=1)], {'x': randn(3, 4, 2)})
case('lpnorm_l1', [node('LpNormalization', ['x'], axis=-1, p=1)], {'x': randn(3, 4)})
case('mvn', [node('MeanVarianceNormalization', ['x'])], {'x': randn(2, 3, 4, 5)})
case('mvn_axes', [node('MeanVarianceNormalization', ['x'], axes=[1])], {'x': randn(2, 3, 4)})
case('lrn', [node('LRN', ['x'], size=3, alpha=1e-2, beta=0.75, bias=2.0)], {'x': randn(2, 5, 3, 3)})

# ---- Resize ------------------------------------------------------------
E = np.zeros(0, np.float32)
sc = lambda *v: np.array(v, np.float32)
for i, (attrs, x, scales, sizes) in enumerate([
        (dict(mode='nearest'), randn(1, 2, 3, 4), sc(1, 1, 2, 2), None),
        (dict(mode='nearest', coordinate_transformation_mode='asymmetric', nearest_mode='floor'), randn(1, 2, 3, 4), sc(1, 1, 2, 3), None),
        (dict(mode='nearest', nearest_mode='round_prefer_ceil'), randn(1, 1, 5, 5), None, ints(1, 1, 3, 8)),
        (dict(mode='nearest', coordinate_transformation_mode='tf_half_pixel_for_nn', nearest_mode='ceil'), randn(1, 1, 4, 4), sc(1, 1, 1.5, 0.5), None),
        (dict(mode='linear'), randn(1, 2, 3, 4), sc(1, 1, 2, 2), None),
        (dict(mode='linear', coordinate_transformation_mode='align_corners'), randn(2, 1, 3, 4), None, ints(2, 1, 7, 5)),
        (dict(mode='linear', coordinate_transformation_mode='pytorch_half_pixel'), randn(1, 2, 4, 6), None, ints(1, 2, 1, 3)),
        (dict(mode='linear', coordinate_transformation_mode='asymmetric'), randn(1, 1, 4, 4), sc(1, 1, 0.5, 1.75), None),
        (dict(mode='linear'), randn(2, 3, 5), sc(1, 1, 2.5), None)]):
    inits = {'roi': E, 'scales': scales if scales is not None else E}
    names = ['x', 'roi', 'scales']
    if sizes is not None:
        inits['sizes'] = sizes
        names.append('sizes')
    case('resize_%d' % i, [node('Resize', names, **attrs)], {'x': x}, inits, opset=11 if i == 8 else 13 if i % 2 else 19)
case('resize_axes_op18', [node('Resize', ['x', '', 's'], mode='linear', axes=[2, 3])], {'x': randn(1, 2, 3, 3)}, {'s': sc(2, 0.7)}, opset=18)

# ---- 3-D convolution and pooling ---------------------------------------
case('conv3d', [node('Conv', ['x', 'w', 'b'], pads=[1, 0, 1, 0, 1, 1], strides=[2, 1, 2])], {'x': randn(2, 2, 5, 4, 6)}, {'w': randn(3, 2, 3, 2, 3), 'b': randn(3)})
case('conv3d_groups_dil', [node('Conv', ['x', 'w'], group=2, dilations=[2, 1, 1], pads=[1, 1, 0, 0, 1, 1])], {'x': randn(1, 4, 6, 3, 4)}, {'w': randn(2, 2, 2, 3, 2)})
case('maxpool3d', [node('MaxPool', ['x'], kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 1, 0, 0, 1, 1])], {'x': randn(1, 2, 5, 4, 5)})
case('avgpool3d_exclude', [node('AveragePool', ['x'], kernel_shape=[3, 2, 2], strides=[2, 2, 1], pads=[1, 0, 1, 1, 1, 0])], {'x': randn(2, 1, 5, 4, 3)})
case('avgpool3d_include', [node('AveragePool', ['x'], kernel_shape=[3, 2, 2], strides=[2, 2, 1], pads=[1, 0, 1, 1, 1, 0], count_include_pad=1)], {'x': randn(2, 1, 5, 4, 3)})

# ---- scatters with constant indices -----------------------------------
case('scatternd', [node('ScatterND', ['x', 'i', 'u'])], {'x': randn(4, 3, 2), 'u': randn(2, 3, 2)}, {'i': np.array([[1], [-1]], np.int64)})
case('scatternd_elems', [node('ScatterND', ['x', 'i', 'u'])], {'x': randn(4, 3), 'u': randn(3)}, {'i': np.array([[0, 1], [3, -1], [2, 0]], np.int64)})
case('scatterelements', [node('ScatterElements', ['x', 'i', 'u'], axis=1)], {'x': randn(3, 5), 'u': randn(3, 2)}, {'i': np.array([[0, 4], [-1, 1], [2, 3]], np.int64)})
case('scatterelements_axis0', [node('ScatterElements', ['x', 'i', 'u'])], {'x': randn(4, 3), 'u': randn(2, 3)}, {'i': np.array([[1, 0, 3], [2, 2, -4]], np.int64)})

case('gathernd', [node('GatherND', ['x', 'i'])], {'x': randn(4, 3, 2)}, {'i': np.array([[1, 2], [-1, 0], [0, -3]], np.int64)})
case('gathernd_slices', [node('GatherND', ['x', 'i'])], {'x': randn(4, 3, 2)}, {'i': np.array([[[3], [0]]], np.int64)})
case('gathernd_batch', [node('GatherND', ['x', 'i'], batch_dims=1)], {'x': randn(2, 4, 3)}, {'i': np.array([[[1], [3]], [[0], [-2]]], np.int64)}, opset=13)
case('gathernd_data_indices', [node('Shape', ['x'], ['s']), node('Slice', ['s', 'z', 'o'], ['d']), node('Sub', ['d', 'one'], ['last']),
                               node('Reshape', ['last', 'shp'], ['i']), node('GatherND', ['x', 'i'])],
     {'x': randn(5, 3)}, {'z': ints(0), 'o': ints(1), 'one': ints(1), 'shp': ints(1, 1)})

case('gathernd_traced_indices', [node('GatherND', ['x', 'i'], batch_dims=1)], {'x': randn(2, 4, 3), 'i': np.array([[[1, 2], [3, -1]], [[0, 0], [-2, 1]]], np.int64)})

# ---- float64 -----------------------------------------------------------
d64 = lambda *s: randn(*s, dtype=np.float64)
case('gemm_f64', [node('Gemm', ['a', 'b', 'c'], transB=1)], {'a': d64(3, 4)}, {'b': d64(5, 4), 'c': d64(5)}, [('y', D)])
case('matmul_f64', [node('MatMul', ['a', 'b'])], {'a': d64(2, 3, 4), 'b': d64(4, 2)}, outputs=[('y', D)])
case('softmax_f64', [node('Softmax', ['x'], axis=1)], {'x': d64(2, 3, 4)}, outputs=[('y', D)])
case('layernorm_f64', [node('LayerNormalization', ['x', 's', 'b'])], {'x': d64(2, 5)}, {'s': d64(5), 'b': d64(5)}, [('y', D)])
case('maxpool_f64', [node('MaxPool', ['x'], kernel_shape=[2, 2], strides=[1, 1])], {'x': d64(1, 2, 4, 4)}, outputs=[('y', D)])
case('reducemean_f64', [node('ReduceMean', ['x'], axes=[1])], {'x': d64(2, 3, 4)}, outputs=[('y', D)])
case('sqrt_exp_f64', [node('Abs', ['x'], ['a']), node('Sqrt', ['a'], ['s']), node('Exp', ['s'])], {'x': d64(3, 4)}, outputs=[('y', D)])

# ---- CastLike (appended last, so that the cases above keep their draws) --
case('castlike_f2d', [node('CastLike', ['x', 'like'])], {'x': randn(3, 4)}, {'like': np.zeros(1, np.float64)}, [('y', D)], opset=15)
case('castlike_f2i8', [node('CastLike', ['x', 'like'])], {'x': randn(3, 4) * 20}, {'like': np.zeros(1, np.int8)}, [('y', TensorProto.INT8)], opset=15)


# ---- losses and smaller ops ---------------------------------------------
NP2ONNX[np.uint8] = TensorProto.UINT8
logp = lambda *s: np.log(np.abs(randn(*s)) + 0.1)
case('nllloss_weight_ii', [node('NegativeLogLikelihoodLoss', ['x', 't', 'w'], ignore_index=1)],
     {'x': logp(3, 4, 2), 't': np.array([[0, 1], [3, 2], [1, 1]], np.int64)}, {'w': np.abs(randn(4)) + 0.2})
case('nllloss_none', [node('NegativeLogLikelihoodLoss', ['x', 't'], reduction='none')],
     {'x': logp(4, 5), 't': np.array([4, 0, 2, 2], np.int64)})
case('nllloss_sum_negative_ii', [node('NegativeLogLikelihoodLoss', ['x', 't'], reduction='sum', ignore_index=-1)],
     {'x': logp(2, 3, 2, 2), 't': np.array([[[0, -1], [2, 1]], [[-1, -1], [1, 0]]], np.int64)})
case('sce_sum_log_prob', [node('SoftmaxCrossEntropyLoss', ['x', 't'], ['y', 'lp'], reduction='sum', ignore_index=-1)],
     {'x': randn(2, 3, 4), 't': np.array([[0, 2, -1, 1], [1, 1, 0, -1]], np.int64)}, outputs=[('y', F), ('lp', F)])
case('sce_mean_weight', [node('SoftmaxCrossEntropyLoss', ['x', 't', 'w'])],
     {'x': randn(5, 3), 't': np.array([2, 0, 1, 1, 2], np.int64)}, {'w': np.abs(randn(3)) + 0.2})
case('argmin', [node('ArgMin', ['x'], axis=1)], {'x': randn(2, 3, 4)}, outputs=[('y', I64)])
case('argmin_last_nokeep', [node('ArgMin', ['x'], axis=-1, keepdims=0, select_last_index=1)], {'x': np.round(randn(3, 6))}, outputs=[('y', I64)])
case('nonzero', [node('NonZero', ['x'])], {}, {'x': np.round(randn(3, 4))}, [('y', I64)])
case('compress_axis', [node('Compress', ['x', 'c'], axis=1)], {'x': randn(2, 4, 3)}, {'c': np.array([True, False, True], np.bool_)})
case('compress_flat', [node('Compress', ['x', 'c'])], {'x': randn(2, 3)}, {'c': np.array([False, True, True, False, True], np.bool_)})
case('unique_sorted', [node('Unique', ['x'], ['y', 'i', 'v', 'n'])], {}, {'x': np.round(randn(8))},
     [('y', F), ('i', I64), ('v', I64), ('n', I64)])
case('unique_axis_unsorted', [node('Unique', ['x'], ['y', 'i', 'v', 'n'], axis=-1, sorted=0)], {},
     {'x': np.array([[2, 1, 2, 0, 1], [3, 0, 3, 0, 0]], np.int64)}, [('y', I64), ('i', I64), ('v', I64), ('n', I64)])
case('det', [node('Det', ['x'])], {'x': randn(2, 3, 3)})
case('det_4x4', [node('Det', ['x'])], {'x': randn(4, 4)})
case('bitshift_left', [node('BitShift', ['x', 's'], direction='LEFT')],
     {'x': np.array([16, 4, 1, 255], np.uint8), 's': np.array([1, 2, 7, 1], np.uint8)}, outputs=[('y', TensorProto.UINT8)])
case('bitshift_right', [node('BitShift', ['x', 's'], direction='RIGHT')],
     {'x': np.array([16, 4, 1, 255], np.uint8), 's': np.array([1, 2, 0, 7], np.uint8)}, outputs=[('y', TensorProto.UINT8)])
case('maxunpool', [node('MaxUnpool', ['x', 'i'], kernel_shape=[2, 2], strides=[2, 2])],
     {'x': randn(1, 2, 2, 2), 'i': np.array([[[[0, 3], [9, 14]], [[17, 18], [28, 31]]]], np.int64)})
case('maxunpool_output_shape', [node('MaxUnpool', ['x', 'i', 's'], kernel_shape=[2, 2], strides=[2, 2])],
     {'x': randn(1, 1, 2, 2), 'i': np.array([[[[0, 3], [1, 2]]]], np.int64)}, {'s': ints(1, 1, 5, 5)})


# ---- Resize: cubic, tf_crop_and_resize ----------------------------------
f32 = lambda *v: np.array(v, np.float32)
case('resize_cubic_up', [node('Resize', ['x', '', 's'], mode='cubic')], {'x': randn(1, 2, 4, 5)}, {'s': f32(1, 1, 2, 1.5)}, opset=13)
case('resize_cubic_down_exclude', [node('Resize', ['x', '', 's'], mode='cubic', cubic_coeff_a=-0.5, exclude_outside=1)],
     {'x': randn(1, 1, 6, 5)}, {'s': f32(1, 1, 0.5, 0.6)}, opset=13)
case('resize_cubic_sizes_align', [node('Resize', ['x', '', '', 'n'], mode='cubic', coordinate_transformation_mode='align_corners')],
     {'x': randn(2, 1, 3, 4)}, {'n': ints(2, 1, 7, 3)}, opset=13)
case('resize_cubic_asymmetric', [node('Resize', ['x', '', 's'], mode='cubic', coordinate_transformation_mode='asymmetric')],
     {'x': randn(1, 1, 3, 3)}, {'s': f32(1, 1, 3, 2)}, opset=13)
case('resize_crop_linear', [node('Resize', ['x', 'r', '', 'n'], mode='linear', coordinate_transformation_mode='tf_crop_and_resize', extrapolation_value=10.0)],
     {'x': randn(1, 1, 4, 4)}, {'r': f32(0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7), 'n': ints(1, 1, 3, 3)}, opset=13)
case('resize_crop_nearest', [node('Resize', ['x', 'r', '', 'n'], mode='nearest', coordinate_transformation_mode='tf_crop_and_resize')],
     {'x': randn(1, 2, 5, 4)}, {'r': f32(0, 0, -0.2, 0.1, 1, 1, 0.9, 1.3), 'n': ints(1, 2, 4, 6)}, opset=13)


# ---- scatters with a reduction -----------------------------------------
case('scatternd_add', [node('ScatterND', ['x', 'i', 'u'], reduction='add')], {'x': randn(4, 3), 'u': randn(3, 3)},
     {'i': np.array([[1], [3], [1]], np.int64)}, opset=16)
case('scatternd_mul', [node('ScatterND', ['x', 'i', 'u'], reduction='mul')], {'x': randn(4, 3), 'u': randn(3)},
     {'i': np.array([[0, 1], [2, 2], [0, 1]], np.int64)}, opset=16)
case('scatterelements_add', [node('ScatterElements', ['x', 'i', 'u'], axis=1, reduction='add')], {'x': randn(2, 4), 'u': randn(2, 3)},
     {'i': np.array([[1, 1, 3], [0, -4, 2]], np.int64)}, opset=16)
case('scatterelements_max', [node('ScatterElements', ['x', 'i', 'u'], reduction='max')], {'x': randn(3, 2), 'u': randn(3, 2)},
     {'i': np.array([[0, 2], [0, 2], [1, 2]], np.int64)}, opset=18)
case('scatternd_min', [node('ScatterND', ['x', 'i', 'u'], reduction='min')], {'x': randn(3, 2), 'u': randn(3, 2)},
     {'i': np.array([[2], [0], [2]], np.int64)}, opset=18)


# ---- MaxPool's Indices -------------------------------------------------
mp_out = [('y', F), ('i', I64)]
case('maxpool_indices', [node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {'x': randn(2, 3, 6, 7)}, outputs=mp_out)
case('maxpool_indices_colmajor', [node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[2, 3], storage_order=1)], {'x': randn(1, 2, 4, 5)}, outputs=mp_out)
case('maxpool_indices_ceil_dil', [node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 1], ceil_mode=1)], {'x': randn(1, 2, 7, 6)}, outputs=mp_out)
case('maxpool_indices_1d', [node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[3], strides=[2], pads=[1, 0])], {'x': randn(2, 2, 8)}, outputs=mp_out)


# ---- BatchNormalization in training mode ---------------------------------
bn_out = [('y', F), ('rm', F), ('rv', F)]
case('batchnorm_training', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y', 'rm', 'rv'], training_mode=1, momentum=0.8, epsilon=1e-3)],
     {'x': randn(4, 3, 2, 5)}, bn, outputs=bn_out, opset=15)
case('batchnorm_training_3d', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y', 'rm', 'rv'], training_mode=1)],
     {'x': randn(5, 3, 4)}, bn, outputs=bn_out, opset=15)


# ---- Einsum with diagonals -----------------------------------------------
case('einsum_trace', [node('Einsum', ['x'], equation='ii')], {'x': randn(4, 4)})
case('einsum_batch_diagonal', [node('Einsum', ['x'], equation='...ii->...i')], {'x': randn(2, 3, 3)})
case('einsum_diag_product', [node('Einsum', ['a', 'b'], equation='iji,jk->ik')], {'a': randn(3, 2, 3), 'b': randn(2, 4)})


# ---- 3-D ConvTranspose ---------------------------------------------------
case('convtranspose3d', [node('ConvTranspose', ['x', 'w', 'b'])], {'x': randn(1, 2, 3, 4, 3)}, {'w': randn(2, 3, 2, 3, 2), 'b': randn(3)})
case('convtranspose3d_strided', [node('ConvTranspose', ['x', 'w'], strides=[2, 1, 3], pads=[1, 0, 1, 0, 1, 2], dilations=[2, 1, 1], output_padding=[1, 0, 2], group=2)],
     {'x': randn(2, 4, 3, 3, 2)}, {'w': randn(4, 1, 3, 2, 3)})


# ---- random draws, at the parameters that make them certain ------------
# ONNX Runtime's Bernoulli gives 1 with probability 1 - p (it compares the
# uniform draw with Greater, as ONNX's function body of the op does), where
# the operator's definition and ONNX's reference give 1 with probability p:
# the fixture reads only what both agree on, the dtype and shape of a draw
# and the count of ones of one with as many certain ones as certain zeros.
case('bernoulli_certain', [node('Bernoulli', ['x'], ['b'], dtype=D), node('Shape', ['b'], ['y1']), node('ReduceSum', ['b'], ['y2'], keepdims=0)],
     {'x': np.array([[0, 1, 1], [0, 1, 0]], np.float32)}, outputs=[('y1', I64), ('y2', D)], opset=15)
case('randomuniformlike_point', [node('RandomUniformLike', ['x'], low=2.5, high=2.5, seed=3.0)], {'x': randn(2, 3)})
# ---- sequences and optionals (their boundaries are tensors) -----------
def scalar64(v):
    return np.array(v, dtype=np.int64)


case('seq_construct_at', [node('SequenceConstruct', ['a', 'b', 'c'], ['s']), node('SequenceAt', ['s', 'p'])],
     {'a': randn(2, 3), 'b': randn(4, 3), 'c': randn(1, 3)}, {'p': scalar64(-2)})
case('seq_insert_erase', [node('SequenceEmpty', [], ['s0'], dtype=F), node('SequenceInsert', ['s0', 'a'], ['s1']),
                          node('SequenceInsert', ['s1', 'b', 'p0'], ['s2']), node('SequenceInsert', ['s2', 'c'], ['s3']),
                          node('SequenceErase', ['s3', 'pm1'], ['s4']), node('SequenceLength', ['s4'], ['n']),
                          node('SequenceAt', ['s4', 'p0'])],
     {'a': randn(2, 3), 'b': randn(3, 3), 'c': randn(1, 3)}, {'p0': scalar64(0), 'pm1': scalar64(-1)}, [('y', F), ('n', I64)])
case('split_to_seq_sizes', [node('SplitToSequence', ['x', 'sp'], ['s'], axis=1), node('SequenceAt', ['s', 'p'], ['y2']),
                            node('ConcatFromSequence', ['s'], axis=1)],
     {'x': randn(2, 4, 3)}, {'sp': ints(1, 3), 'p': scalar64(1)}, [('y', F), ('y2', F)])
case('split_to_seq_stack', [node('SplitToSequence', ['x'], ['s'], axis=0, keepdims=0),
                            node('ConcatFromSequence', ['s'], axis=-1, new_axis=1)], {'x': randn(3, 2, 4)})
case('split_to_seq_scalar', [node('SplitToSequence', ['x', 'k'], ['s'], axis=1), node('SequenceLength', ['s'], ['n']),
                             node('SequenceAt', ['s', 'p'])],
     {'x': randn(2, 5)}, {'k': scalar64(2), 'p': scalar64(-1)}, [('y', F), ('n', I64)])
case('optional_get', [node('Optional', ['x'], ['o']), node('OptionalHasElement', ['o'], ['h']),
                      node('OptionalGetElement', ['o'])], {'x': randn(2, 3)}, outputs=[('y', F), ('h', B)], opset=15)


# ---- Det by elimination --------------------------------------------------
sing = randn(5, 5)
sing[3] = 2 * sing[1]
case('det_singular', [node('Det', ['x'])], {}, {'x': sing})
case('det_batch_6x6', [node('Det', ['x'])], {'x': randn(2, 3, 6, 6)})


# ---- Resize: more combinations of mode and coordinate mode -------------
for i, (mode, ctm, extra) in enumerate([
        ('cubic', 'pytorch_half_pixel', {}), ('cubic', 'tf_half_pixel_for_nn', {}),
        ('cubic', 'half_pixel', {'exclude_outside': 1}), ('nearest', 'tf_crop_and_resize', {'nearest_mode': 'ceil'}),
        ('nearest', 'tf_crop_and_resize', {'nearest_mode': 'round_prefer_ceil'}), ('linear', 'tf_crop_and_resize', {}),
        ('cubic', 'tf_crop_and_resize', {'extrapolation_value': -1.0})]):
    ins = ['x', 'r', '', 'n'] if ctm == 'tf_crop_and_resize' else ['x', '', '', 'n']
    inits = {'n': ints(1, 2, 5, 3)}
    if ctm == 'tf_crop_and_resize':
        inits['r'] = f32(0, 0, 0.1, -0.3, 1, 1, 0.8, 1.1)
    case('resize_combo_%d' % i, [node('Resize', ins, mode=mode, coordinate_transformation_mode=ctm, **extra)],
         {'x': randn(1, 2, 4, 6)}, inits, opset=13)


def main():
    only = set(sys.argv[1:])
    for name, nodes, inputs, inits, outputs, opset in CASES:
        if only and name not in only:
            continue
        d = os.path.join(HERE, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        m = build(name, nodes, inputs, inits, outputs, opset)
        path = os.path.join(d, 'model.onnx')
        with open(path, 'wb') as f:
            f.write(m.SerializeToString())
        args = ['node', ORTRUN, path, os.path.join(d, 'out')]
        for k, v in inputs.items():
            np.save(os.path.join(d, k + '.npy'), v)
            args.append('%s=%s' % (k, os.path.join(d, k + '.npy')))
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('%s: ONNX Runtime failed:\n%s' % (name, r.stderr))
    print('%d cases' % len(CASES))


if __name__ == '__main__':
    main()
