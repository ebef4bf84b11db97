#!/usr/bin/env bash
# Times imported ONNX models in spore's Graph mode (spore run --bench),
# ONNX Runtime and gonnx (the pure-Go ONNX runtime), in one run on this
# machine, and prints a table with the ratios. Absolute times drift between
# runs on shared machines; quote the ratios.
#
#   bench/onnx.sh [ORT_DIR]
#
# The models, each at batch 1 and 64, on the same float32 input (N(0, 1),
# seed 0) for every runtime:
#   seed  spore's seed network as PyTorch exports it (bench/torch_seed.py
#         --onnx: Flatten, Gemm, Relu; opset 13)
#   cnn   the CNN fixture onnx/testdata/torch/cnn.onnx (Conv, BatchNorm,
#         MaxPool, AveragePool, GlobalAveragePool, Gemm; opset 17)
#   conv  a CNN within gonnx v1.1.0's reach, which runs opset 13 only and
#         has no pooling or normalisation ops: Conv 1->8 3x3, Relu, Conv
#         8->16 3x3 stride 2, Relu, Flatten, Gemm 3136->10 (PyTorch, opset 13)
# Each runtime runs with 1 and 2 threads (GOMAXPROCS for spore and gonnx,
# intra-op threads for ONNX Runtime) and reports the best of 5 rounds; the
# table keeps each one's faster setting. Its last column compares spore's
# outputs with ONNX Runtime's (onnx/testdata/ortrun.js) on the same input.
#
# Needs, besides Go:
#   /usr/bin/python3 with numpy (the inputs) and torch (the seed model):
#                 apt-get install -y python3-torch python3-numpy libopenblas0-pthread
#   ONNX Runtime: npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
#                 (bench/ort_onnx.js; ORT_DIR defaults to bench/ort)
#   gonnx v1.1.0: fetched by the Go module proxy into bench/gonnx, a module of
#                 its own, so that it never enters spore's go.mod
# A peer that is missing, or that cannot run a model, shows as "-" or with
# its error under the table.
set -euo pipefail
cd "$(dirname "$0")/.."
ortdir=${1:-bench/ort}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  echo "onnx.sh: /usr/bin/python3 with numpy is needed to write the inputs (apt-get install -y python3-numpy)" >&2
  exit 1
fi

echo "building spore and the gonnx runner..." >&2
go build -o "$out/spore" ./cmd/spore
gonnx=yes
if ! (cd bench/gonnx && go build -o "$out/gonnx" .) >&2; then
  echo "gonnx: could not build bench/gonnx (is the Go module proxy reachable?), skipped" >&2
  gonnx=no
fi
ort=yes
if [ ! -d "$ortdir/node_modules/onnxruntime-node" ]; then
  echo "ONNX Runtime: not installed in $ortdir, skipped" >&2
  ort=no
elif ! command -v node > /dev/null; then
  echo "ONNX Runtime: node not found, skipped" >&2
  ort=no
fi

models=()
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  for b in 1 64; do
    /usr/bin/python3 bench/torch_seed.py --onnx "$out/seed_b$b.onnx" --batch "$b"
    /usr/bin/python3 - "$out/conv_b$b.onnx" "$b" <<'PY'
import sys, torch
from torch import nn
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
                    nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
                    nn.Flatten(), nn.Linear(16 * 14 * 14, 10)).eval()
torch.onnx.export(net, torch.zeros(int(sys.argv[2]), 1, 28, 28), sys.argv[1],
                  input_names=["x"], output_names=["logits"], opset_version=13)
PY
  done
  models+=(seed)
else
  echo "seed network: PyTorch (python3-torch) exports it and is not installed, skipped" >&2
fi
for b in 1 64; do cp onnx/testdata/torch/cnn.onnx "$out/cnn_b$b.onnx"; done
models+=(cnn)
[ -f "$out/conv_b1.onnx" ] && models+=(conv)

for m in "${models[@]}"; do
  for b in 1 64; do
    /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.RandomState(0).randn($b, 1, 28, 28).astype('<f4'))" "$out/x_b$b.npy"
    calls=$([ "$b" = 1 ] && echo 1000 || echo 100)
    model="$out/${m}_b$b.onnx"
    tag="${m}_b$b"
    echo "$m, batch $b: spore..." >&2
    for t in 1 2; do
      GOMAXPROCS=$t "$out/spore" run "$model" --input "$out/x_b$b.npy" --bench "$calls" --json \
        --output "$out/spore_out_$tag.npz" >> "$out/spore_$tag.json"
    done
    if [ "$ort" = yes ]; then
      echo "$m, batch $b: ONNX Runtime..." >&2
      NODE_PATH="$ortdir/node_modules" node bench/ort_onnx.js "$model" "$out/x_b$b.npy" "$calls" > "$out/ort_$tag.json"
      # The outputs too, to show that both computed the same thing.
      mkdir -p "$out/ort_out_$tag"
      NODE_PATH="$ortdir/node_modules" node onnx/testdata/ortrun.js "$model" "$out/ort_out_$tag" "x=$out/x_b$b.npy" > /dev/null
    fi
    if [ "$gonnx" = yes ]; then
      echo "$m, batch $b: gonnx..." >&2
      for t in 1 2; do
        GOMAXPROCS=$t "$out/gonnx" -model "$model" -input "$out/x_b$b.npy" -calls "$calls" >> "$out/gonnx_$tag.json" || true
      done
    fi
  done
done

/usr/bin/python3 - "$out" "${models[@]}" <<'PY'
import json, os, sys

import numpy as np

d, models = sys.argv[1], sys.argv[2:]

def rows(name):
    p = os.path.join(d, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []

def best(rs, get):
    """The fastest (time, threads) of the rows get can read, or None."""
    vals = [(get(r), r.get("threads")) for r in rs]
    vals = [v for v in vals if v[0] is not None]
    return min(vals) if vals else None

def agreement(tag):
    """max |spore - ORT| / max |ORT| over the outputs, or None."""
    ref = os.path.join(d, f"ort_out_{tag}")
    if not os.path.isdir(ref):
        return None
    worst = 0.0
    with np.load(os.path.join(d, f"spore_out_{tag}.npz")) as got:
        for name in got.files:
            want = np.load(os.path.join(ref, name + ".npy"))
            worst = max(worst, float(np.abs(got[name] - want).max() / max(np.abs(want).max(), 1e-30)))
    return worst

errors = []
table = []
for m in models:
    for b in (1, 64):
        tag = f"{m}_b{b}"
        spore = best(rows(f"spore_{tag}.json"), lambda r: r.get("bench", {}).get("us_per_call"))
        ort = best(rows(f"ort_{tag}.json"), lambda r: r.get("infer_us"))
        g = rows(f"gonnx_{tag}.json")
        gonnx = best(g, lambda r: r.get("infer_us"))
        if gonnx is None and g and g[0].get("error"):
            # The message names the temporary file; the model says enough.
            msg = g[0]["error"].split(": ", 1)[-1]
            if f"gonnx on {m}: {msg}" not in errors:
                errors.append(f"gonnx on {m}: {msg}")
        table.append((m, b, spore, ort, gonnx, agreement(tag)))

fmt = lambda v: "-" if v is None else f"{v[0]:.1f} ({v[1]}t)"
ratio = lambda a, b: "-" if a is None or b is None else f"{b[0] / a[0]:.2f}x"
print("imported ONNX models, fp32, µs per inference (threads of the best setting); best of 5 rounds")
print("ratios: how many times as fast spore's Graph mode is (aims: >= 1x ONNX Runtime, >= 5x gonnx)\n")
cols = ["spore Graph", "ONNX Runtime", "gonnx", "vs ORT", "vs gonnx", "spore-ORT diff"]
print(f"{'model':6}{'batch':>6}" + "".join(f"{c:>16}" for c in cols))
for m, b, spore, ort, gonnx, agree in table:
    cells = [fmt(spore), fmt(ort), fmt(gonnx), ratio(spore, ort), ratio(spore, gonnx),
             "-" if agree is None else f"{agree:.1e}"]
    print(f"{m:6}{b:>6}" + "".join(f"{c:>16}" for c in cells))
print("(spore-ORT diff: the largest difference between their outputs, relative to ORT's largest value)")
for e in errors:
    print(e)
PY
