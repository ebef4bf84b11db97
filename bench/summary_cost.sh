#!/usr/bin/env bash
# What --summary-dir costs: "spore train" (the seed network, the default
# three MNIST epochs, Graph mode) without and with --summary-dir, runs
# interleaved so that drift hits both alike, and the ratio of the median
# training throughputs. The budget is 3% at the default histogram
# interval. Each run with --summary-dir also reports the collector's own
# time as a share of its training time (SummaryCollector.Overhead),
# measured inside the run, which a busy machine disturbs far less than the
# comparison of two runs; the script prints its median too.
#
#   bench/summary_cost.sh [ROUNDS] [extra spore train flags...]
#
# ROUNDS defaults to 5. Absolute times drift between runs on shared
# machines; quote the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
shift || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/spore" ./cmd/spore

# train runs spore train and prints, on one line, the samples/s of its
# "training:" line and the logging share of its "summaries in" line (0
# without one).
train() {
  "$out/spore" train "$@" > "$out/run.txt"
  tp=$(sed -n 's/^training: .* \([0-9][0-9]*\) samples\/s.*/\1/p' "$out/run.txt")
  share=$(sed -n 's/^summaries in .*, \([0-9.]*\)% of the training time.*/\1/p' "$out/run.txt")
  echo "$tp ${share:-0}"
}
for i in $(seq "$rounds"); do
  read -r off _ < <(train "$@")
  rm -rf "$out/logs"
  read -r on share < <(train --summary-dir "$out/logs" "$@")
  echo "round $i: without $off samples/s, with --summary-dir $on samples/s (logging: $share% of its training time)" >&2
  echo "$off $on $share" >> "$out/runs.txt"
done
awk '
  { off[NR] = $1; on[NR] = $2; share[NR] = $3 }
  function median(a, n,   i, j, t, b) {
    for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
  }
  END {
    m0 = median(off, NR); m1 = median(on, NR)
    printf "median throughput: without %.0f samples/s, with --summary-dir %.0f samples/s\n", m0, m1
    printf "--summary-dir costs %.1f%% (with/without = %.3f; budget 3%%)\n", 100 * (1 - m1 / m0), m1 / m0
    printf "the collector'"'"'s own time, measured inside each run: median %.1f%% of the training time\n", median(share, NR)
  }' "$out/runs.txt"
