#!/usr/bin/env bash
# Data-parallel throughput on this machine: spore train under
# `mpirun -np 2` with one thread per rank against one process with one
# thread, in samples/s of the global batch, side by side in one run, at
# global batches 64 and 256. Efficiency is the two ranks' throughput over
# twice the one process's: 100% would be a perfect 2x.
#
#   bench/dataparallel.sh [STEPS] [ROUNDS]
#
# Needs Open MPI (apt-get install -y libopenmpi-dev openmpi-bin); builds
# spore with -tags mpi. Each configuration runs ROUNDS times (default 3),
# alternating, and the best round counts, to damp the noise of a shared
# machine. Threads are pinned with GOMAXPROCS=1, which sets both Go's
# scheduler and spore's kernel worker pool (internal/kernels/parallel
# starts with GOMAXPROCS workers).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300}
rounds=${2:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
command -v mpirun > /dev/null || { echo "mpirun not found: apt-get install -y libopenmpi-dev openmpi-bin" >&2; exit 1; }
go build -tags mpi -o "$out/spore" ./cmd/spore
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 -x GOMAXPROCS=1)

# rate prints the samples/s of one training run's report line
# ("training: N steps in T, R samples/s (...)").
rate() { sed -n 's/^training: .*, \([0-9.]*\) samples\/s.*/\1/p'; }

printf '%-6s %6s %16s %16s %11s\n' batch steps "1 proc (1 thr)" "2 ranks (1 thr)" efficiency
for batch in 64 256; do
  args=(train --epochs 1 --steps "$steps" --batch "$batch")
  best1=0 best2=0
  for _ in $(seq "$rounds"); do
    r1=$(GOMAXPROCS=1 "$out/spore" "${args[@]}" | rate)
    r2=$("${mpi[@]}" "$out/spore" "${args[@]}" | rate)
    best1=$(awk -v a="$best1" -v b="$r1" 'BEGIN { print (b > a ? b : a) }')
    best2=$(awk -v a="$best2" -v b="$r2" 'BEGIN { print (b > a ? b : a) }')
  done
  awk -v b="$batch" -v s="$steps" -v r1="$best1" -v r2="$best2" \
    'BEGIN { printf "%-6d %6d %12.0f s/s %12.0f s/s %10.0f%%\n", b, s, r1, r2, 100 * r2 / (2 * r1) }'
done
