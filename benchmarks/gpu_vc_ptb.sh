#!/usr/bin/env bash
# VC char-PTB at Table 3's own width on one GPU, in one unattended command:
# Elman-1024, Elman-768 and VCRNN-1024 at two targets (--target=0.5 and 0.3,
# the CPU frontier's --penalty_weight=0.1, --sharpness_every=800; VCGRU-1024
# with MODELS=vcgru1024_m0.5), seed SEED, trained side by
# side for the same number of updates. A first segment of FIRST steps, all
# three at once, measures the slowest rate; all three then resume to the
# step count the time left allows (in whole evaluation intervals, at most
# the binary's default 20 epochs); STEPS=N trains to N in one phase instead,
# MODELS="vcrnn1024_m0.5" a subset. Workdirs (no checkpoints) are packed into
# OUT/vc1024.tar.gz after each phase; experiments.record turns each model's
# workdir into docs/results/records/vc/frontier_ptb1024_<model>.
#
#   git bundle create .gpu/repo.bundle HEAD      # from a clean tree
#   mkdir -p .gpu/data && cp -r ../shared/data/ptb .gpu/data/
#   bash benchmarks/gpu_vc_ptb.sh OUT 540        # on the GPU machine
#   bash benchmarks/gpu_vc_ptb.sh OUT 300 quick  # the CPU smoke test
#
# Setup as benchmarks/gpu_evidence.sh: wheels in .whl/ are installed first,
# the bundle makes the copy a checkout of its commit.
set -u
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
BUDGET=${2:-520}
MODE=${3:-full}
DATA=${DATA:-.gpu/data}
WORK=${WORK:-/tmp/vc1024}
T0=$SECONDS
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p "$WORK/runs" "$WORK/logs"
LOG=$OUT/log.txt
say() { echo "[$((SECONDS - T0)) s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET - (SECONDS - T0))); }
pack() { tar -C "$WORK" -czf "$OUT/vc1024.tar.gz" --exclude=checkpoints \
           --exclude=tensorboard . 2>/dev/null; }

. "$(dirname "$0")/gpu_setup.sh"
# MPS lets the three processes' kernels share the GPU instead of
# time-slicing; kept only if a JAX process still starts under it.
if [[ $MODE != quick ]] && command -v nvidia-cuda-mps-control > /dev/null; then
  nvidia-cuda-mps-control -d >> "$LOG" 2>&1 && say "MPS daemon started"
  if ! timeout 60 python3 -c 'import jax; print(jax.devices(), jax.numpy.ones(3).sum())' >> "$LOG" 2>&1; then
    echo quit | nvidia-cuda-mps-control; say "MPS off: JAX did not start under it"
  fi
else
  say "no MPS"
fi
python3 -c 'import jax, flax, optax; print("jax", jax.__version__, "flax",
flax.__version__, "optax", optax.__version__, jax.devices())' 2>&1 | tee -a "$LOG"

if [[ $MODE == quick ]]; then
  W1=16 W2=12 FIRST=6 EVAL=4 MOST=14 SIZE=(--seq_len=10 --max_symbols=20000 --eval_batch_size=8)
else
  W1=1024 W2=768 FIRST=400 EVAL=2000 MOST=31340 SIZE=()
fi
COMMON=(--data_dir="$DATA" --level=char --seed="${SEED:-0}" "${SIZE[@]}")
declare -A ARGS=(
  [elman$W1]="--cell=elman --hidden_size=$W1"
  [elman$W2]="--cell=elman --hidden_size=$W2"
  [vcrnn${W1}_m0.5]="--cell=vcrnn --hidden_size=$W1 --target=0.5 --sharpness_every=800 --penalty_weight=0.1"
  [vcrnn${W1}_m0.3]="--cell=vcrnn --hidden_size=$W1 --target=0.3 --sharpness_every=800 --penalty_weight=0.1"
  [vcgru${W1}_m0.5]="--cell=vcgru --hidden_size=$W1 --target=0.5 --sharpness_every=800 --penalty_weight=0.1")
# VCGRU-1024 only by name (MODELS=...): a fifth process would slow the four.
NAMES=(${MODELS:-elman$W1 elman$W2 vcrnn${W1}_m0.5 vcrnn${W1}_m0.3})

# phase STEPS EVERY LIMIT: every model to STEPS at once, each under LIMIT s.
phase() {
  local pids=() name
  for name in "${NAMES[@]}"; do
    timeout --signal=INT --kill-after=15 "$3" python3 -m experiments.vc_ptb \
      "${COMMON[@]}" ${ARGS[$name]} --steps="$1" --eval_every="$2" \
      --workdir="$WORK/runs/$name/seed=${SEED:-0}" >> "$WORK/logs/$name.txt" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; say "${NAMES[$i]} to $1: exit $? ($(tail -n 1 "$WORK/logs/${NAMES[$i]}.txt" | cut -c1-150))"
  done
  pack
}
if [[ -n ${STEPS:-} ]]; then   # a set length: one phase, no rate measured
  say "one phase to $STEPS steps: ${NAMES[*]}"
  phase "$STEPS" "$EVAL" $(( $(left) - 10 ))
  cp "$LOG" "$WORK/logs/driver.txt"; pack; say "done"; exit 0
fi
say "first segment: $FIRST steps"
phase "$FIRST" "$FIRST" $(( $(left) - 30 ))
RATE=$(python3 - ${#NAMES[@]} "$WORK"/runs/*/seed="${SEED:-0}"/metrics.jsonl <<'PY'
import json, sys
rates = []
for path in sys.argv[2:]:
  try:
    rows = [json.loads(l) for l in open(path) if l.strip()]
    rates.append(rows[-1]['steps_per_sec'] or 0)
  except (OSError, LookupError, ValueError):
    rates.append(0)
print(min(rates) if len(rates) == int(sys.argv[1]) else 0)
PY
)
# 0.8 of the slowest rate over the time left less the final evaluations.
TOTAL=$(python3 -c "
left, rate = $(left) - 70, $RATE
print(min($MOST, int($FIRST + 0.8 * rate * max(0, left)) // $EVAL * $EVAL))")
say "slowest rate $RATE steps/s; resuming all to $TOTAL"
if (( TOTAL > FIRST )); then
  phase "$TOTAL" "$EVAL" $(( $(left) - 10 ))
fi
nvidia-smi >> "$WORK/logs/nvidia-smi.txt" 2>&1
cp "$LOG" "$WORK/logs/driver.txt"
pack
say "done; $(du -h "$OUT/vc1024.tar.gz" | cut -f1)"
