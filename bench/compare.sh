#!/usr/bin/env bash
# Measures a network in spore's two modes, PyTorch eager and ONNX Runtime,
# in one run on this machine, at each batch size of a sweep, and prints one
# table row per batch. Every side takes its best of 1 and 2
# threads (spore: GOMAXPROCS=1 and 2, three runs each). Absolute times drift
# between runs on shared machines; quote the ratios.
#
#   bench/compare.sh [--model mlp|lenet] [--batch 1,16,64,256,1024]
#                    [--precision fp32|bf16] [ORT_DIR]
#
# --model mlp (the default) is the seed network, lenet is LeNet-5; --batch
# defaults to 1,16,64,256,1024. --precision bf16 runs spore at mixed
# precision O2 (spore bench --precision bf16) and PyTorch under CPU
# autocast to bfloat16; ONNX Runtime stays fp32, the referee.
#
# Everything it runs is in this repository. The peers are optional; each
# runs only when installed (see the README's "Speed" section):
#   PyTorch:      apt-get install -y python3-torch python3-numpy libopenblas0-pthread
#                 (bench/torch_seed.py or bench/torch_lenet.py, run with /usr/bin/python3)
#   ONNX Runtime: npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
#                 (bench/ort_seed.js; ORT_DIR defaults to bench/ort; the ONNX
#                 model is exported by the PyTorch script, so it needs PyTorch too)
set -euo pipefail
cd "$(dirname "$0")/.."
model=mlp
batches=1,16,64,256,1024
precision=fp32
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=${2:?--model needs a value}; shift 2 ;;
    --batch) batches=${2:?--batch needs a value}; shift 2 ;;
    --precision) precision=${2:?--precision needs a value}; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "compare.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
case "$model" in
  mlp) torchpy=bench/torch_seed.py ;;
  lenet) torchpy=bench/torch_lenet.py ;;
  *) echo "compare.sh: unknown --model $model (want mlp or lenet)" >&2; exit 2 ;;
esac
case "$precision" in
  fp32|bf16) ;;
  *) echo "compare.sh: unknown --precision $precision (want fp32 or bf16)" >&2; exit 2 ;;
esac
if ! [[ "$batches" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
  echo "compare.sh: --batch $batches is not a comma-separated list of positive sizes" >&2
  exit 2
fi
ortdir=${1:-bench/ort}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "spore: spore bench --json --model $model --precision $precision --batch $batches, 1 and 2 threads, best of 3; the dispatch benchmark..." >&2
go build -o "$out/spore" ./cmd/spore
for _ in 1 2 3; do
  for threads in 1 2; do
    GOMAXPROCS=$threads "$out/spore" bench --json --model "$model" --precision "$precision" --batch "$batches" >> "$out/spore.json"
  done
done
go test -run '^$' -bench 'DispatchAdd4' -benchtime 1s -count 3 . > "$out/dispatch.txt"

torch=no
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  torch=yes
  echo "PyTorch: 1 and 2 threads at each batch..." >&2
  for b in ${batches//,/ }; do
    for threads in 1 2; do
      /usr/bin/python3 "$torchpy" --batch "$b" --threads "$threads" --precision "$precision" >> "$out/torch.json"
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
  echo "ONNX Runtime: exporting the network at each batch, then 1 and 2 threads..." >&2
  for b in ${batches//,/ }; do
    /usr/bin/python3 "$torchpy" --onnx "$out/$model-$b.onnx" --batch "$b"
    NODE_PATH="$ortdir/node_modules" node bench/ort_seed.js "$out/$model-$b.onnx" "$b" >> "$out/ort.json"
  done
fi

python3 - "$out" "$model" "$batches" "$precision" <<'PY'
import json, os, re, sys

d, model, batches, precision = sys.argv[1], sys.argv[2], [int(b) for b in sys.argv[3].split(",")], sys.argv[4]

def lines(name):
    p = os.path.join(d, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []

def best(rows, key, batch):
    vals = [r[key] for r in rows if key in r and r.get("batch") == batch]
    return min(vals) if vals else None

spore = lines("spore.json")
torch, ort = lines("torch.json"), lines("ort.json")
dispatch = [float(m.group(1)) / 1000 for m in
            (re.match(r"BenchmarkDispatchAdd4\S*\s+\d+\s+([\d.]+) ns/op", l) for l in open(os.path.join(d, "dispatch.txt")))
            if m]

name = {"mlp": "seed network (mlp)", "lenet": "LeNet-5"}[model]
fmt = lambda v: "-" if v is None else f"{v:.1f}" if v < 100 else f"{v:.0f}"
rat = lambda a, b: "-" if a is None or b is None else f"{b / a:.2f}x"

if precision == "bf16":
    kernels = sorted({r.get("bf16_kernel", "?") for r in spore})
    print(f"{name}, bf16: spore at amp O2 ({', '.join(kernels)} kernel), PyTorch under CPU autocast to bfloat16, "
          "ONNX Runtime fp32; µs per batch; every side its best of 1 and 2 threads")
else:
    print(f"{name}, fp32, µs per batch; every side its best of 1 and 2 threads")
print("ratios: how many times as fast as the peer spore Graph mode is (above 1: Graph is faster)")
print()
print("inference")
cols = ["spore PyNative", "spore Graph", "PyTorch eager", "ONNX Runtime", "vs PyNative", "vs PyTorch", "vs ORT"]
print(f"{'batch':>6}" + "".join(f"{c:>15}" for c in cols))
for b in batches:
    pn, g = best(spore, "pynative_infer_us", b), best(spore, "graph_infer_us", b)
    pt, o = best(torch, "infer_eager_us", b), best(ort, "infer_us", b)
    print(f"{b:>6}" + "".join(f"{fmt(v):>15}" for v in (pn, g, pt, o)) +
          "".join(f"{r:>15}" for r in (rat(g, pn), rat(g, pt), rat(g, o))))
print()
print("training step (forward, cross-entropy, backward, SGD)")
cols = ["spore PyNative", "spore Graph", "PyTorch eager", "vs PyNative", "vs PyTorch"]
print(f"{'batch':>6}" + "".join(f"{c:>15}" for c in cols))
for b in batches:
    pn, g = best(spore, "pynative_train_us", b), best(spore, "graph_train_us", b)
    pt = best(torch, "train_step_eager_us", b)
    print(f"{b:>6}" + "".join(f"{fmt(v):>15}" for v in (pn, g, pt)) +
          "".join(f"{r:>15}" for r in (rat(g, pn), rat(g, pt))))
print()
td = [r["dispatch_add4_us"] for r in torch if "dispatch_add4_us" in r]
print("tiny-op dispatch (ns): spore PyNative " + (f"{min(dispatch) * 1000:.0f}" if dispatch else "-") +
      ", PyTorch eager " + (f"{min(td) * 1000:.0f}" if td else "-"))
PY
