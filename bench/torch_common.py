"""Timing and ONNX export shared by the PyTorch scripts of bench/
(torch_seed.py, torch_lenet.py, torch_vit.py), which import it from their
own directory."""
import contextlib
import os
import tempfile
import time

import torch


def best_us(fn, calls, warmup, rounds=5):
    """Best mean time per call, in microseconds, over rounds of calls."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def autocast(precision):
    """The context a forward pass runs in at precision: PyTorch's CPU
    autocast to bfloat16 for "bf16" (matmuls and convolutions in bfloat16,
    float32 weights), nothing for "fp32"."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    if precision != "fp32":
        raise ValueError(f"unknown precision {precision!r} (want fp32 or bf16)")
    return contextlib.nullcontext()


def export(net, path, batch):
    """Writes net (in eval mode) to path as ONNX, atomically: opset 13,
    input "x" of shape [batch, 1, 28, 28], output "logits"."""
    net = net.eval()
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=d)
    os.close(fd)
    try:
        torch.onnx.export(net, torch.ones(batch, 1, 28, 28), tmp, input_names=["x"],
                          output_names=["logits"], opset_version=13)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
