#!/usr/bin/python3
"""Writes one small RNN, GRU or LSTM model per case, with random inputs, and
asks ONNX Runtime for the expected outputs: the fixtures of ops_rnn_test.go
for the parts of the ONNX semantics that PyTorch's exporter never writes
(activations with alpha and beta, clip, peepholes, GRU without
linear_before_reset, input_forget, layout 1, the reverse direction with
sequence_lens, the opsets before 14).

Usage (from the repository root):

    NODE_PATH=DIR/node_modules /usr/bin/python3 onnx/testdata/rnn/ortcases.py

where DIR/node_modules holds onnxruntime-node. Each case is a directory
onnx/testdata/rnn/ort/CASE holding model.onnx, one NAME.npy per graph input
and out/NAME.npy per graph output (written by ../../ortrun.js), the layout of
onnx/testdata/ops. The weights are initializers, as exporters write them;
X, sequence_lens and the initial states are graph inputs in most cases, so
that Graph mode traces them.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'ort')
ORTRUN = os.path.join(HERE, '..', 'ortrun.js')
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
           np.int64: TensorProto.INT64, np.int32: TensorProto.INT32}
GATES = {'RNN': 1, 'GRU': 3, 'LSTM': 4}
rng = np.random.default_rng(23)
CASES = []

T, B, I, H = 4, 3, 2, 3


def randn(*shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def case(name, op, attrs, inputs, opset=14, outputs=('Y', 'Y_h'), graph_inputs=('X',),
         seq_lens=None, layout=0):
    """One node of op with attrs. inputs lists which optional inputs to
    give (B, sequence_lens, initial_h, initial_c, P); graph_inputs names the
    ones that are graph inputs rather than initializers."""
    dirs = 2 if attrs.get('direction') == 'bidirectional' else 1
    g = GATES[op]
    vals = {
        'X': randn(T, B, I),
        'W': randn(dirs, g * H, I, scale=0.6),
        'R': randn(dirs, g * H, H, scale=0.6),
    }
    if 'B' in inputs:
        vals['B'] = randn(dirs, 2 * g * H, scale=0.5)
    if 'sequence_lens' in inputs:
        vals['sequence_lens'] = np.array(seq_lens, np.int32)
    for s in ('initial_h', 'initial_c'):
        if s in inputs:
            vals[s] = randn(dirs, B, H)
    if 'P' in inputs:
        vals['P'] = randn(dirs, 3 * H, scale=0.5)
    order = ['X', 'W', 'R', 'B', 'sequence_lens', 'initial_h', 'initial_c', 'P'][:8 if op == 'LSTM' else 6]
    names = [k if k in vals else '' for k in order]
    while names and names[-1] == '':
        names.pop()
    outs = list(outputs)
    n = helper.make_node(op, names, outs, hidden_size=H, **attrs)
    CASES.append((name, n, vals, set(graph_inputs), [o for o in outs if o], opset, layout))


def to_layout1(name, v):
    """The layout-1 form of a layout-0 input or output."""
    if name == 'X':
        return np.ascontiguousarray(v.transpose(1, 0, 2))
    if name == 'Y':
        return np.ascontiguousarray(v.transpose(2, 0, 1, 3))
    if name in ('initial_h', 'initial_c', 'Y_h', 'Y_c'):
        return np.ascontiguousarray(v.transpose(1, 0, 2))
    return v


def build(name, n, vals, graph_inputs, outs, opset):
    vi = [helper.make_tensor_value_info(k, NP2ONNX[v.dtype.type], list(v.shape))
          for k, v in vals.items() if k in graph_inputs]
    inis = [numpy_helper.from_array(v, k) for k, v in vals.items() if k not in graph_inputs]
    ov = [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in outs]
    g = helper.make_graph([n], name, vi, ov, inis)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], producer_name='spore-rnn-gen')
    m.ir_version = 8 if opset >= 14 else 7 if opset >= 11 else 3
    return m


LENS = [4, 2, 3]
ALL = ('X', 'sequence_lens', 'initial_h', 'initial_c')

# ---- RNN ---------------------------------------------------------------
case('rnn_relu_clip', 'RNN', dict(activations=['Relu'], clip=0.8), ['B'])
case('rnn_bidir_lens', 'RNN', dict(direction='bidirectional', activations=['Tanh', 'Affine'],
                                   activation_alpha=[0.7], activation_beta=[0.2]),
     ['B', 'sequence_lens', 'initial_h'], graph_inputs=ALL, seq_lens=LENS)
case('rnn_reverse_layout1_lens', 'RNN', dict(direction='reverse'), ['B', 'sequence_lens', 'initial_h'],
     graph_inputs=ALL, seq_lens=[3, 4, 1], layout=1)
case('rnn_opset7_reverse', 'RNN', dict(direction='reverse', activations=['Softsign']), ['B'], opset=7)
case('rnn_yh_only_lens_init', 'RNN', dict(activations=['LeakyRelu'], activation_alpha=[0.3]),
     ['B', 'sequence_lens'], outputs=('', 'Y_h'), seq_lens=[1, 4, 2])

# ---- GRU ---------------------------------------------------------------
case('gru_lbr0_bidir_lens', 'GRU', dict(direction='bidirectional'), ['B', 'sequence_lens', 'initial_h'],
     graph_inputs=ALL, seq_lens=LENS)
case('gru_lbr1_reverse_clip', 'GRU', dict(direction='reverse', linear_before_reset=1, clip=0.5),
     ['B', 'initial_h'], graph_inputs=ALL)
case('gru_acts_bidir', 'GRU', dict(direction='bidirectional',
                                   activations=['HardSigmoid', 'Softsign', 'Sigmoid', 'ScaledTanh'],
                                   activation_alpha=[0.3, 0.9], activation_beta=[0.4, 1.2]), ['B'])
case('gru_layout1_lbr1_lens', 'GRU', dict(linear_before_reset=1), ['B', 'sequence_lens', 'initial_h'],
     graph_inputs=ALL, seq_lens=[2, 4, 3], layout=1)
case('gru_opset7_lbr1', 'GRU', dict(linear_before_reset=1, activations=['Sigmoid', 'Softplus']), ['B'], opset=7)
case('gru_opset7_lbr0', 'GRU', dict(), ['B', 'initial_h'], opset=7, graph_inputs=ALL)
case('gru_all_weights_inputs', 'GRU', dict(direction='bidirectional', linear_before_reset=1),
     ['B', 'sequence_lens', 'initial_h'], graph_inputs=('X', 'W', 'R', 'B', 'sequence_lens', 'initial_h'),
     seq_lens=LENS)

# ---- LSTM --------------------------------------------------------------
case('lstm_peep_bidir_lens', 'LSTM', dict(direction='bidirectional'),
     ['B', 'sequence_lens', 'initial_h', 'initial_c', 'P'], outputs=('Y', 'Y_h', 'Y_c'),
     graph_inputs=ALL, seq_lens=LENS)
case('lstm_clip_acts', 'LSTM', dict(activations=['Sigmoid', 'Elu', 'Softplus'], activation_alpha=[0.5], clip=1.1),
     ['B'], outputs=('Y', 'Y_h', 'Y_c'))
case('lstm_input_forget', 'LSTM', dict(input_forget=1), ['B', 'initial_h', 'initial_c'],
     outputs=('Y', 'Y_h', 'Y_c'), graph_inputs=ALL)
case('lstm_reverse_layout1_peep_lens', 'LSTM', dict(direction='reverse'),
     ['B', 'sequence_lens', 'initial_h', 'initial_c', 'P'], outputs=('Y', 'Y_h', 'Y_c'),
     graph_inputs=ALL, seq_lens=[1, 3, 4], layout=1)
case('lstm_thresholded_hardsigmoid', 'LSTM', dict(activations=['HardSigmoid', 'ThresholdedRelu', 'Tanh'],
                                                  activation_alpha=[0.25, 0.1], activation_beta=[0.45]),
     ['B'], outputs=('Y', 'Y_h', 'Y_c'))
case('lstm_opset7_bidir', 'LSTM', dict(direction='bidirectional'), ['B', 'initial_h', 'initial_c'],
     outputs=('Y', 'Y_h', 'Y_c'), opset=7, graph_inputs=ALL)
case('lstm_yc_only', 'LSTM', dict(), ['B', 'sequence_lens'], outputs=('', '', 'Y_c'), seq_lens=[3, 1, 2])


def main():
    only = set(sys.argv[1:])
    os.makedirs(OUT, exist_ok=True)
    for name, n, vals, graph_inputs, outs, opset, layout in CASES:
        if only and name not in only:
            continue
        d = os.path.join(OUT, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        # ONNX Runtime does not run layout 1: it runs the layout-0 model,
        # and a layout-1 case stores that model with layout=1 and its
        # inputs and outputs transposed as the attribute specifies.
        m = build(name, n, vals, graph_inputs, outs, opset)
        ort_dir = os.path.join(d, 'ort0') if layout else d
        os.makedirs(ort_dir, exist_ok=True)
        path = os.path.join(ort_dir, 'model.onnx')
        with open(path, 'wb') as f:
            f.write(m.SerializeToString())
        args = ['node', ORTRUN, path, os.path.join(ort_dir, 'out')]
        for k, v in vals.items():
            if k in graph_inputs:
                np.save(os.path.join(ort_dir, k + '.npy'), v)
                args.append('%s=%s' % (k, os.path.join(ort_dir, k + '.npy')))
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('%s: ONNX Runtime failed:\n%s' % (name, r.stderr))
        if layout:
            n1 = helper.make_node(n.op_type, n.input, n.output)
            n1.CopyFrom(n)
            n1.attribute.append(helper.make_attribute('layout', 1))
            vals1 = {k: to_layout1(k, v) for k, v in vals.items()}
            m1 = build(name, n1, vals1, graph_inputs, outs, opset)
            with open(os.path.join(d, 'model.onnx'), 'wb') as f:
                f.write(m1.SerializeToString())
            for k, v in vals1.items():
                if k in graph_inputs:
                    np.save(os.path.join(d, k + '.npy'), v)
            os.makedirs(os.path.join(d, 'out'))
            for o in outs:
                y = np.load(os.path.join(ort_dir, 'out', o + '.npy'))
                np.save(os.path.join(d, 'out', o + '.npy'), to_layout1(o, y))
            shutil.rmtree(ort_dir)
    print('%d cases' % len(CASES))


if __name__ == '__main__':
    main()
