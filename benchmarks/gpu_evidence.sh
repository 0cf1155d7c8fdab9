#!/usr/bin/env bash
# The GPU evidence in one unattended command, each part under its own time
# limit, its results packed into OUT/gpu_evidence.tar.gz as soon as it ends
# (so a part that overruns, or the command's own limit, loses only itself):
#
#   1. the benchmark suite (python -m benchmarks), unpinned, one run of each
#      benchmark in a fresh process, at the GPU settings below; its records
#      go to records/;
#   2. the throughput of the paper-size configurations: a few hundred
#      training steps each of ACT sort (LSTM-512, M 100), VC char-PTB
#      (VCRNN-1024) and EI-REHN PTB (D_h 1200, D_z 600, R_max 4), read off
#      metrics.jsonl's steps_per_sec (compilation and evaluation excluded);
#   3. ACT addition at the paper's size (LSTM-512, M 20), a short first
#      segment whose rate sets how many steps the time left allows, then
#      the same run resumed to that step: a run experiments.record keeps.
#
# Usage (from the repository root):
#
#   bash benchmarks/gpu_evidence.sh OUT [SECONDS] [quick]
#
# SECONDS (default 540) is the whole command's budget: part 3 takes what
# parts 1 and 2 leave. PARTS (default "suite throughput addition") names
# the parts to run, BENCHES (default every benchmark below) the suite's. `quick` runs tiny settings on stand-in sizes, the
# smoke test on a CPU (a minute or two). Corpora are read from $DATA
# (default .gpu/data, a folder holding ptb/ in Mikolov's layout); wheels in
# .whl/ are installed first (packages the GPU machine lacks); a git bundle
# .gpu/repo.bundle (git bundle create .gpu/repo.bundle HEAD, from a clean
# tree) makes the copy a checkout of its commit, so that manifests and
# records name it. docs/performance.md, "On a GPU", says
# how the results are turned into pages.
set -u
OUT=$(mkdir -p "${1:?usage: gpu_evidence.sh OUT [SECONDS] [quick]}" && cd "$1" && pwd)
BUDGET=${2:-540}
MODE=${3:-full}
DATA=${DATA:-.gpu/data}
WORK=${WORK:-/tmp/gpu_evidence}
T0=$SECONDS
PARTS=${PARTS:-suite throughput addition}
BENCHES=${BENCHES:-flax_rnn vc_inference skip_inference act_loop rehn_depth depth_cost}
want() { [[ " $PARTS " == *" $1 "* ]]; }
export PYTHONUNBUFFERED=1
mkdir -p "$WORK/records" "$WORK/logs" "$WORK/runs"
LOG=$OUT/log.txt

say() { echo "[$((SECONDS - T0)) s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET - (SECONDS - T0))); }

pack() {
  # Everything but checkpoints and TensorBoard events, small enough to come
  # back from the device machine.
  tar -C "$WORK" -czf "$OUT/gpu_evidence.tar.gz" \
    --exclude=checkpoints --exclude=tensorboard . 2>/dev/null
}

# part NAME CAP COMMAND...: COMMAND under min(CAP, time left - RESERVE).
RESERVE=${RESERVE:-15}
part() {
  local name=$1 cap=$2 limit
  shift 2
  limit=$(( $(left) - RESERVE ))
  (( cap < limit )) && limit=$cap
  if (( limit < 10 )); then
    say "$name: skipped (${limit} s left)"
    return
  fi
  say "$name: up to ${limit} s: $*"
  timeout --signal=INT --kill-after=10 "$limit" "$@" \
    > "$WORK/logs/$name.txt" 2>&1
  say "$name: exit $? ($(tail -n 1 "$WORK/logs/$name.txt" | cut -c1-160))"
  pack
}

# --- setup ------------------------------------------------------------------
. "$(dirname "$0")/gpu_setup.sh"
python3 -c 'import jax, flax, optax; print("jax", jax.__version__, "flax",
flax.__version__, "optax", optax.__version__, jax.devices())' 2>&1 \
  | tee -a "$LOG"
if [[ $MODE == quick ]]; then
  MACHINE=${MACHINE:-smoke}
else
  MACHINE=${MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader \
                       2>/dev/null | head -n 1)}
fi

# --- 1. the benchmark suite -------------------------------------------------
declare -A FLAGS=(
  [flax_rnn]='--sizes=256x64x100,1024x64x100 --dtypes=float32,bfloat16'
  [vc_inference]='' [skip_inference]=''
  [act_loop]='--repeats=10' [rehn_depth]='--repeats=10'
  [depth_cost]='--batch=64 --time=256 --features=512 --heads=8 --repeats=10')
declare -A CAP=([flax_rnn]=60 [vc_inference]=50 [skip_inference]=50
                [act_loop]=90 [rehn_depth]=50 [depth_cost]=480)
want suite || BENCHES=''
for name in $BENCHES; do
  args=(--only=$name --repeats=1 --affinity=unpinned --machine="$MACHINE"
        --record_dir="$WORK/records" --out="$WORK/suite_$name")
  if [[ $MODE == quick ]]; then
    args+=(--quick)
  elif [[ -n ${FLAGS[$name]} ]]; then
    args+=("--flags=$name=${FLAGS[$name]}")
  fi
  part "bench_$name" "${CAP[$name]}" python3 -m benchmarks "${args[@]}"
done

# --- 2. throughput of the paper-size configurations -------------------------
# Evaluations every E steps (steps_per_sec is each window's rate, the first
# step's compilation excluded), no checkpoint before the last step.
if [[ $MODE == quick ]]; then
  STEPS=6 E=3
  SIZE_ACT=(--hidden_size=16 --max_steps=5 --eval_batch_size=8)
  SIZE_VC=(--hidden_size=16 --seq_len=10 --max_symbols=20000
           --eval_batch_size=8)
  SIZE_REHN=(--hidden_size=16 --max_depth=2 --eval_batch_size=512)
else
  STEPS=150 E=50
  SIZE_ACT=() SIZE_VC=() SIZE_REHN=()
fi
common() {  # the flags every throughput and paper-size run takes
  echo --workdir="$WORK/runs/$1" --checkpoint_every=1000000
}
if want throughput; then
part throughput_act_sort 35 python3 -m experiments.act_sort --tau=0.001 \
  --steps=$STEPS --eval_every=$E "${SIZE_ACT[@]}" $(common act_sort)
part throughput_vc_ptb 40 python3 -m experiments.vc_ptb --data_dir="$DATA" \
  --steps=$STEPS --eval_every=$E "${SIZE_VC[@]}" $(common vc_ptb)
part throughput_rehn_ptb 45 python3 -m experiments.rehn_ptb \
  --data_dir="$DATA" --steps=$STEPS --eval_every=$E "${SIZE_REHN[@]}" \
  $(common rehn_ptb)
fi

# --- 3. ACT addition at the paper's size, for the time left -----------------
# A first segment of FIRST steps measures the rate; the run then resumes to
# as many steps as the time left allows (at 70% of that rate: evaluations,
# the resumed process's compilation), in whole evaluation intervals.
if want addition; then
if [[ $MODE == quick ]]; then FIRST=4 EVAL=2 MOST=8; else FIRST=100 EVAL=500 MOST=1000000; fi
ADD=(python3 -m experiments.act_addition --tau=0.001 "${SIZE_ACT[@]}"
     --workdir="$WORK/runs/act_addition")
part act_addition_first 60 "${ADD[@]}" --steps=$FIRST --eval_every=$FIRST
RATE=$(python3 - "$WORK/runs/act_addition/metrics.jsonl" <<'EOF'
import json, sys
try:
  rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
  print(rows[-1]['steps_per_sec'] or 0)
except (OSError, LookupError, ValueError):
  print(0)
EOF
)
TOTAL=$(python3 -c "
left, rate, first, every = $(left) - $RESERVE - 25, $RATE, $FIRST, $EVAL
print(min($MOST, first + max(0, int(0.7 * rate * left) // every) * every))")
say "act_addition: $RATE steps/s after $FIRST steps; resuming to $TOTAL"
if (( TOTAL > FIRST )); then
  part act_addition "$(left)" "${ADD[@]}" --steps=$TOTAL --eval_every=$EVAL
fi
fi
nvidia-smi >> "$WORK/logs/nvidia-smi.txt" 2>&1
cp "$LOG" "$WORK/logs/driver.txt"
pack
say "done; $(du -h "$OUT/gpu_evidence.tar.gz" | cut -f1) in $OUT/gpu_evidence.tar.gz"
