#!/usr/bin/env bash
# Times torchvision's image models, imported from ONNX, in spore's Graph
# mode against ONNX Runtime and PyTorch eager, side by side in one run, and
# prints ms per call with the ratios. Absolute times drift between runs on
# shared machines; quote the ratios.
#
#   bench/vision.sh [infer|train|all|profile] [ORT_DIR]      (default: infer)
#
# infer  resnet18, mobilenet_v3_large and efficientnet_b0 at batch 1 and
#        16, vit_b_16 at batch 1 and 4 (float32, 3x224x224, N(0, 1) images
#        of seed 0): spore run --bench (Graph mode), ONNX Runtime
#        (bench/ort_onnx.js, every graph optimisation on) and PyTorch eager
#        under torch.no_grad (bench/torch_vision.py --infer). The last
#        columns compare spore's outputs with ONNX Runtime's
#        (onnx/testdata/ortrun.js) on the same input: the largest absolute
#        difference, and that over ONNX Runtime's largest |value|; a row
#        whose relative difference is above TOL is marked MISMATCH and the
#        script exits with status 1, so that a fast wrong answer cannot pass.
# train  one training step of resnet18 at batch 16: forward in training
#        mode (BatchNorm on the batch's statistics), softmax cross-entropy,
#        backward and SGD with momentum 0.9, lr 0.01; spore's is the model
#        imported from ONNX (exported in training mode) trained in Graph mode
#        through nn.TrainOneStepCell (bench/visionstep), PyTorch's the same
#        network and weights in eager mode (bench/torch_vision.py --train).
#        Both report their first two steps' losses (before and after one
#        update) on the same images, which must agree to TOL as well.
# all    infer, then train.
# profile  a CPU profile of spore's Graph-mode inference of each model at
#        batch 1 (bench/visionstep -cpuprofile, GOMAXPROCS=PROFILE_THREADS,
#        default 1), written to PROFILE_DIR (default bench/profiles,
#        git-ignored) as MODEL_bB.prof, and its top 15 functions by flat
#        time (go tool pprof -top).
#
# Every side takes its best of 1 and 2 threads and of REPS repetitions,
# which alternate between the sides: spore at GOMAXPROCS=1 and 2 (its
# kernels' worker count follows GOMAXPROCS, see internal/kernels/parallel),
# ONNX Runtime at 1 and 2 intra-op threads, PyTorch at
# torch.set_num_threads(1 and 2) with OMP_NUM_THREADS to match. Ratios are
# of times: spore/ORT below 1 means spore is faster.
#
# Settings, from the environment:
#   MODELS  comma-separated subset of the models (default: all four; train
#           mode times resnet18 unless MODELS names another)
#   BATCH   comma-separated batch sizes for every model, instead of the
#           defaults above (train: default 16)
#   REPS    repetitions of each measurement (default 2)
#   CALLS   calls per timing round (default: a number per model and batch
#           that keeps a round near a second on a loaded 2-core machine)
#   ROUNDS  timing rounds per spore and PyTorch run (default 3; ONNX
#           Runtime's script runs 5)
#   TOL     the largest relative difference from ONNX Runtime, and between
#           the training losses, that passes (default 1e-3)
#   KEEP    a folder to copy the raw JSON lines into
#   PROFILE_THREADS, PROFILE_DIR  see profile
# e.g. MODELS=resnet18 BATCH=1 REPS=1 bench/vision.sh
#
# The models are exported by bench/torch_vision.py --onnx into bench/models
# (git-ignored; reused when present, delete it to export again): opset 17,
# dynamic batch, random initialisation from torch.manual_seed(0) (vit_b_16's
# zero-initialised head drawn at random, so that its outputs are not all 0).
# Needs, besides Go:
#   /usr/bin/python3 with torch, torchvision and numpy:
#                 apt-get install -y python3-torch python3-torchvision python3-numpy
#   ONNX Runtime: npm install --prefix bench/ort --ignore-scripts onnxruntime-node@1.30.0
#                 (ORT_DIR defaults to bench/ort; without it the ONNX Runtime
#                 columns, and the output check, are "-")
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-infer}
case $what in
  infer | train | all | profile) ;;
  -h | --help) sed -n '2,65p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: bench/vision.sh [infer|train|all|profile] [ORT_DIR] (see --help)" >&2; exit 2 ;;
esac
ortdir=${2:-bench/ort}
reps=${REPS:-2}
rounds=${ROUNDS:-3}
tol=${TOL:-1e-3}
all_models=resnet18,mobilenet_v3_large,efficientnet_b0,vit_b_16
for v in "$reps" "$rounds" ${CALLS:+"$CALLS"}; do
  case $v in
    '' | *[!0-9]* | 0) echo "vision.sh: REPS, ROUNDS and CALLS must be positive numbers" >&2; exit 2 ;;
  esac
done
if [ -n "${BATCH:-}" ] && ! [[ "$BATCH" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
  echo "vision.sh: BATCH=$BATCH is not a comma-separated list of positive sizes" >&2
  exit 2
fi
models=${MODELS:-}
for m in ${models//,/ }; do
  case ,$all_models, in
    *,"$m",*) ;;
    *) echo "vision.sh: unknown model $m in MODELS (want some of $all_models)" >&2; exit 2 ;;
  esac
done
if ! /usr/bin/python3 -c 'import numpy, torch, torchvision' 2>/dev/null; then
  echo "vision.sh: /usr/bin/python3 with numpy, torch and torchvision is needed (apt-get install -y python3-torch python3-torchvision python3-numpy)" >&2
  exit 1
fi
ort=yes
if [ ! -d "$ortdir/node_modules/onnxruntime-node" ]; then
  echo "ONNX Runtime: not installed in $ortdir, skipped" >&2
  ort=no
elif ! command -v node > /dev/null; then
  echo "ONNX Runtime: node not found, skipped" >&2
  ort=no
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p bench/models

# export MODEL [training]: bench/models/MODEL.onnx (or MODEL_train.onnx).
export_model() {
  local f="bench/models/$1${2:+_train}.onnx"
  if [ ! -s "$f" ]; then
    echo "exporting $f..." >&2
    /usr/bin/python3 bench/torch_vision.py --model "$1" --onnx "$f" ${2:+--onnx-training} 2> "$out/export.err" ||
      { cat "$out/export.err" >&2; exit 1; }
  fi
}

# input B: $out/x_bB.npy, B standard-normal images of seed 0.
input() {
  [ -f "$out/x_b$1.npy" ] ||
    /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.RandomState(0).randn($1, 3, 224, 224).astype('<f4'))" "$out/x_b$1.npy"
}

# calls MODEL B: the default calls per timing round.
calls() {
  if [ -n "${CALLS:-}" ]; then echo "$CALLS"; return; fi
  case $1 in
    vit_b_16) echo 1 ;;
    *) if [ "$2" -le 2 ]; then echo 4; else echo 1; fi ;;
  esac
}

echo "building spore and bench/visionstep..." >&2
go build -o "$out/spore" ./cmd/spore
go build -o "$out/visionstep" ./bench/visionstep

if [ "$what" = profile ]; then
  pdir=${PROFILE_DIR:-bench/profiles} pt=${PROFILE_THREADS:-1}
  mkdir -p "$pdir"
  models=${MODELS:-$all_models} batches=${BATCH:-1}
  for m in ${models//,/ }; do
    for b in ${batches//,/ }; do
      export_model "$m"
      input "$b"
      prof=$pdir/${m}_b$b.prof
      echo "profiling $m, batch $b, $pt thread(s)..." >&2
      GOMAXPROCS=$pt "$out/visionstep" -model "bench/models/$m.onnx" -mode infer -input "$out/x_b$b.npy" \
        -calls "$(calls "$m" "$b")" -rounds "$rounds" -warmup 1 -cpuprofile "$prof" > "$out/profile.json"
      echo "== $m, batch $b, Graph mode, $pt thread(s): $(/usr/bin/python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["us_per_call"] / 1000, 2))' "$out/profile.json") ms per call; $prof"
      go tool pprof -top -nodecount=15 "$prof" 2> /dev/null | sed -n '/^Showing\|flat%/,$p'
      echo
    done
  done
  exit 0
fi

if [ "$what" != train ]; then
  jobs=()
  models=${MODELS:-$all_models}
  for m in ${models//,/ }; do
    batches=${BATCH:-1,16}
    [ -z "${BATCH:-}" ] && [ "$m" = vit_b_16 ] && batches=1,4
    for b in ${batches//,/ }; do jobs+=("$m:$b"); done
  done
  for j in "${jobs[@]}"; do
    m=${j%%:*} b=${j##*:}
    export_model "$m"
    input "$b"
    model=bench/models/$m.onnx x=$out/x_b$b.npy tag=${m}_b$b n=$(calls "$m" "$b")
    for rep in $(seq "$reps"); do
      echo "$m, batch $b, repetition $rep/$reps: spore..." >&2
      for t in 1 2; do
        outflag=()
        [ "$rep" = 1 ] && [ "$t" = 1 ] && outflag=(--output "$out/spore_out_$tag.npz")
        GOMAXPROCS=$t "$out/spore" run "$model" --input "$x" --bench "$n" --rounds "$rounds" --warmup 1 \
          --json "${outflag[@]}" >> "$out/spore_$tag.json"
      done
      if [ "$ort" = yes ]; then
        echo "$m, batch $b, repetition $rep/$reps: ONNX Runtime..." >&2
        NODE_PATH="$ortdir/node_modules" node bench/ort_onnx.js "$model" "$x" "$n" >> "$out/ort_$tag.json"
      fi
      echo "$m, batch $b, repetition $rep/$reps: PyTorch..." >&2
      for t in 1 2; do
        OMP_NUM_THREADS=$t /usr/bin/python3 bench/torch_vision.py --model "$m" --infer --input "$x" \
          --threads "$t" --calls "$n" --rounds "$rounds" >> "$out/torch_$tag.json"
      done
    done
    if [ "$ort" = yes ]; then
      mkdir -p "$out/ort_out_$tag"
      NODE_PATH="$ortdir/node_modules" node onnx/testdata/ortrun.js "$model" "$out/ort_out_$tag" "input=$x" > /dev/null
    fi
  done
  printf '%s\n' "${jobs[@]}" > "$out/infer_jobs"
fi

if [ "$what" != infer ]; then
  models=${MODELS:-resnet18} batches=${BATCH:-16}
  for m in ${models//,/ }; do
    for b in ${batches//,/ }; do
      export_model "$m" training
      input "$b"
      model=bench/models/${m}_train.onnx x=$out/x_b$b.npy tag=${m}_b$b n=${CALLS:-1}
      for rep in $(seq "$reps"); do
        echo "training $m, batch $b, repetition $rep/$reps: spore..." >&2
        for t in 1 2; do
          GOMAXPROCS=$t "$out/visionstep" -model "$model" -mode train -input "$x" -calls "$n" \
            -rounds "$rounds" -warmup 1 >> "$out/spore_train_$tag.json"
        done
        echo "training $m, batch $b, repetition $rep/$reps: PyTorch..." >&2
        for t in 1 2; do
          OMP_NUM_THREADS=$t /usr/bin/python3 bench/torch_vision.py --model "$m" --train --input "$x" \
            --threads "$t" --calls "$n" --rounds "$rounds" >> "$out/torch_train_$tag.json"
        done
      done
      echo "$m:$b" >> "$out/train_jobs"
    done
  done
fi

if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  cp "$out"/*.json "$KEEP"/
fi

/usr/bin/python3 - "$out" "$tol" "$reps" <<'PY'
import json, os, sys

import numpy as np

d, tol, reps = sys.argv[1], float(sys.argv[2]), sys.argv[3]

def rows(name):
    p = os.path.join(d, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []

def jobs(name):
    p = os.path.join(d, name)
    return [l.strip().split(":") for l in open(p) if l.strip()] if os.path.exists(p) else []

def best(rs, get):
    """The fastest (µs, threads) of the rows get can read, or None."""
    vals = [(get(r), r.get("threads")) for r in rs]
    vals = [v for v in vals if v[0] is not None]
    return min(vals) if vals else None

def agreement(tag):
    """(max |spore - ORT|, that / max |ORT|) over the outputs, or None."""
    ref = os.path.join(d, f"ort_out_{tag}")
    got = os.path.join(d, f"spore_out_{tag}.npz")
    if not os.path.isdir(ref) or not os.path.exists(got):
        return None
    worst, rel = 0.0, 0.0
    with np.load(got) as z:
        for name in z.files:
            want = np.load(os.path.join(ref, name + ".npy"))
            diff = float(np.abs(z[name].astype(np.float64) - want).max())
            worst = max(worst, diff)
            rel = max(rel, diff / max(float(np.abs(want).max()), 1e-30))
    return worst, rel

ms = lambda v: "-" if v is None else f"{v[0] / 1000:.2f} ({v[1]}t)"
ratio = lambda a, b: "-" if a is None or b is None else f"{a[0] / b[0]:.2f}"
bad = []

inf = jobs("infer_jobs")
if inf:
    print(f"torchvision models imported from ONNX, fp32, ms per call (threads of the best setting); "
          f"each side its best of 1 and 2 threads and {reps} repetition(s)")
    print("ratios are of times: below 1, spore's Graph mode is faster than the peer\n")
    cols = ["spore Graph", "ONNX Runtime", "PyTorch eager", "spore/ORT", "spore/PyTorch", "max|spore-ORT|", "rel", ""]
    print(f"{'model':19}{'batch':>6}" + "".join(f"{c:>15}" for c in cols))
    for m, b in inf:
        tag = f"{m}_b{b}"
        spore = best(rows(f"spore_{tag}.json"), lambda r: r.get("bench", {}).get("us_per_call"))
        ort = best(rows(f"ort_{tag}.json"), lambda r: r.get("infer_us"))
        torch = best(rows(f"torch_{tag}.json"), lambda r: r.get("infer_us"))
        agree = agreement(tag)
        verdict = "-" if agree is None else "ok" if agree[1] <= tol else "MISMATCH"
        if agree is not None and agree[0] == 0:
            # All-zero outputs on both sides match whatever spore computes.
            verdict = "vacuous"
            print(f"warning: {m} batch {b}: spore's and ONNX Runtime's outputs are identical; "
                  f"if they are all zero the check tells nothing (re-export the model)", file=sys.stderr)
        if verdict == "MISMATCH":
            bad.append(f"{m} batch {b}: spore's outputs differ from ONNX Runtime's by {agree[1]:.1e} of its largest value")
        cells = [ms(spore), ms(ort), ms(torch), ratio(spore, ort), ratio(spore, torch),
                 "-" if agree is None else f"{agree[0]:.1e}", "-" if agree is None else f"{agree[1]:.1e}", verdict]
        print(f"{m:19}{b:>6}" + "".join(f"{c:>15}" for c in cells))
    print(f"(rel: max|spore-ORT| over ONNX Runtime's largest |output|; ok up to TOL={tol:g})")

tr = jobs("train_jobs")
if tr:
    if inf:
        print()
    print("training step (forward in training mode, cross-entropy, backward, SGD momentum 0.9), fp32, ms per step;")
    print(f"spore Graph mode (nn.TrainOneStepCell on the model imported from ONNX) vs PyTorch eager; "
          f"best of 1 and 2 threads and {reps} repetition(s)\n")
    cols = ["spore Graph", "PyTorch eager", "spore/PyTorch", "loss 1 (spore)", "loss 1 (torch)", "loss 2 (spore)", "loss 2 (torch)", ""]
    print(f"{'model':19}{'batch':>6}" + "".join(f"{c:>15}" for c in cols))
    for m, b in tr:
        tag = f"{m}_b{b}"
        sr, tr_ = rows(f"spore_train_{tag}.json"), rows(f"torch_train_{tag}.json")
        spore = best(sr, lambda r: r.get("us_per_call"))
        torch = best(tr_, lambda r: r.get("train_step_us"))
        losses = [sr[0].get("first_loss"), tr_[0].get("first_loss"), sr[0].get("second_loss"), tr_[0].get("second_loss")] \
            if sr and tr_ else [None] * 4
        verdict = "-"
        if None not in losses:
            off = max(abs(losses[0] - losses[1]) / abs(losses[1]), abs(losses[2] - losses[3]) / abs(losses[3]))
            verdict = "ok" if off <= tol else "MISMATCH"
            if verdict == "MISMATCH":
                bad.append(f"training {m} batch {b}: spore's losses {losses[0]:.6g}, {losses[2]:.6g} differ from PyTorch's {losses[1]:.6g}, {losses[3]:.6g}")
        cells = [ms(spore), ms(torch), ratio(spore, torch)] + ["-" if v is None else f"{v:.6f}" for v in losses] + [verdict]
        print(f"{m:19}{b:>6}" + "".join(f"{c:>15}" for c in cells))
for msg in bad:
    print("MISMATCH:", msg)
sys.exit(1 if bad else 0)
PY
