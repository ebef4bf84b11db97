#!/usr/bin/env bash
# Data-parallel throughput on this machine: spore train under
# `mpirun -np 2` with one thread per rank against one process with one
# thread, in samples/s of the global batch, side by side in one run, at
# global batches 64 and 256. Efficiency is the two ranks' throughput over
# twice the one process's: 100% would be a perfect 2x. The ceiling column
# runs two independent single processes at once, each on half the batch
# with one thread, and adds their samples/s: what this machine gives two
# processes without any exchange (shared caches, memory bandwidth, clock),
# so that the gap between it and the two ranks is the cost of the
# gradient all-reduce and of the ranks' lockstep.
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

# best prints the larger of two numbers.
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }

printf '%-6s %6s %16s %16s %11s %16s\n' batch steps "1 proc (1 thr)" "2 ranks (1 thr)" efficiency "ceiling (2 lone)"
for batch in 64 256; do
  args=(train --epochs 1 --steps "$steps" --batch "$batch")
  half=(train --epochs 1 --steps "$steps" --batch "$((batch / 2))")
  best1=0 best2=0 bestc=0
  for _ in $(seq "$rounds"); do
    best1=$(best "$best1" "$(GOMAXPROCS=1 "$out/spore" "${args[@]}" | rate)")
    best2=$(best "$best2" "$("${mpi[@]}" "$out/spore" "${args[@]}" | rate)")
    GOMAXPROCS=1 "$out/spore" "${half[@]}" > "$out/a" &
    GOMAXPROCS=1 "$out/spore" "${half[@]}" > "$out/b"
    wait
    bestc=$(best "$bestc" "$(awk -v a="$(rate < "$out/a")" -v b="$(rate < "$out/b")" 'BEGIN { print a + b }')")
  done
  awk -v b="$batch" -v s="$steps" -v r1="$best1" -v r2="$best2" -v c="$bestc" \
    'BEGIN { printf "%-6d %6d %12.0f s/s %12.0f s/s %10.0f%% %12.0f s/s\n", b, s, r1, r2, 100 * r2 / (2 * r1), c }'
done
