#!/usr/bin/python3
"""PyTorch figures for spore's ViT training step, for bench/vit.sh.

The network is spore's models.NewViT(10) with its defaults: the 28x28 image
cut into 16 patches of 7x7, each flattened and projected by one Linear(49, 64)
(the same as a Conv2d with kernel and stride 7), a learned class token in
front, a learned position embedding, 4 pre-norm TransformerEncoderLayers
(d_model 64, 4 heads, feed-forward 128, ReLU, no dropout, batch_first), a
final LayerNorm and a Linear(64, 10) head on the class token; float32.

Measures, as the best of 5 timed rounds after a warm-up,
  train_step_eager_us  zero_grad + forward + cross-entropy + backward + AdamW step
(lr 1e-3, weight decay 0.01, as spore's AdamW) on a batch of standard-normal
images, and prints it as one JSON object on stdout with the parameter count.

Setup (Debian):  apt-get install -y python3-torch python3-numpy libopenblas0-pthread
Usage: /usr/bin/python3 bench/torch_vit.py [--batch 128] [--threads 2] [--quick]
"""
import argparse
import json

import torch

from torch_common import best_us
from torch import nn


class ViT(nn.Module):
    """spore's models.ViT, layer for layer."""

    def __init__(self, classes=10, image=28, patch=7, dim=64, depth=4, heads=4, mlp=128):
        super().__init__()
        self.patch, self.grid, self.dim = patch, image // patch, dim
        self.patch_embed = nn.Linear(patch * patch, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(self.grid * self.grid + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=mlp, dropout=0.0,
                                           activation="relu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, norm=nn.LayerNorm(dim),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        n, g, p = x.shape[0], self.grid, self.patch
        x = x.reshape(n, 1, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(n * g * g, p * p)
        tok = self.patch_embed(x).reshape(n, g * g, self.dim)
        h = torch.cat([self.cls_token.expand(n, 1, self.dim), tok], dim=1) + self.pos_embed
        h = self.encoder(h)
        return self.head(h[:, 0])


def measure(batch, threads, quick):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = ViT().train()
    x = torch.randn(batch, 1, 28, 28)
    labels = torch.arange(batch) % 10
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(net(x), labels).backward()
        opt.step()

    calls = 4 if quick else 20
    train = best_us(step, calls, 3)
    return {
        "torch": torch.__version__, "threads": threads, "batch": batch,
        "params": sum(p.numel() for p in net.parameters()),
        "train_step_eager_us": round(train, 1),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="a fifth of the iterations")
    a = p.parse_args()
    if a.batch < 1 or a.threads < 1:
        p.error("--batch and --threads must be positive")
    print(json.dumps(measure(a.batch, a.threads, a.quick)))


if __name__ == "__main__":
    main()
