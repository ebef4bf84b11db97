#!/usr/bin/env bash
# Times one training step of the CLI's default ViT (models.NewViT(10): 16
# patches of 7×7, dim 64, 4 pre-norm encoder layers with 4 heads) on a
# batch of 128 with cross-entropy and AdamW, in spore's Graph and PyNative
# modes and in PyTorch eager, side by side in one run (spore at THREADS
# threads, PyTorch at 1 and THREADS), and prints the times and the ratios.
# Absolute times drift between runs on shared machines; quote the ratios.
#
#   bench/vit.sh [THREADS]      (default 2)
#
# spore's figures are BenchmarkViTTrainStep in package models (best of 3);
# PyTorch's are bench/torch_vit.py's (best of 5 rounds), at 1 and THREADS
# threads, run only when PyTorch is installed:
#   apt-get install -y python3-torch python3-numpy libopenblas0-pthread
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
case $threads in
  '' | *[!0-9]* | 0) echo "usage: bench/vit.sh [THREADS], a positive number" >&2; exit 2 ;;
esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "spore: BenchmarkViTTrainStep, $threads threads, 3 runs..." >&2
go test -run '^$' -bench '^BenchmarkViTTrainStep$' -benchtime 20x -count 3 -cpu "$threads" ./models > "$out/spore.txt"

if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  # PyTorch's OpenMP threads spin while they wait, which on a loaded
  # machine can make two threads slower than one: it runs at 1 thread as
  # well, and the ratio is taken against its faster figure.
  for n in $(printf '%s\n' 1 "$threads" | sort -un); do
    echo "PyTorch: bench/torch_vit.py, $n thread(s)..." >&2
    OMP_NUM_THREADS=$n /usr/bin/python3 bench/torch_vit.py --threads "$n" >> "$out/torch.json"
  done
else
  echo "PyTorch: not installed (python3-torch), skipped" >&2
fi

python3 - "$out" "$threads" <<'PY'
import json, os, re, sys

d, threads = sys.argv[1], sys.argv[2]
best = {}
for line in open(os.path.join(d, "spore.txt")):
    m = re.match(r"BenchmarkViTTrainStep/(\w+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
    if m:
        us = float(m.group(2)) / 1000
        best[m.group(1)] = min(best.get(m.group(1), us), us)
tp = os.path.join(d, "torch.json")
torch = [json.loads(l) for l in open(tp) if l.strip()] if os.path.exists(tp) else []

print(f"ViT training step (models.NewViT(10)), batch 128, AdamW, fp32, spore at {threads} threads")
rows = [("spore Graph", best.get("Graph")), ("spore PyNative", best.get("PyNative"))]
rows += [(f"PyTorch, {r['threads']} thr", r["train_step_eager_us"]) for r in torch]
for name, us in rows:
    print(f"  {name:16} {'-' if us is None else f'{us / 1000:9.2f} ms'}")
g, p = best.get("Graph"), best.get("PyNative")
if g and p:
    print(f"  Graph is {p / g:.2f}x faster than PyNative")
if g and torch:
    t = min(torch, key=lambda r: r["train_step_eager_us"])
    print(f"  Graph is {t['train_step_eager_us'] / g:.2f}x faster than PyTorch eager "
          f"({t['torch']}, its best: {t['threads']} thread(s))")
PY
