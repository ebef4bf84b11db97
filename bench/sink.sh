#!/usr/bin/env bash
# Data sink mode against step-by-step training: a Graph-mode training epoch
# of the seed network (and of a small 784→16→10 network, whose steps cost
# little beside their per-step overhead) at batch 1 and 16, sunk 64 steps
# per call and unsunk, side by side in one run (BenchmarkSinkEpoch in
# package train interleaves the two epoch by epoch), at 1 and 2 threads.
# Prints samples/s of each, the ratio of their best epochs, and the ratio
# of the process CPU time each spent (cpu-ratio: the work sinking saves,
# steady even on a loaded machine, but blind to the gain of overlapping
# the data pipeline with the steps on a second core). Absolute rates
# drift between runs on shared machines; quote the ratios.
#
#   bench/sink.sh [BENCHTIME]     (BENCHTIME defaults to 3x: three epochs each)
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-3x}
if ! [[ "$benchtime" =~ ^[1-9][0-9]*(x|s|ms)$ ]]; then
  echo "sink.sh: benchtime $benchtime is not a go test -benchtime value such as 3x or 10s" >&2
  exit 2
fi
printf '%-7s %-26s %14s %14s %12s %10s\n' threads case unsunk-samp/s sunk-samp/s sunk/unsunk cpu-ratio
for threads in 1 2; do
  GOMAXPROCS=$threads go test -run '^$' -bench 'SinkEpoch' -benchtime "$benchtime" ./train |
    awk -v threads="$threads" '/^BenchmarkSinkEpoch/ {
      u = s = r = c = "-"
      name = $1; sub(/^BenchmarkSinkEpoch\//, "", name); sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i++) {
        if ($(i+1) == "unsunk-samples/s") u = $i
        if ($(i+1) == "sunk-samples/s") s = $i
        if ($(i+1) == "sunk/unsunk") r = $i
        if ($(i+1) == "cpu-sunk/unsunk") c = $i
      }
      printf "%-7s %-26s %14s %14s %12s %10s\n", threads, name, u, s, r, c
    }'
done
