#!/usr/bin/python3
"""PyTorch figures for LeNet-5, for bench/lenet.sh.

The network is spore's models.LeNet5 (MindSpore's model-zoo LeNet-5), as
'spore train --model lenet' builds it: Conv(1->6, 5x5, valid, no bias) ->
ReLU -> MaxPool(2, 2) -> Conv(6->16, 5x5, valid, no bias) -> ReLU ->
MaxPool(2, 2) -> Flatten -> Dense(256, 120) -> ReLU -> Dense(120, 84) ->
ReLU -> Dense(84, 10), float32, on an input of ones [batch, 1, 28, 28] (the
input 'spore bench' uses).

Measures, each as the best of 5 timed rounds after a warm-up:
  infer_eager_us       one eager forward pass under no_grad, per batch
  train_step_eager_us  zero_grad + forward + cross-entropy + backward + SGD step
and prints them as one JSON object on stdout. --precision bf16 runs the
forward passes under torch.autocast("cpu", dtype=torch.bfloat16) (float32
weights, matmuls and convolutions in bfloat16).

With --onnx PATH it instead writes the network to PATH as ONNX (opset 13,
input "x" of shape [batch, 1, 28, 28], output "logits"), which
bench/ort_seed.js runs (its input has the same shape).

Setup (Debian):  apt-get install -y python3-torch python3-numpy libopenblas0-pthread
Usage: /usr/bin/python3 bench/torch_lenet.py [--batch 64] [--threads 1] [--quick] [--precision fp32|bf16]
       /usr/bin/python3 bench/torch_lenet.py --onnx lenet.onnx [--batch 64]
"""
import argparse
import json

import torch

from torch_common import autocast, best_us, export


def lenet():
    """LeNet-5 as spore builds it, initialised from a fixed seed."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5, bias=False), torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2),
        torch.nn.Conv2d(6, 16, 5, bias=False), torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 4 * 4, 120), torch.nn.ReLU(),
        torch.nn.Linear(120, 84), torch.nn.ReLU(),
        torch.nn.Linear(84, 10))


def measure(batch, threads, quick, precision="fp32"):
    torch.set_num_threads(threads)
    scale = 5 if quick else 1
    # Fewer calls at the large batch, so that a run stays short.
    calls = max(400 // scale // max(batch // 16, 1), 20)
    net = lenet()
    x = torch.ones(batch, 1, 28, 28)
    labels = torch.arange(batch) % 10

    net.eval()
    with torch.no_grad(), autocast(precision):
        infer = best_us(lambda: net(x), calls, max(calls // 8, 5))

    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        with autocast(precision):
            loss = loss_fn(net(x), labels)
        loss.backward()
        opt.step()

    train = best_us(step, max(calls // 2, 10), max(calls // 16, 5))
    return {
        "torch": torch.__version__, "threads": threads, "batch": batch, "precision": precision,
        "infer_eager_us": round(infer, 1),
        "train_step_eager_us": round(train, 1),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="a fifth of the iterations")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: forward passes under CPU autocast to bfloat16")
    p.add_argument("--onnx", metavar="PATH", help="write the network as ONNX and exit")
    a = p.parse_args()
    if a.batch < 1 or a.threads < 1:
        p.error("--batch and --threads must be positive")
    if a.onnx:
        export(lenet(), a.onnx, a.batch)
        return
    print(json.dumps(measure(a.batch, a.threads, a.quick, a.precision)))


if __name__ == "__main__":
    main()
