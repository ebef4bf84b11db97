#!/usr/bin/env bash
# spore serve against ONNX Runtime behind Node.js (bench/ort_server.js), on
# the same Open Inference Protocol v2 JSON endpoint, driven by wrk, side by
# side in one run on this machine. Prints one table with the ratios.
# Absolute figures drift between runs on shared machines; quote the ratios.
#
#   bench/serve.sh
#
# The models, both float32 [batch, 1, 28, 28] -> [batch, 10] with a
# dynamic batch axis, each request one image (a 7 KB JSON body, the same
# N(0, 1) data for both servers, bench/serve_client.js body 1):
#   mlp  spore's seed network (models.Network: Dense 784-512-512-10 with
#        ReLUs), written by 'spore onnx export --model mlp --dynamic-batch'
#   cnn  the CNN fixture onnx/testdata/torch/cnn.onnx
# What runs, every cell for SERVE_SECONDS (default 10) after a 1 s warm-up,
# wrk with one thread and C connections, each sending its next request when
# the last one is answered (bench/serve_post.lua); the whole set SERVE_ROUNDS
# times (default 2), interleaved, each cell keeping its round of most req/s,
# so that a burst of other work on a shared machine hits all servers alike:
#   - both models at concurrency 1, 8 and 64 against spore serve (dynamic
#     batching: max_batch_size 64, max_queue_delay_microseconds
#     SERVE_QUEUE_DELAY_US, default 500; SERVE_INSTANCES instances, default
#     1) and the Node server with 1 and with 2 intra-op threads; the ratios
#     take Node's better setting per cell;
#   - the mlp at concurrency 64 against the same spore server's
#     mlp_unbatched, the same file with max_batch_size 0 (batching off:
#     each request runs alone); and both again with the request in Triton's
#     binary-data extension (bench/serve_client.js binbody), which spares
#     the server the JSON numbers, to show what batching does where the
#     decoding is not most of a request's cost (no target; Node has no
#     column there, as it speaks JSON only);
#   - before that load, on each server, after 20 one-row requests to warm
#     up both ends, one request of 3, 9, 24, 37 and 50 rows (batch sizes the
#     server has not seen) and then 30 more at that size
#     (bench/serve_client.js first): the first one's time against the
#     median of the others. The
#     outputs of spore and Node for those requests are compared. One first
#     request is one sample on a shared machine, so the target is checked on
#     the median ratio over the five sizes, and the worst is shown beside it.
# The targets (issue 24): at concurrency 64, spore >= 2x Node's req/s with
# a p99 no worse; batching >= 3x batching off; first <= 2x warm.
#
# Needs Go, node and npm, and wrk; it installs what is missing:
#   wrk:          apt-get install -y wrk   (as root; run it by hand otherwise)
#   ONNX Runtime: npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
#                 (ORT_DIR, default bench/ort, git-ignored)
# Ports on 127.0.0.1: SERVE_PORT (default 18000, spore's HTTP; its gRPC on
# the next one) and NODE_PORT (default 18101, and the next one for the
# second Node server); the script refuses to start on a port in use.
# SERVE_DEBUG_NODE_AS_SPORE=1 puts a Node server in spore's place, to debug
# this script without spore serve; its figures say nothing about spore.
set -euo pipefail
if [ $# -gt 0 ]; then
  # It takes no arguments; its settings are the variables above.
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
  [ "$1" = --help ] || [ "$1" = -h ]
  exit
fi
cd "$(dirname "$0")/.."
secs=${SERVE_SECONDS:-10}
rounds=${SERVE_ROUNDS:-2}
instances=${SERVE_INSTANCES:-1}
delay=${SERVE_QUEUE_DELAY_US:-500}
ortdir=${ORT_DIR:-bench/ort}
sport=${SERVE_PORT:-18000}
nport=${NODE_PORT:-18101}
out=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do
    kill "$p" 2> /dev/null || true
    wait "$p" 2> /dev/null || true
  done
  rm -rf "$out"
}
trap cleanup EXIT
die() {
  echo "serve.sh: $*" >&2
  exit 1
}

# What it needs, installed when missing.
for tool in go node npm; do
  command -v "$tool" > /dev/null || die "$tool is needed and not found"
done
if ! command -v wrk > /dev/null; then
  [ "$(id -u)" = 0 ] || die "wrk is needed: apt-get install -y wrk (as root)"
  echo "installing wrk..." >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk > /dev/null || {
    apt-get update -qq > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk > /dev/null
  } || die "could not install wrk (apt-get install -y wrk)"
fi
if [ ! -d "$ortdir/node_modules/onnxruntime-node" ]; then
  echo "installing onnxruntime-node 1.30.0 into $ortdir..." >&2
  npm install --prefix "$ortdir" --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30.0 > /dev/null ||
    die "could not install onnxruntime-node (npm install --prefix $ortdir --ignore-scripts onnxruntime-node@1.30.0)"
fi
ortdir=$(cd "$ortdir" && pwd)
for p in "$sport" $((sport + 1)) "$nport" $((nport + 1)); do
  if (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null; then
    die "port $p on 127.0.0.1 is in use (set SERVE_PORT or NODE_PORT)"
  fi
done

echo "building spore..." >&2
go build -o "$out/spore" ./cmd/spore
mkdir -p "$out/models" "$out/res"
"$out/spore" onnx export --model mlp --dynamic-batch --out "$out/models/mlp.onnx" > /dev/null
cp onnx/testdata/torch/cnn.onnx "$out/models/cnn.onnx"

# The repository spore serves, in Triton's layout.
repo=$out/repo
model() { # NAME FILE MAX_BATCH
  mkdir -p "$repo/$1/1"
  cp "$out/models/$2" "$repo/$1/1/model.onnx"
  printf '{"max_batch_size": %d, "max_queue_delay_microseconds": %d, "instances": %d}\n' "$3" "$delay" "$instances" > "$repo/$1/config.json"
}
model mlp mlp.onnx 64
model cnn cnn.onnx 64
model mlp_unbatched mlp.onnx 0
node bench/serve_client.js body 1 > "$out/body.json"
binlen=$(node bench/serve_client.js binbody 1 "$out/body.bin")

# wait_ready PID URL LOG: polls URL until it answers 200; fails if the
# process exits first or 120 s pass.
wait_ready() {
  for _ in $(seq 1200); do
    kill -0 "$1" 2> /dev/null || {
      tail -20 "$3" >&2
      die "the server logging to $3 exited before it was ready"
    }
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$2" || true)" = 200 ]; then return 0; fi
    sleep 0.1
  done
  tail -20 "$3" >&2
  die "$2 was not ready after 120 s"
}

echo "starting spore serve and the Node servers..." >&2
if [ "${SERVE_DEBUG_NODE_AS_SPORE:-}" = 1 ]; then
  # Debugging the harness only: a third Node server stands in for spore.
  NODE_PATH="$ortdir/node_modules" node bench/ort_server.js --port "$sport" --threads 2 \
    mlp="$out/models/mlp.onnx" cnn="$out/models/cnn.onnx" mlp_unbatched="$out/models/mlp.onnx" > "$out/spore.log" 2>&1 &
else
  "$out/spore" serve --model-repository "$repo" --http "127.0.0.1:$sport" --grpc "127.0.0.1:$((sport + 1))" > "$out/spore.log" 2>&1 &
fi
pids+=($!)
spid=$!
for t in 1 2; do
  NODE_PATH="$ortdir/node_modules" node bench/ort_server.js --port $((nport + t - 1)) --threads "$t" \
    mlp="$out/models/mlp.onnx" cnn="$out/models/cnn.onnx" > "$out/node$t.log" 2>&1 &
  pids+=($!)
  npid[$t]=$!
done
wait_ready "$spid" "http://127.0.0.1:$sport/v2/health/ready" "$out/spore.log"
for t in 1 2; do
  wait_ready "${npid[$t]}" "http://127.0.0.1:$((nport + t - 1))/v2/health/ready" "$out/node$t.log"
done
declare -A url=([spore]="http://127.0.0.1:$sport" [spore_off]="http://127.0.0.1:$sport"
  [spore_bin]="http://127.0.0.1:$sport" [spore_bin_off]="http://127.0.0.1:$sport" [node1t]="http://127.0.0.1:$nport" [node2t]="http://127.0.0.1:$((nport + 1))")

# First requests at new batch sizes, before any load has shown the
# servers another batch size.
for m in mlp cnn; do
  for s in spore node1t node2t; do
    echo "$m: first requests on $s..." >&2
    node bench/serve_client.js first "${url[$s]}/v2/models/$m/infer" 3 9 24 37 50 > "$out/res/first_${m}_$s.json"
  done
done

# run MODEL CONC SERVER [URL_MODEL [BODY...]]: one wrk cell after a
# warm-up; BODY is the JSON body unless given (the binary one and its
# header length).
run() {
  local target="${url[$3]}/v2/models/${4:-$1}/infer"
  local body=("$out/body.json")
  [ $# -gt 4 ] && body=("${@:5}")
  wrk -t1 -c"$2" -d1s -s bench/serve_post.lua "$target" -- "${body[@]}" > /dev/null
  wrk -t1 -c"$2" -d"${secs}s" --timeout 10s -s bench/serve_post.lua "$target" -- "${body[@]}" |
    tail -1 >> "$out/res/${1}_c$2_$3.json"
}
for round in $(seq "$rounds"); do
  for m in mlp cnn; do
    for c in 1 8 64; do
      for s in spore node1t node2t; do
        echo "round $round/$rounds: $m, concurrency $c: $s..." >&2
        run "$m" "$c" "$s"
      done
    done
  done
  echo "round $round/$rounds: mlp, concurrency 64: spore with batching off..." >&2
  run mlp 64 spore_off mlp_unbatched
  echo "round $round/$rounds: mlp, concurrency 64: spore with binary bodies, batching on and off..." >&2
  run mlp 64 spore_bin mlp "$out/body.bin" "$binlen"
  run mlp 64 spore_bin_off mlp_unbatched "$out/body.bin" "$binlen"
done

node - "$out/res" "$secs" "$delay" "$rounds" "$instances" <<'JS'
'use strict';
const fs = require('fs');
const path = require('path');
const [dir, secs, delay, rounds, instances] = process.argv.slice(2);
const read = (name) => {
  const p = path.join(dir, name);
  return fs.existsSync(p) ? fs.readFileSync(p, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)) : [];
};
// cell is a cell's best round, by req/s.
const cell = (m, c, s) => read(`${m}_c${c}_${s}.json`).reduce((a, b) => (a && a.rps >= b.rps ? a : b), undefined);
const ms = (us) => (us / 1000).toFixed(2);
const x = (v) => `${v.toFixed(2)}x`;
const problems = [];
// Every round of every cell must have been answered with 200s only.
for (const f of fs.readdirSync(dir).filter((f) => /_c\d+_/.test(f)).sort()) {
  for (const [i, r] of read(f).entries()) {
    const sock = r.connect_errors + r.read_errors + r.write_errors;
    if (r.non2xx + sock + r.timeouts) {
      problems.push(`${f.replace('.json', '')} round ${i + 1}: ${r.non2xx} non-2xx, ${sock} socket errors, ${r.timeouts} timeouts of ${r.requests} requests`);
    }
  }
}
const rows = [];
const head = ['model', 'conc', 'server', 'req/s', 'p50 ms', 'p99 ms', 'spore/node req/s', 'spore/node p99'];
const checks = [];
for (const m of ['mlp', 'cnn']) {
  for (const c of [1, 8, 64]) {
    const spore = cell(m, c, 'spore');
    const nodes = ['node1t', 'node2t'].map((s) => [s, cell(m, c, s)]).filter(([, r]) => r);
    const [bestName, node] = nodes.reduce((a, b) => (b[1].rps > a[1].rps ? b : a));
    const show = (label, r, extra = ['', '']) => {
      rows.push([m, c, label, r.rps.toFixed(0), ms(r.p50_us), ms(r.p99_us), ...extra]);
    };
    show('spore', spore, [x(spore.rps / node.rps), x(spore.p99_us / node.p99_us)]);
    for (const [s, r] of nodes) show(`node ORT ${s.slice(4)}${s === bestName ? ' *' : ''}`, r);
    if (c === 64) {
      checks.push([`${m} c64: spore req/s >= 2x Node's`, spore.rps / node.rps, spore.rps >= 2 * node.rps]);
      checks.push([`${m} c64: spore p99 no worse than Node's`, spore.p99_us / node.p99_us, spore.p99_us <= node.p99_us]);
    }
    if (m === 'mlp' && c === 64) {
      const off = cell(m, c, 'spore_off');
      show('spore, batching off', off, [x(spore.rps / off.rps) + ' on/off', '']);
      checks.push(['mlp c64: batching >= 3x batching off (req/s)', spore.rps / off.rps, spore.rps >= 3 * off.rps]);
      const bin = cell(m, c, 'spore_bin');
      const binOff = cell(m, c, 'spore_bin_off');
      show('spore, binary body', bin);
      show('spore, binary, batching off', binOff, [x(bin.rps / binOff.rps) + ' on/off', '']);
    }
  }
}
const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const line = (r) => r.map((v, i) => (i < 3 ? String(v).padEnd(width[i]) : String(v).padStart(width[i]))).join('  ');
console.log(`spore serve vs ONNX Runtime 1.30 under Node, v2 JSON infer, one image a request; wrk 1 thread, ${secs} s a cell, best of ${rounds} rounds`);
console.log(`spore: max_batch_size 64, max_queue_delay ${delay} us, ${instances} instance(s); node: one session, 1 or 2 intra-op threads (* the better, which the ratios use)\n`);
console.log(line(head));
for (const r of rows) console.log(line(r));

console.log('\nfirst request at a new batch size vs the median of 30 warm ones at that size (ms)');
const fhead = ['model', 'batch', 'server', 'first', 'warm', 'first/warm', 'max |spore - node|'];
const frows = [];
for (const m of ['mlp', 'cnn']) {
  const spore = read(`first_${m}_spore.json`);
  for (const s of ['spore', 'node1t', 'node2t']) {
    for (const r of read(`first_${m}_${s}.json`)) {
      let diff = '';
      if (s === 'spore') {
        const ref = read(`first_${m}_node1t.json`).find((n) => n.batch === r.batch);
        if (ref) {
          const a = r.outputs[0].data;
          const b = ref.outputs[0].data;
          let d = a.length === b.length ? 0 : Infinity;
          for (let i = 0; i < a.length && i < b.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
          diff = d.toExponential(1);
          if (!(d < 1e-4)) problems.push(`${m} batch ${r.batch}: spore's output differs from Node's by ${d}`);
        }
      }
      frows.push([m, r.batch, s === 'spore' ? 'spore' : `node ORT ${s.slice(4)}`, ms(r.first_us), ms(r.warm_us), x(r.first_us / r.warm_us), diff]);
    }
  }
  if (spore.length) {
    const ratios = spore.map((r) => r.first_us / r.warm_us).sort((a, b) => a - b);
    const med = ratios[ratios.length >> 1];
    checks.push([`${m}: spore's first request at a new batch size <= 2x a warm one (median of ${ratios.length} sizes; worst ${x(ratios[ratios.length - 1])})`, med, med <= 2]);
  }
}
const fw = fhead.map((h, i) => Math.max(h.length, ...frows.map((r) => String(r[i]).length)));
console.log(fhead.map((h, i) => (i < 3 ? h.padEnd(fw[i]) : h.padStart(fw[i]))).join('  '));
for (const r of frows) console.log(r.map((v, i) => (i < 3 ? String(v).padEnd(fw[i]) : String(v).padStart(fw[i]))).join('  '));

console.log('\ntargets (issue 24)');
for (const [what, ratio, ok] of checks) console.log(`  ${ok ? 'met   ' : 'MISSED'}  ${what}: ${x(ratio)}`);
for (const p of problems) console.log(`problem: ${p}`);
JS
