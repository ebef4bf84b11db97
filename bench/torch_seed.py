#!/usr/bin/python3
"""PyTorch figures for spore's seed network, for bench/compare.sh.

The network is spore's models.Network (MindSpore's quick-start network):
Flatten -> Dense(784, 512) -> ReLU -> Dense(512, 512) -> ReLU -> Dense(512, 10),
float32, on an input of ones [batch, 1, 28, 28].

Measures, each as the best of 5 timed rounds after a warm-up:
  infer_eager_us       one eager forward pass under no_grad, per batch
  train_step_eager_us  zero_grad + forward + cross-entropy + backward + SGD step
  dispatch_add4_us     one eager add of two 4-element tensors (framework overhead)
and prints them as one JSON object on stdout. --precision bf16 runs the
forward passes under torch.autocast("cpu", dtype=torch.bfloat16) (float32
weights, matmuls and convolutions in bfloat16).

With --onnx PATH it instead writes the network to PATH as ONNX (opset 13,
input "x" of shape [batch, 1, 28, 28], output "logits"), for
bench/ort_seed.js. torch.onnx.export in PyTorch 1.13 needs no other module.

Setup (Debian):  apt-get install -y python3-torch python3-numpy libopenblas0-pthread
                 (without OpenBLAS, Debian's PyTorch falls back to a reference BLAS
                 about 10x slower)
Usage: /usr/bin/python3 bench/torch_seed.py [--batch 64] [--threads 1] [--quick] [--precision fp32|bf16]
       /usr/bin/python3 bench/torch_seed.py --onnx seed.onnx [--batch 64]
"""
import argparse
import json

import torch

from torch_common import autocast, best_us, export


def seed_network():
    """The seed network, initialised from a fixed seed."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(784, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10))


def measure(batch, threads, quick, precision="fp32"):
    torch.set_num_threads(threads)
    # About as many samples per round at every batch size, within bounds.
    scale = (5 if quick else 1) * max(1, min(batch // 8, 50))
    net = seed_network()
    x = torch.ones(batch, 1, 28, 28)
    labels = torch.arange(batch) % 10

    net.eval()
    with torch.no_grad(), autocast(precision):
        infer = best_us(lambda: net(x), max(400 // scale, 5), 50 // min(scale, 25))

    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        with autocast(precision):
            loss = loss_fn(net(x), labels)
        loss.backward()
        opt.step()

    train = best_us(step, max(200 // scale, 3), max(20 // scale, 2))
    t = torch.ones(4)
    dispatch = best_us(lambda: t + t, 20000 // (5 if quick else 1), 1000)
    return {
        "torch": torch.__version__, "threads": threads, "batch": batch, "precision": precision,
        "infer_eager_us": round(infer, 1),
        "train_step_eager_us": round(train, 1),
        "dispatch_add4_us": round(dispatch, 3),
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
        export(seed_network(), a.onnx, a.batch)
        return
    print(json.dumps(measure(a.batch, a.threads, a.quick, a.precision)))


if __name__ == "__main__":
    main()
