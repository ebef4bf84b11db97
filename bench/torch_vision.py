#!/usr/bin/python3
"""PyTorch eager figures for the torchvision models of bench/vision.sh, and
their ONNX export.

The models are torchvision 0.14's resnet18, mobilenet_v3_large,
efficientnet_b0 and vit_b_16 with their default (random) initialisation
after torch.manual_seed(0) (but for vit_b_16's head, see build), float32,
on 3x224x224 images.

  --onnx PATH     writes the model to PATH as ONNX: opset 17,
                  input "input" and output "output", both with a dynamic
                  batch dimension "b" (the export is traced at batch 1).
                  An inference export folds each BatchNorm into its Conv;
                  with --onnx-training the model is exported in training
                  mode (TrainingMode.TRAINING, no constant folding), so
                  that BatchNormalization stays, normalising by the batch's
                  statistics as PyTorch's train mode does: the model to
                  train, the same network --train times
  --infer         infer_us: the best mean time of one forward pass
                  under torch.no_grad, eval mode
  --train         train_step_us: zero_grad + forward (train mode) +
                  cross-entropy + backward + SGD step (lr 0.01, momentum 0.9)

Timings are the best of --rounds rounds of --calls calls after a warm-up
of one call, on the batch in --input (a float32 .npy file) or else
standard-normal images (seed 0), with labels i mod 1000 (first_loss and
second_loss are the first two training steps' losses), at --threads
intra-op threads (torch.set_num_threads); the result is one JSON object on
stdout.

Setup (Debian):  apt-get install -y python3-torch python3-torchvision python3-numpy
Usage: /usr/bin/python3 bench/torch_vision.py --model resnet18 (--onnx PATH [--onnx-training] |
       [--infer] [--train]) [--input X.npy | --batch 1] [--threads 1]
       [--calls 5] [--rounds 3]
"""
import argparse
import json
import os
import tempfile

import numpy as np
import torch
import torchvision

from torch_common import best_us

MODELS = ("resnet18", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16")


def build(name):
    """The torchvision model name, randomly initialised from seed 0.

    vit_b_16's classifier head is initialised to zeros, which makes every
    output 0 whatever the rest computes; it is drawn from N(0, 0.02²)
    instead, so that comparing outputs between runtimes tells something."""
    torch.manual_seed(0)
    net = getattr(torchvision.models, name)()
    if name == "vit_b_16":
        torch.nn.init.normal_(net.heads.head.weight, std=0.02)
    return net


def export(name, path, training):
    """Writes model name to path as ONNX, atomically (see the doc string)."""
    net = build(name).train(training)
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=d)
    os.close(fd)
    try:
        # Not under torch.no_grad: there vit_b_16's attention takes
        # PyTorch's fused fast path, which has no ONNX export.
        torch.onnx.export(net, torch.randn(1, 3, 224, 224), tmp, opset_version=17,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "b"}, "output": {0: "b"}},
                          training=mode, do_constant_folding=not training)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep it from other users
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def measure(a):
    torch.set_num_threads(a.threads)
    net = build(a.model)
    if a.input:
        x = torch.from_numpy(np.load(a.input)).float()
        a.batch = x.shape[0]
    else:
        x = torch.randn(a.batch, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    out = {"torch": torch.__version__, "torchvision": torchvision.__version__,
           "model": a.model, "threads": a.threads, "batch": a.batch,
           "calls": a.calls, "rounds": a.rounds}
    if a.infer:
        net.eval()

        def infer():
            with torch.no_grad():
                net(x)

        out["infer_us"] = round(best_us(infer, a.calls, 1, a.rounds), 1)
    if a.train:
        net.train()
        labels = torch.arange(a.batch) % 1000
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss = loss_fn(net(x), labels)
            loss.backward()
            opt.step()
            return loss

        # The first step is the warm-up; its loss and the next one's
        # (after one update) are comparable with spore's on the same
        # weights and images.
        out["first_loss"] = float(step())
        out["second_loss"] = float(step())
        out["train_step_us"] = round(best_us(step, a.calls, 0, a.rounds), 1)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--onnx", metavar="PATH", help="export the model to PATH and exit")
    p.add_argument("--onnx-training", action="store_true", help="with --onnx: export in training mode")
    p.add_argument("--infer", action="store_true", help="time inference")
    p.add_argument("--train", action="store_true", help="time a training step")
    p.add_argument("--input", metavar="X.npy", help="the batch of images (default: --batch random ones)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--calls", type=int, default=5, help="calls per timing round")
    p.add_argument("--rounds", type=int, default=3, help="timing rounds; the best is reported")
    a = p.parse_args()
    if a.onnx:
        export(a.model, a.onnx, a.onnx_training)
        return
    if not (a.infer or a.train):
        p.error("want --onnx PATH, --infer or --train")
    if min(a.batch, a.threads, a.calls, a.rounds) < 1:
        p.error("--batch, --threads, --calls and --rounds must be positive")
    print(json.dumps(measure(a)))


if __name__ == "__main__":
    main()
