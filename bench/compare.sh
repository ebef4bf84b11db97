#!/usr/bin/env bash
# Measures the seed network (batch 64) in spore's two modes, PyTorch eager
# and ONNX Runtime in one run on this machine, and prints the ratios.
#
#   bench/compare.sh [ORT_NODE_MODULES_DIR]
#
# Peers are optional: each runs only when installed.
#   PyTorch:      apt-get install -y python3-torch libopenblas0-pthread
#   ONNX Runtime: npm install --ignore-scripts onnxruntime-node@1.30.0 (in a
#                 directory of your choice; pass it as the argument)
# The peer scripts live in ../shared/bench beside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=../shared/bench
ortdir=${1:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "spore: spore bench --json (best of 3) and the dispatch benchmark..." >&2
go build -o "$out/spore" ./cmd/spore
for i in 1 2 3; do "$out/spore" bench --json >> "$out/spore.json"; done
go test -run XXX -bench 'DispatchAdd4' -benchtime 1s -count 3 . > "$out/spore.txt"

if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "PyTorch: 1 and 2 threads..." >&2
  /usr/bin/python3 "$shared/torch_mlp.py" --threads 1 > "$out/torch1.json"
  /usr/bin/python3 "$shared/torch_mlp.py" --threads 2 > "$out/torch2.json"
fi
if [ -n "$ortdir" ] && [ -d "$ortdir/node_modules/onnxruntime-node" ]; then
  echo "ONNX Runtime..." >&2
  NODE_PATH="$ortdir/node_modules" node "$shared/ort_mlp.js" > "$out/ort.json"
fi

python3 - "$out" <<'PY'
import json, os, re, sys
d = sys.argv[1]
best = {}
for line in open(os.path.join(d, "spore.txt")):
    m = re.match(r"Benchmark(\w+)-\d+\s+\d+\s+([\d.]+) ns/op", line)
    if m:
        k, v = m.group(1), float(m.group(2)) / 1000
        best[k] = min(best.get(k, v), v)
for line in open(os.path.join(d, "spore.json")):
    r = json.loads(line)
    for k, v in r.items():
        if k.endswith("_us"):
            best[k] = min(best.get(k, v), v)
def load(name):
    p = os.path.join(d, name)
    if not os.path.exists(p) or os.path.getsize(p) == 0:
        return []
    return [json.loads(l) for l in open(p) if l.strip()]
torch = load("torch1.json") + load("torch2.json")
ort = load("ort.json")
rows = [("inference (µs/batch)", "pynative_infer_us", "graph_infer_us", "infer_eager_us"),
        ("training step (µs)", "pynative_train_us", "graph_train_us", "train_step_eager_us")]
print(f"{'':22} {'spore PyNative':>15} {'spore Graph':>12} {'PyTorch eager':>14} {'Graph vs torch':>15} {'PyNative vs torch':>18}")
for label, pn, gr, tk in rows:
    t = min((r[tk] for r in torch), default=None)
    p, g = best.get(pn), best.get(gr)
    ratio = lambda a: f"{t / a:.2f}x faster" if t and a else "-"
    print(f"{label:22} {p:15.1f} {g:12.1f} {t if t else '-':>14} {ratio(g):>15} {ratio(p):>18}")
if ort:
    o = min(r["infer_us"] for r in ort)
    print(f"ONNX Runtime inference: {o:.1f} µs (best of 1/2 threads); spore Graph / ORT = {best['graph_infer_us'] / o:.2f}")
t = min((r["dispatch_add4_us"] for r in torch), default=None)
print(f"eager dispatch of a tiny add: spore {best['DispatchAdd4'] * 1000:.0f} ns" + (f", PyTorch {t * 1000:.0f} ns" if t else ""))
PY
