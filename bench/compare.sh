#!/usr/bin/env bash
# Measures the seed network (batch 64, fp32) in spore's two modes, PyTorch
# eager and ONNX Runtime, in one run on this machine, and prints a table.
# Absolute times drift between runs on shared machines; quote the ratios.
#
#   bench/compare.sh [ORT_DIR]
#
# Everything it runs is in this repository. The peers are optional; each
# runs only when installed (see the README's "Speed" section):
#   PyTorch:      apt-get install -y python3-torch python3-numpy libopenblas0-pthread
#                 (bench/torch_seed.py, run with /usr/bin/python3)
#   ONNX Runtime: npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
#                 (bench/ort_seed.js; ORT_DIR defaults to bench/ort; the ONNX
#                 model is exported by bench/torch_seed.py, so it needs PyTorch too)
set -euo pipefail
cd "$(dirname "$0")/.."
ortdir=${1:-bench/ort}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "spore: spore bench --json (best of 3) and the dispatch benchmark..." >&2
go build -o "$out/spore" ./cmd/spore
for _ in 1 2 3; do "$out/spore" bench --json >> "$out/spore.json"; done
go test -run '^$' -bench 'DispatchAdd4' -benchtime 1s -count 3 . > "$out/dispatch.txt"

torch=no
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  torch=yes
  echo "PyTorch: 1 and 2 threads..." >&2
  /usr/bin/python3 bench/torch_seed.py --threads 1 >> "$out/torch.json"
  /usr/bin/python3 bench/torch_seed.py --threads 2 >> "$out/torch.json"
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
  echo "ONNX Runtime: exporting the seed network, then 1 and 2 threads..." >&2
  /usr/bin/python3 bench/torch_seed.py --onnx "$out/seed.onnx"
  NODE_PATH="$ortdir/node_modules" node bench/ort_seed.js "$out/seed.onnx" > "$out/ort.json"
fi

python3 - "$out" <<'PY'
import json, os, re, sys

d = sys.argv[1]

def lines(name):
    p = os.path.join(d, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []

def best(rows, key):
    vals = [r[key] for r in rows if key in r]
    return min(vals) if vals else None

spore = lines("spore.json")
torch, ort = lines("torch.json"), lines("ort.json")
dispatch = [float(m.group(1)) / 1000 for m in
            (re.match(r"BenchmarkDispatchAdd4\S*\s+\d+\s+([\d.]+) ns/op", l) for l in open(os.path.join(d, "dispatch.txt")))
            if m]

cols = ["spore PyNative", "spore Graph", "PyTorch eager", "ONNX Runtime"]
rows = [
    ("inference (µs per batch)", [best(spore, "pynative_infer_us"), best(spore, "graph_infer_us"),
                                  best(torch, "infer_eager_us"), best(ort, "infer_us")]),
    ("training step, SGD (µs)", [best(spore, "pynative_train_us"), best(spore, "graph_train_us"),
                                 best(torch, "train_step_eager_us"), None]),
    ("tiny-op dispatch (ns)", [min(dispatch) * 1000 if dispatch else None, None,
                               best(torch, "dispatch_add4_us") * 1000 if torch else None, None]),
]
fmt = lambda v: "-" if v is None else f"{v:.0f}"
print("seed network, batch 64, fp32; best of 3 (spore) or of 1 and 2 threads (peers)")
print(f"{'':26}" + "".join(f"{c:>16}" for c in cols))
for label, vals in rows:
    print(f"{label:26}" + "".join(f"{fmt(v):>16}" for v in vals))

def ratio(what, a, b, name):
    if a and b:
        print(f"{what}: spore Graph is {b / a:.2f}x as fast as {name}")

g_inf, g_train = rows[0][1][1], rows[1][1][1]
ratio("inference", g_inf, rows[0][1][2], "PyTorch eager")
ratio("training step", g_train, rows[1][1][2], "PyTorch eager")
ratio("inference", g_inf, rows[0][1][3], "ONNX Runtime")
PY
