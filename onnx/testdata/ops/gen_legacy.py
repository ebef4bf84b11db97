#!/usr/bin/python3
"""Writes the fixtures of the op forms of opsets 7 to 10 (ops_legacy.go,
and the ops whose registrations begin before opset 11) as gen.py writes
the others, with ONNX Runtime's outputs as the expected values.

Usage (from the repository root), as for gen.py:

    NODE_PATH=DIR/node_modules /usr/bin/python3 onnx/testdata/ops/gen_legacy.py [CASE ...]

ONNX Runtime has no kernels for most ops before opset 7, so the forms of
opsets 1 to 6 (legacy broadcasting, Cast's to as a string, ...) are
tested in ops_legacy_test.go against the newer forms instead.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

gen.CASES.clear()
case, node, ints = gen.case, gen.node, gen.ints
rng = np.random.default_rng(29)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f32(*v):
    return np.array(v, np.float32)


# ---- attributes that became inputs -------------------------------------
case('legacy_slice9', [node('Slice', ['x'], starts=[1, 0], ends=[3, -1], axes=[2, 0])], {'x': randn(3, 4, 5)}, opset=9)
case('legacy_slice1_noaxes', [node('Slice', ['x'], starts=[0, 1], ends=[2, 1000])], {'x': randn(3, 4)}, opset=7)
case('legacy_pad10_constant', [node('Pad', ['x'], pads=[0, 1, 2, 0, 2, 1], value=1.5)], {'x': randn(2, 3, 4)}, opset=10)
case('legacy_pad10_reflect', [node('Pad', ['x'], pads=[0, 0, 1, 2, 0, 0, 2, 1], mode='reflect')], {'x': randn(1, 2, 4, 4)}, opset=10)
case('legacy_pad7_edge', [node('Pad', ['x'], pads=[0, 2, 1, 0], mode='edge')], {'x': randn(3, 4)}, opset=7)
case('legacy_topk9', [node('TopK', ['x'], ['v', 'i'], k=3, axis=1)], {'x': randn(2, 5, 3)}, outputs=[('v', F), ('i', I64)], opset=9)
case('legacy_topk10', [node('TopK', ['x', 'k'], ['v', 'i'])], {'x': randn(3, 6)}, {'k': ints(2)}, outputs=[('v', F), ('i', I64)], opset=10)
case('legacy_clip10', [node('Clip', ['x'], min=-0.5, max=0.75)], {'x': randn(3, 4)}, opset=10)
case('legacy_clip6_max', [node('Clip', ['x'], max=0.25)], {'x': randn(3, 4)}, opset=6)
case('legacy_split2', [node('Split', ['x'], ['a', 'b'], axis=2, split=[1, 3])], {'x': randn(2, 3, 4)}, outputs=[('a', F), ('b', F)], opset=7)
case('legacy_squeeze9', [node('Squeeze', ['x'], axes=[1, 3])], {'x': randn(2, 1, 3, 1)}, opset=9)
case('legacy_unsqueeze9', [node('Unsqueeze', ['x'], axes=[0, 3])], {'x': randn(2, 3)}, opset=9)
case('legacy_reducesum9', [node('ReduceSum', ['x'], axes=[0, 2], keepdims=0)], {'x': randn(2, 3, 4)}, opset=9)
case('legacy_reducemean10', [node('ReduceMean', ['x'], axes=[1])], {'x': randn(2, 3, 4)}, opset=10)
case('legacy_reducemax7_all', [node('ReduceMax', ['x'], keepdims=0)], {'x': randn(2, 3, 4)}, opset=7)
case('legacy_reshape5', [node('Reshape', ['x', 's'])], {'x': randn(2, 3, 4)}, {'s': ints(4, 0, -1)}, opset=5)

# ---- Upsample and Resize at opset 10 -----------------------------------
case('legacy_upsample7_nearest', [node('Upsample', ['x'], scales=[1.0, 1.0, 2.0, 3.0])], {'x': randn(1, 2, 2, 3)}, opset=7)
case('legacy_upsample7_linear', [node('Upsample', ['x'], scales=[1.0, 1.0, 2.0, 2.0], mode='linear')], {'x': randn(1, 1, 3, 3)}, opset=7)
case('legacy_upsample9_nearest', [node('Upsample', ['x', 's'])], {'x': randn(1, 2, 3, 2)}, {'s': f32(1, 1, 2, 1.5)}, opset=9)
case('legacy_upsample9_constant', [helper.make_node('Constant', [], ['s'], value=helper.make_tensor('s', F, [4], [1, 1, 3, 2])),
                                   node('Upsample', ['x', 's'])], {'x': randn(1, 1, 2, 2)}, opset=9)
case('legacy_resize10_nearest_down', [node('Resize', ['x', 's'])], {'x': randn(1, 1, 4, 5)}, {'s': f32(1, 1, 0.6, 0.6)}, opset=10)
case('legacy_resize10_nearest_up', [node('Resize', ['x', 's'])], {'x': randn(1, 2, 2, 3)}, {'s': f32(1, 1, 2.5, 1.5)}, opset=10)
case('legacy_resize10_nearest_mixed', [node('Resize', ['x', 's'])], {'x': randn(1, 1, 4, 3)}, {'s': f32(1, 1, 0.5, 2)}, opset=10)
case('legacy_resize10_linear_up', [node('Resize', ['x', 's'], mode='linear')], {'x': randn(1, 1, 3, 4)}, {'s': f32(1, 1, 2, 1.5)}, opset=10)
case('legacy_resize10_linear_down', [node('Resize', ['x', 's'], mode='linear')], {'x': randn(1, 1, 6, 4)}, {'s': f32(1, 1, 0.5, 0.75)}, opset=10)

# ---- other older forms -------------------------------------------------
case('legacy_scatter9', [node('Scatter', ['x', 'i', 'u'], axis=1)], {'x': randn(3, 4), 'u': randn(3, 2)},
     {'i': np.array([[1, 3], [0, 2], [3, 0]], np.int64)}, opset=9)
case('legacy_imagescaler8', [node('ImageScaler', ['x'], scale=0.5, bias=[1.0, -2.0, 0.25])], {'x': randn(2, 3, 2, 2)}, opset=8)
case('legacy_dropout9_mask', [node('Dropout', ['x'], ['y', 'm'], ratio=0.3)], {'x': randn(3, 4)}, outputs=[('y', F), ('m', F)], opset=9)
case('legacy_dropout10_mask', [node('Dropout', ['x'], ['y', 'm'], ratio=0.3)], {'x': randn(3, 4)}, outputs=[('y', F), ('m', B)], opset=10)
bn = {'s': randn(3), 'b': randn(3), 'm': randn(3), 'v': np.abs(randn(3)) + 0.5}
case('legacy_batchnorm7', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], epsilon=1e-3)], {'x': randn(2, 3, 4)}, bn, opset=7)
bna = {'s': randn(3, 2), 'b': randn(3, 2), 'm': randn(3, 2), 'v': np.abs(randn(3, 2)) + 0.5}
case('legacy_batchnorm7_spatial0', [node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], spatial=0)], {'x': randn(2, 3, 2)}, bna, opset=7)
case('legacy_hardmax11', [node('Hardmax', ['x'])], {'x': randn(2, 3, 4)}, opset=11)
case('legacy_hardmax9_axis2', [node('Hardmax', ['x'], axis=2)], {'x': randn(2, 3, 2, 2)}, opset=9)
case('legacy_softmax9', [node('Softmax', ['x'])], {'x': randn(2, 3, 4)}, opset=9)
case('legacy_logsoftmax10_axis2', [node('LogSoftmax', ['x'], axis=2)], {'x': randn(2, 3, 2, 2)}, opset=10)
case('legacy_cast6', [node('Cast', ['x'], to=TensorProto.DOUBLE)], {'x': randn(3, 4)}, outputs=[('y', TensorProto.DOUBLE)], opset=6)
case('legacy_gemm7', [node('Gemm', ['a', 'w', 'c'], transB=1, alpha=0.5)], {'a': randn(2, 3)}, {'w': randn(4, 3), 'c': randn(4)}, opset=7)
case('legacy_prelu7', [node('PRelu', ['x', 's'])], {'x': randn(2, 3, 2, 2)}, {'s': randn(3, 1, 1)}, opset=7)
case('legacy_tile6', [node('Tile', ['x', 'r'])], {'x': randn(2, 3)}, {'r': ints(2, 1)}, opset=6)
case('legacy_concat4', [node('Concat', ['a', 'b'], axis=1)], {'a': randn(2, 3), 'b': randn(2, 2)}, opset=4)
case('legacy_maxpool8', [node('MaxPool', ['x'], kernel_shape=[2, 2], strides=[2, 2])], {'x': randn(1, 2, 4, 4)}, opset=8)
case('legacy_avgpool7_include_pad', [node('AveragePool', ['x'], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
     {'x': randn(1, 1, 4, 4)}, opset=7)
case('legacy_selu6', [node('Selu', ['x'])], {'x': randn(3, 4)}, opset=6)
case('legacy_leakyrelu6', [node('LeakyRelu', ['x'], alpha=0.2)], {'x': randn(3, 4)}, opset=6)
case('legacy_flatten8', [node('Flatten', ['x'], axis=2)], {'x': randn(2, 3, 4)}, opset=8)
case('legacy_add7_bcast', [node('Add', ['a', 'b'])], {'a': randn(2, 3, 4), 'b': randn(3, 1)}, opset=7)
case('legacy_sum6', [node('Sum', ['a', 'b', 'c'])], {'a': randn(2, 3), 'b': randn(2, 3), 'c': randn(2, 3)}, opset=6)
case('legacy_max8_bcast', [node('Max', ['a', 'b'])], {'a': randn(2, 3), 'b': randn(3)}, opset=8)
case('legacy_instancenorm6', [node('InstanceNormalization', ['x', 's', 'b'])], {'x': randn(2, 3, 4)}, {'s': randn(3), 'b': randn(3)}, opset=6)
case('legacy_erf9', [node('Erf', ['x'])], {'x': randn(3, 4)}, opset=9)
case('legacy_mvn9', [node('MeanVarianceNormalization', ['x'])], {'x': randn(2, 3, 2, 2)}, opset=9)
case('legacy_onehot9', [node('OneHot', ['i', 'd', 'v'])], {}, {'i': ints(0, 2, 1), 'd': ints(4), 'v': f32(-1, 3)}, opset=9)
case('legacy_thresholdedrelu10', [node('ThresholdedRelu', ['x'], alpha=0.5)], {'x': randn(3, 4)}, opset=10)

# Scan at opset 8: a running sum over the second axis of each batch item,
# the second scan input read backwards. A sub-graph needs the loader, so
# this case goes to ../legacy (TestLegacyFixturesThroughLoad), not to
# the op fixtures that ops_test.go runs node by node.
body = helper.make_graph(
    [node('Add', ['s_in', 'x_in'], ['s_mid']), node('Add', ['s_mid', 'r_in'], ['s_out']), node('Identity', ['s_out'], ['y_out'])],
    'body',
    [helper.make_tensor_value_info(n, F, [2]) for n in ['s_in', 'x_in', 'r_in']],
    [helper.make_tensor_value_info(n, F, [2]) for n in ['s_out', 'y_out']])
LOADER_CASES = [
    ('scan8', [node('Scan', ['', 'init', 'xs', 'rs'], ['final', 'ys'], body=body, num_scan_inputs=2, directions=[0, 1])],
     {'init': randn(2, 2), 'xs': randn(2, 3, 2), 'rs': randn(2, 3, 2)}, {}, [('final', F), ('ys', F)], 8),
]


def main():
    gen.main()
    only = set(sys.argv[1:])
    for name, nodes, inputs, inits, outputs, opset in LOADER_CASES:
        if only and name not in only:
            continue
        d = os.path.join(gen.HERE, '..', 'legacy', name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        path = os.path.join(d, 'model.onnx')
        with open(path, 'wb') as f:
            f.write(gen.build(name, nodes, inputs, inits, outputs, opset).SerializeToString())
        args = ['node', gen.ORTRUN, path, os.path.join(d, 'out')]
        for k, v in inputs.items():
            np.save(os.path.join(d, k + '.npy'), v)
            args.append('%s=%s' % (k, os.path.join(d, k + '.npy')))
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('%s: ONNX Runtime failed:\n%s' % (name, r.stderr))
    print('%d loader cases' % len(LOADER_CASES))


if __name__ == '__main__':
    main()
