#!/usr/bin/env bash
# Measures LeNet-5 (models.LeNet5, as 'spore train --model lenet' builds it;
# fp32, input of ones) at batch 1 and 64 in spore's Graph and PyNative
# modes, PyTorch eager and ONNX Runtime, side by side in one run, and prints
# the times and the ratios the convolution work aims at: Graph-mode
# inference no slower than ONNX Runtime, and a Graph training step (SGD,
# cross-entropy) at least 3x faster than PyTorch eager at batch 64. Every
# side takes its best of 1 and 2 threads (spore: GOMAXPROCS=1 and 2, three
# runs each). Absolute times drift between runs on shared machines; quote
# the ratios.
#
#   bench/lenet.sh [ORT_DIR]
#
# spore's figures are 'spore bench --model lenet --json'. The peers are
# optional; each runs only when installed:
#   PyTorch:      apt-get install -y python3-torch python3-numpy libopenblas0-pthread
#                 (bench/torch_lenet.py, run with /usr/bin/python3)
#   ONNX Runtime: npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
#                 (bench/ort_seed.js on the model bench/torch_lenet.py --onnx
#                 exports; ORT_DIR defaults to bench/ort)
set -euo pipefail
cd "$(dirname "$0")/.."
ortdir=${1:-bench/ort}
batches="1 64"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "spore: spore bench --model lenet, 1 and 2 threads, 3 runs each..." >&2
go build -o "$out/spore" ./cmd/spore
for _ in 1 2 3; do
  for t in 1 2; do
    GOMAXPROCS=$t "$out/spore" bench --model lenet --batch 1,64 --json >> "$out/spore.json"
  done
done

torch=no
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  torch=yes
  for b in $batches; do
    for t in 1 2; do
      echo "PyTorch: batch $b, $t thread(s)..." >&2
      OMP_NUM_THREADS=$t /usr/bin/python3 bench/torch_lenet.py --batch "$b" --threads "$t" >> "$out/torch.json"
    done
  done
else
  echo "PyTorch: not installed (python3-torch), skipped" >&2
fi

if [ ! -d "$ortdir/node_modules/onnxruntime-node" ]; then
  echo "ONNX Runtime: not installed in $ortdir, skipped" >&2
elif ! command -v node > /dev/null; then
  echo "ONNX Runtime: node not found, skipped" >&2
elif [ "$torch" = no ]; then
  echo "ONNX Runtime: skipped, its model is exported by PyTorch" >&2
else
  for b in $batches; do
    echo "ONNX Runtime: batch $b, 1 and 2 threads..." >&2
    /usr/bin/python3 bench/torch_lenet.py --onnx "$out/lenet$b.onnx" --batch "$b"
    NODE_PATH="$ortdir/node_modules" node bench/ort_seed.js "$out/lenet$b.onnx" "$b" >> "$out/ort.json"
  done
fi

python3 - "$out" $batches <<'PY'
import json, os, sys

d, batches = sys.argv[1], [int(b) for b in sys.argv[2:]]

def lines(name):
    p = os.path.join(d, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []

spore, torch, ort = lines("spore.json"), lines("torch.json"), lines("ort.json")

def best(rows, batch, key):
    vals = [(r[key], r.get("threads")) for r in rows if r.get("batch") == batch and r.get(key)]
    return min(vals) if vals else (None, None)

def fmt(v):
    return "-" if v is None else (f"{v:9.1f} us" if v < 1000 else f"{v / 1000:9.2f} ms")

print("LeNet-5, fp32, input of ones; each side its best of 1 and 2 threads")
for b in batches:
    gi, gt = best(spore, b, "graph_infer_us")
    pi, _ = best(spore, b, "pynative_infer_us")
    gtr, _ = best(spore, b, "graph_train_us")
    ptr, _ = best(spore, b, "pynative_train_us")
    ti, tti = best(torch, b, "infer_eager_us")
    ttr, ttt = best(torch, b, "train_step_eager_us")
    oi, ot = best(ort, b, "infer_us")
    print(f"\nbatch {b}")
    print(f"  {'':16} {'inference':>12} {'training step':>14}")
    print(f"  {'spore Graph':16} {fmt(gi):>12} {fmt(gtr):>14}")
    print(f"  {'spore PyNative':16} {fmt(pi):>12} {fmt(ptr):>14}")
    print(f"  {'PyTorch eager':16} {fmt(ti):>12} {fmt(ttr):>14}")
    print(f"  {'ONNX Runtime':16} {fmt(oi):>12} {'':>14}")
    if gi and oi:
        verdict = "no slower: met" if gi <= oi else "slower: not met"
        print(f"  Graph inference / ONNX Runtime = {gi / oi:.2f} ({verdict})")
    if gi and pi:
        print(f"  Graph inference is {pi / gi:.2f}x faster than PyNative")
    if gtr and ttr:
        verdict = "met" if ttr / gtr >= 3 else "not met"
        print(f"  Graph training step is {ttr / gtr:.2f}x faster than PyTorch eager (aim at batch 64: 3x, {verdict})")
    if gtr and ptr:
        print(f"  Graph training step is {ptr / gtr:.2f}x faster than PyNative")
PY
