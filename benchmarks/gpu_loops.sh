#!/usr/bin/env bash
# Halting loops that stay on the device, and seed populations: the GPU
# measurements in one unattended command, each part under its own time
# limit, its results packed into OUT/gpu_loops.tar.gz as soon as it ends.
#
# For ACT (uniform and tail: benchmarks.act_loop), EI-REHN
# (benchmarks.rehn_depth) and adaptive depth (benchmarks.depth_cost), each
# in a fresh process:
#
#   u1     the loop as it is: one continue test per step (the baseline);
#   u4     loops.LoopConfig(unroll=4): one continue test per 4 steps, the
#          steps after every row has halted discarded (exact);
#   cb     XLA's command buffers with on-device WHILE and CONDITIONAL
#          (--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL: the loop's
#          predicate stays on the device, the body a CUDA graph);
#   cb_u4  both (ACT only, last).
#
# Each benchmark times its loop against its oracle interleaved in the same
# process, so every variant's ratio (while/oracle) stands on its own; the
# variants differ in one factor each from u1. Each runs through the suite
# (python -m benchmarks --only=NAME, unpinned, one run in a fresh process),
# so that records/<variant>/<benchmark>.json is a record like the suite's,
# its flags and XLA_FLAGS in its provenance. Then seed populations
# (benchmarks.seed_population: P parity seeds vmapped into one train step,
# per-seed time against one seed alone).
#
# Usage (from the repository root):
#
#   bash benchmarks/gpu_loops.sh OUT [SECONDS] [quick]
#
# SECONDS (default 540) is the whole command's budget; PARTS (default every
# part, in the order below: ACT's first, each model's unrolled loop before
# its command buffers) chooses parts, so a later call can run what one left.
# A part stopped at its cap keeps its log (the tables printed so far) but
# writes no JSON. `quick`
# runs each benchmark's tiny settings, the smoke test on a CPU (a few
# minutes; the XLA flag is a no-op there). Wheels in .whl/ and a git bundle
# in .gpu/ are used as by gpu_evidence.sh (gpu_setup.sh).
set -u
: "${1:?usage: gpu_loops.sh OUT [SECONDS] [quick]}"
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
BUDGET=${2:-540}
MODE=${3:-full}
WORK=${WORK:-/tmp/gpu_loops}
T0=$SECONDS
ALL='act_u1 act_u4 act_cb population depth_u1 depth_u4 depth_cb rehn_u1
rehn_u4 rehn_cb act_cb_u4'
PARTS=${PARTS:-$ALL}
export PYTHONUNBUFFERED=1
mkdir -p "$WORK/results" "$WORK/records" "$WORK/logs"
LOG=$OUT/log.txt

say() { echo "[$((SECONDS - T0)) s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET - (SECONDS - T0))); }
pack() { tar -C "$WORK" -czf "$OUT/gpu_loops.tar.gz" . 2>/dev/null; }

RESERVE=${RESERVE:-10}
# part NAME CAP XLA_FLAGS COMMAND...: COMMAND under min(CAP, time left -
# RESERVE) with XLA_FLAGS set, its output in logs/NAME.txt.
part() {
  local name=$1 cap=$2 xla=$3 limit
  shift 3
  [[ " $(echo $PARTS) " == *" $name "* ]] || return 0
  limit=$(( $(left) - RESERVE ))
  (( cap < limit )) && limit=$cap
  if (( limit < 10 )); then
    say "$name: skipped (${limit} s left)"
    return
  fi
  say "$name: up to ${limit} s: XLA_FLAGS='$xla' $*"
  XLA_FLAGS="$xla" timeout --signal=INT --kill-after=10 "$limit" "$@" \
    > "$WORK/logs/$name.txt" 2>&1
  say "$name: exit $? ($(tail -n 1 "$WORK/logs/$name.txt" | cut -c1-160))"
  pack
}

. "$(dirname "$0")/gpu_setup.sh"
python3 -c 'import jax; print("jax", jax.__version__, jax.devices())' 2>&1 \
  | tee -a "$LOG"

CB='--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL'
if [[ $MODE == quick ]]; then
  MACHINE=${MACHINE:-smoke}
  ACT=() REHN=() DEPTH=() POP=(--quick)
  C_ACT=300 C_REHN=200 C_DEPTH=300 C_POP=300
else
  MACHINE=${MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader \
                       2>/dev/null | head -n 1)}
  # ACT at M 100 and the tail with and without compaction; EI-REHN at
  # D_h 128, R_max 10; adaptive depth at the size of its GPU record (batch
  # 64, 256 positions, width 512) at M 16. The caps (H200 records: the
  # suite's act_loop took 69 s at three M, rehn_depth 66 s at two widths,
  # depth_cost 256 s at four M and three modes) add up to 510 s, 465 s
  # before the last part.
  ACT=(--m=100 --tail=0,8 --repeats=10)
  REHN=(--hidden=128 --max_depth=10 --repeats=5)
  DEPTH=(--batch=64 --time=256 --features=512 --heads=8 --max_depth=16
         --modes=per_token,per_example --tail=4 --repeats=3)
  POP=(--populations=8,32,128 --repeats=10)
  C_ACT=45 C_REHN=30 C_DEPTH=60 C_POP=60
fi
# bench PART CAP XLA_FLAGS BENCHMARK FLAGS...: the benchmark through the
# suite, its record in records/PART/.
bench() {
  local name=$1 cap=$2 xla=$3 which=$4
  shift 4
  local args=(--only="$which" --repeats=1 --affinity=unpinned
              --machine="$MACHINE" --record_dir="$WORK/records/$name"
              --out="$WORK/suite_$name")
  [[ $MODE == quick ]] && args+=(--quick)
  args+=(--flags="$which=$*")
  part "$name" "$cap" "$xla" python3 -m benchmarks "${args[@]}"
}
bench act_u1 $C_ACT '' act_loop "${ACT[@]}"
bench act_u4 $C_ACT '' act_loop "${ACT[@]}" --unroll=4
bench act_cb $C_ACT "$CB" act_loop "${ACT[@]}"
part population $C_POP '' python3 -m benchmarks.seed_population "${POP[@]}" \
  --json="$WORK/results/population.json"
bench depth_u1 $C_DEPTH '' depth_cost "${DEPTH[@]}"
bench depth_u4 $C_DEPTH '' depth_cost "${DEPTH[@]}" --unroll=4
bench depth_cb $C_DEPTH "$CB" depth_cost "${DEPTH[@]}"
bench rehn_u1 $C_REHN '' rehn_depth "${REHN[@]}"
bench rehn_u4 $C_REHN '' rehn_depth "${REHN[@]}" --unroll=4
bench rehn_cb $C_REHN "$CB" rehn_depth "${REHN[@]}"
bench act_cb_u4 $C_ACT "$CB" act_loop "${ACT[@]}" --unroll=4
cp "$LOG" "$WORK/logs/driver.txt"
pack
say "done; $(du -h "$OUT/gpu_loops.tar.gz" | cut -f1) in $OUT/gpu_loops.tar.gz"
