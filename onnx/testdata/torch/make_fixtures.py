#!/usr/bin/python3
"""Exports small PyTorch models to ONNX, with inputs and PyTorch's outputs, as
fixtures for spore's ONNX importer.

Run from anywhere with /usr/bin/python3 (Debian's python3-torch 1.13 and
python3-onnx 1.12):

    /usr/bin/python3 onnx/testdata/torch/make_fixtures.py

It writes into its own directory, for each model M:

    M.onnx       the model, exported in eval mode at opset 17
    M_in.npy     its input (M_in0.npy, M_in1.npy, ... when there are several)
    M_out.npy    PyTorch's output for that input (M_out0.npy, ... when several)

and manifest.json, which lists every case (a model with one set of inputs and
the outputs PyTorch gave), including the second cases of dynbatch (another
batch size) and ifmodel (the other branch). The models:

    mlp       Linear-ReLU-Linear-ReLU-Linear
    cnn       Conv2d+BatchNorm2d+ReLU+MaxPool2d, Conv2d+ReLU, AvgPool2d,
              adaptive average pooling (GlobalAveragePool), Flatten, Linear;
              MNIST-shaped input [N, 1, 28, 28], 10 logits, so that it can be
              fine-tuned on MNIST
    encoder   one transformer encoder layer: multi-head self-attention,
              LayerNorm, a GELU feed-forward block, residual connections
    dynbatch  a small CNN whose batch axis is dynamic; its flatten is
              x.view(x.size(0), -1), a Shape-Gather-Concat-Reshape sub-graph
    ifmodel   a torch.jit.script module with an `if` on the sign of the
              input's sum, exported as an ONNX If
    ext       an MLP saved with its weights as ONNX external data
              (ext.onnx + ext.onnx.data)

Seeds are fixed, so rerunning gives the same weights and inputs; PyTorch's
outputs may differ in the last bits between machines.
"""
import json
import os

import numpy as np
import onnx
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17


def path(name):
    return os.path.join(HERE, name)


def save_npy(name, a):
    """Saves a float32/int64 array in C order, atomically."""
    tmp = path(name + ".tmp")
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(a), allow_pickle=False)
    os.replace(tmp, path(name))


def export(model, args, name, input_names, output_names, dynamic_axes=None):
    """Exports model to name.onnx (atomically) and checks it.

    TrainingMode.PRESERVE exports the eval-mode model as it is; the default
    (EVAL) would fold each BatchNorm into the Conv before it, and the
    fixtures should have BatchNormalization nodes, as models exported for
    fine-tuning do."""
    tmp = path(name + ".onnx.tmp")
    torch.onnx.export(model, args, tmp, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes,
                      opset_version=OPSET, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.PRESERVE)
    onnx.checker.check_model(onnx.load(tmp))
    os.replace(tmp, path(name + ".onnx"))


class Cases:
    """Writes the inputs and outputs of each case and collects the manifest."""

    def __init__(self):
        self.cases = []

    def add(self, model, onnx_file, prefix, input_names, inputs, output_names, note):
        with torch.no_grad():
            outs = model(*inputs)
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        in_files = {}
        for i, (n, x) in enumerate(zip(input_names, inputs)):
            f = prefix + ("_in.npy" if len(inputs) == 1 else "_in%d.npy" % i)
            save_npy(f, x.numpy())
            in_files[n] = f
        out_files = {}
        for i, (n, y) in enumerate(zip(output_names, outs)):
            f = prefix + ("_out.npy" if len(outs) == 1 else "_out%d.npy" % i)
            save_npy(f, y.detach().numpy())
            out_files[n] = f
        self.cases.append({"name": prefix, "model": onnx_file, "inputs": in_files,
                           "outputs": out_files, "note": note})

    def write(self):
        tmp = path("manifest.json.tmp")
        with open(tmp, "w") as f:
            json.dump({"opset": OPSET, "torch": torch.__version__, "onnx": onnx.__version__,
                       "cases": self.cases}, f, indent=1)
            f.write("\n")
        os.replace(tmp, path("manifest.json"))


def mlp():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 10)).eval()


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool2 = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool1(torch.relu(self.bn1(self.conv1(x))))  # [N, 8, 14, 14]
        x = self.pool2(torch.relu(self.conv2(x)))  # [N, 16, 7, 7]
        x = torch.flatten(self.gap(x), 1)  # [N, 16]
        return self.fc(x)


def cnn():
    torch.manual_seed(2)
    m = CNN()
    # Running statistics away from 0 and 1, so that eval-mode BatchNorm is
    # not the identity.
    with torch.no_grad():
        m.bn1.running_mean.uniform_(-0.5, 0.5)
        m.bn1.running_var.uniform_(0.5, 2.0)
        m.bn1.weight.uniform_(0.5, 1.5)
        m.bn1.bias.uniform_(-0.2, 0.2)
    return m.eval()


class EncoderLayer(nn.Module):
    """A post-norm transformer encoder layer (as nn.TransformerEncoderLayer
    with batch_first=True and activation="gelu"), written out so that the
    export is the plain op graph, not PyTorch's fused fast path."""

    def __init__(self, d=16, heads=2, ff=32):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.reshape(b, t, h, d // h).transpose(1, 2)
        k = k.reshape(b, t, h, d // h).transpose(1, 2)
        v = v.reshape(b, t, h, d // h).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // h) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = self.norm1(x + self.proj(y))
        return self.norm2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


def encoder():
    torch.manual_seed(3)
    m = EncoderLayer()
    with torch.no_grad():
        for norm in (m.norm1, m.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.2, 0.2)
    return m.eval()


class DynBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(x.view(x.size(0), -1))


def dynbatch():
    torch.manual_seed(4)
    return DynBatch().eval()


class IfModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        if bool(x.sum() > 0):
            y = torch.relu(self.fc(x))
        else:
            y = self.fc(x) * 2.0 - 1.0
        return y


def ifmodel():
    torch.manual_seed(5)
    return torch.jit.script(IfModel().eval())


def ext():
    torch.manual_seed(6)
    return nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 3)).eval()


def main():
    cases = Cases()

    m = mlp()
    x = torch.randn(4, 20, generator=torch.Generator().manual_seed(11))
    export(m, (x,), "mlp", ["x"], ["y"])
    cases.add(m, "mlp.onnx", "mlp", ["x"], [x], ["y"], "Gemm and Relu")

    m = cnn()
    x = torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(12))
    export(m, (x,), "cnn", ["x"], ["logits"], {"x": {0: "batch"}, "logits": {0: "batch"}})
    cases.add(m, "cnn.onnx", "cnn", ["x"], [x], ["logits"],
              "Conv, BatchNormalization, MaxPool, AveragePool, GlobalAveragePool, Flatten, Gemm; batch axis dynamic")

    m = encoder()
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(13))
    export(m, (x,), "encoder", ["x"], ["y"])
    cases.add(m, "encoder.onnx", "encoder", ["x"], [x], ["y"],
              "self-attention (MatMul, Softmax), LayerNormalization, GELU as Erf")

    m = dynbatch()
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(14))
    export(m, (x,), "dynbatch", ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    cases.add(m, "dynbatch.onnx", "dynbatch", ["x"], [x], ["y"], "batch 2 (the export's batch)")
    x = torch.randn(5, 3, 8, 8, generator=torch.Generator().manual_seed(15))
    cases.add(m, "dynbatch.onnx", "dynbatch_b5", ["x"], [x], ["y"], "batch 5, through the dynamic batch axis")

    m = ifmodel()
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(16)).abs()
    export(m, (x,), "ifmodel", ["x"], ["y"])
    assert any(n.op_type == "If" for n in onnx.load(path("ifmodel.onnx")).graph.node), "no If node"
    cases.add(m, "ifmodel.onnx", "ifmodel", ["x"], [x], ["y"], "positive sum: the then branch")
    cases.add(m, "ifmodel.onnx", "ifmodel_else", ["x"], [-x], ["y"], "negative sum: the else branch")

    m = ext()
    x = torch.randn(2, 12, generator=torch.Generator().manual_seed(17))
    export(m, (x,), "ext", ["x"], ["y"])
    model = onnx.load(path("ext.onnx"))
    for f in ("ext.onnx", "ext.onnx.data"):
        if os.path.exists(path(f)):
            os.remove(path(f))
    onnx.save_model(model, path("ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="ext.onnx.data", size_threshold=0)
    cases.add(m, "ext.onnx", "ext", ["x"], [x], ["y"], "initializers in ext.onnx.data")

    cases.write()


if __name__ == "__main__":
    main()
