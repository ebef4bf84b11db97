#!/usr/bin/python3
"""Exports PyTorch's recurrent layers to ONNX, with inputs and PyTorch's
outputs, as fixtures for spore's RNN, GRU and LSTM ops.

Run from anywhere with /usr/bin/python3 (Debian's python3-torch 1.13 and
python3-onnx 1.12):

    /usr/bin/python3 onnx/testdata/rnn/gen.py

It writes into its own directory, for each model M, M.onnx, its inputs
M_in0.npy, M_in1.npy, ... and PyTorch's outputs M_out0.npy, ..., and
manifest.json, in the format of ../torch/manifest.json (see
make_fixtures.py there). The models, each 2 layers and bidirectional:

    lstm         nn.LSTM, batch_first, with initial states h0 and c0;
                 outputs y, h_n and c_n
    gru          nn.GRU, batch_first, with an initial state
    rnn_tanh     nn.RNN (tanh), sequence-first, zero initial state
    rnn_relu     nn.RNN (relu), batch_first
    lstm_packed  nn.LSTM over a packed batch (pack_padded_sequence with
                 lengths 5, 3, 2, pad_packed_sequence after): the exporter
                 passes the lengths to each LSTM node as sequence_lens
    gru_packed   the same with nn.GRU
    rnn_packed   the same with nn.RNN (tanh)
    lstm_dynbatch  nn.LSTM exported with a dynamic batch axis, run at batch 3
                 and (case lstm_dynbatch_b5) at batch 5

The sizes are small (input 3, hidden 4, sequence 5, batch 3) so that each
fixture is a few KB. Seeds are fixed, so rerunning gives the same weights and
inputs; PyTorch's outputs may differ in the last bits between machines.
"""
import json
import os

import numpy as np
import onnx
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
IN, HID, SEQ, BATCH, LAYERS = 3, 4, 5, 3, 2


def path(name):
    return os.path.join(HERE, name)


def save_npy(name, a):
    """Saves an array in C order, atomically."""
    tmp = path(name + ".tmp")
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(a), allow_pickle=False)
    os.replace(tmp, path(name))


class Plain(nn.Module):
    """A recurrent layer returning its output and final state(s) flat."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *state):
        if isinstance(self.rnn, nn.LSTM):
            y, (h, c) = self.rnn(x, tuple(state) if state else None)
            return y, h, c
        y, h = self.rnn(x, state[0] if state else None)
        return y, h


class Packed(nn.Module):
    """A recurrent layer over a padded batch of sequences of the given
    lengths (sorted longest first), packed before and padded after."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, lengths):
        p = pack_padded_sequence(x, lengths, batch_first=self.rnn.batch_first)
        if isinstance(self.rnn, nn.LSTM):
            out, (h, c) = self.rnn(p)
        else:
            out, h = self.rnn(p)
        y, _ = pad_packed_sequence(out, batch_first=self.rnn.batch_first, total_length=SEQ)
        if isinstance(self.rnn, nn.LSTM):
            return y, h, c
        return y, h


def make(kind, seed, **kw):
    torch.manual_seed(seed)
    cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
    return cls(IN, HID, num_layers=LAYERS, bidirectional=True, **kw).eval()


def main():
    cases = []

    def add(name, model, inputs, input_names, note, dynamic_axes=None, model_name=None):
        output_names = ["y", "h_n", "c_n"] if isinstance(model.rnn, nn.LSTM) else ["y", "h_n"]
        model_name = model_name or name
        if model_name == name:
            tmp = path(name + ".onnx.tmp")
            torch.onnx.export(model, tuple(inputs), tmp, input_names=input_names,
                              output_names=output_names, opset_version=OPSET,
                              do_constant_folding=True, dynamic_axes=dynamic_axes)
            onnx.checker.check_model(onnx.load(tmp))
            os.replace(tmp, path(name + ".onnx"))
        m = onnx.load(path(model_name + ".onnx"))
        ops = sorted({n.op_type for n in m.graph.node})
        with torch.no_grad():
            outs = model(*inputs)
        in_files, out_files = {}, {}
        for i, (n, x) in enumerate(zip(input_names, inputs)):
            f = "%s_in%d.npy" % (name, i)
            save_npy(f, x.numpy())
            in_files[n] = f
        for i, (n, y) in enumerate(zip(output_names, outs)):
            f = "%s_out%d.npy" % (name, i)
            save_npy(f, y.numpy())
            out_files[n] = f
        cases.append({"name": name, "model": model_name + ".onnx", "inputs": in_files,
                      "outputs": out_files, "note": note + "; ops " + ", ".join(ops)})

    g = torch.Generator().manual_seed(100)

    def randn(*shape):
        return torch.randn(*shape, generator=g)

    states = (LAYERS * 2, BATCH, HID)
    add("lstm", Plain(make("lstm", 1, batch_first=True)),
        [randn(BATCH, SEQ, IN), randn(*states), randn(*states)], ["x", "h0", "c0"],
        "nn.LSTM, 2 layers, bidirectional, batch_first, initial states")
    add("gru", Plain(make("gru", 2, batch_first=True)),
        [randn(BATCH, SEQ, IN), randn(*states)], ["x", "h0"],
        "nn.GRU, 2 layers, bidirectional, batch_first, initial state")
    add("rnn_tanh", Plain(make("rnn", 3)), [randn(SEQ, BATCH, IN)], ["x"],
        "nn.RNN tanh, 2 layers, bidirectional, sequence-first")
    add("rnn_relu", Plain(make("rnn", 4, nonlinearity="relu", batch_first=True)),
        [randn(BATCH, SEQ, IN)], ["x"], "nn.RNN relu, 2 layers, bidirectional, batch_first")
    # A dynamic batch: one model, run at the batch it was exported with
    # and at another.
    dyn = Plain(make("lstm", 8, batch_first=True))
    axes = {"x": {0: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"},
            "y": {0: "batch"}, "h_n": {1: "batch"}, "c_n": {1: "batch"}}
    for name, b in (("lstm_dynbatch", BATCH), ("lstm_dynbatch_b5", 5)):
        st = (LAYERS * 2, b, HID)
        add(name, dyn, [randn(b, SEQ, IN), randn(*st), randn(*st)], ["x", "h0", "c0"],
            "nn.LSTM with a dynamic batch, at batch %d" % b, dynamic_axes=axes,
            model_name="lstm_dynbatch")
    lengths = torch.tensor([5, 3, 2], dtype=torch.int64)
    for kind, seed in (("lstm", 5), ("gru", 6), ("rnn", 7)):
        add(kind + "_packed", Packed(make(kind, seed, batch_first=True)),
            [randn(BATCH, SEQ, IN), lengths], ["x", "lengths"],
            "nn.%s over a packed batch, lengths 5, 3, 2" % kind.upper())

    tmp = path("manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"opset": OPSET, "torch": torch.__version__, "onnx": onnx.__version__,
                   "cases": cases}, f, indent=1)
        f.write("\n")
    os.replace(tmp, path("manifest.json"))


if __name__ == "__main__":
    main()
