#!/bin/sh
# The `make demo` script: shows the pipeline end to end and writes a report.
# Usage: scripts/demo.sh PATH/TO/scaletune OUTDIR
#
# Every step's output goes to the terminal and to OUTDIR/report.md. The first
# failing step ends the demo: the report keeps what ran so far plus a line
# naming the failed step, and the script exits with that step's status (POSIX
# sh has no pipefail, so the status of the steps is passed out of the
# `| tee` pipeline through a file).
set -eu
ST="$1"
OUT="$2"
mkdir -p "$OUT"
REPORT="$OUT/report.md"
STATUS="$OUT/.demo-status"
rm -f "$STATUS"

fail() {
  echo "demo FAILED with exit status $1: $2"
  exit "$1"
}

run() {
  echo "\$ scaletune $*"
  "$ST" "$@" || fail "$?" "scaletune $*"
  echo
}

steps() {
  echo "# scaletune demo report"
  echo
  echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m) by scripts/demo.sh."
  echo
  echo '```'
  run targets host
  run workloads matmul:M=67,N=131,K=29
  echo "## 1. A tiled matmul on this machine"
  cat configs/schedules/matmul_tiled.trace
  echo
  run compile matmul:M=67,N=131,K=29 --target host --schedule configs/schedules/matmul_tiled.trace \
      --emit loops,vector,llvm,asm,obj --out "$OUT/matmul-host"
  run check matmul:M=67,N=131,K=29 --target host --schedule configs/schedules/matmul_tiled.trace
  echo "## 2. The same schedule, length-agnostic SVE, one binary at four vector lengths"
  run check matmul:M=67,N=131,K=29 --target sve-generic --schedule configs/schedules/matmul_tiled.trace
  echo "## 3. A predicated scale_add (get_active_lane_mask -> whilelo) on SVE"
  cat configs/schedules/scale_add_predicated.trace
  echo
  run compile scale_add --target sve-generic --schedule configs/schedules/scale_add_predicated.trace \
      --emit loops,asm --out "$OUT/scale_add-sve"
  echo "SVE instructions of the kernel loop:"
  sve=$(grep -E "whilelo|ld1w|st1w|fadd|fmul" "$OUT/scale_add-sve/scaletune_scale_add.s") \
    || fail "$?" "no SVE instructions in $OUT/scale_add-sve/scaletune_scale_add.s"
  printf '%s\n' "$sve" | sed 's/^/    /'
  echo
  run check scale_add --target sve-generic --schedule configs/schedules/scale_add_predicated.trace --vl 128,256,512,2048
  echo "## 4. The schedule space: 20 sampled schedules, each checked in the interpreter"
  run explore matmul:M=64,N=96,K=32 --target neoverse-v1 --samples 20 --seed 1 --check
  echo "## 5. Timed on this machine, row blocks on the thread pool"
  cat configs/schedules/matmul_parallel.trace
  echo
  run measure matmul:M=256,N=256,K=256 --target host --schedule configs/schedules/matmul_parallel.trace --repeat 5
  echo "## 6. Emulated at three vector lengths: length-agnostic SVE, then NEON"
  run measure matmul:M=128,N=128,K=128 --target neoverse-v1 --runner qemu --vl 128,256,512 \
      --schedule configs/schedules/matmul_tiled_vla.trace
  run measure matmul:M=128,N=128,K=128 --target neoverse-v1 --runner qemu --vl 128,256,512 \
      --schedule configs/schedules/matmul_tiled_neon.trace
  echo "## 7. A tuning job: 64 trials on this machine, then 32 under QEMU at VL 128 and 256"
  rm -f "$OUT/scaletune.db" "$OUT/scaletune.db-wal" "$OUT/scaletune.db-shm"
  run tune matmul:M=256,N=256,K=256 --target host --trials 64 --db "$OUT/scaletune.db" --seed 1
  run tune matmul:M=128,N=128,K=128 --target neoverse-v1 --runner qemu --vl 128,256 --trials 32 \
      --db "$OUT/scaletune.db" --seed 1
  run db stats --db "$OUT/scaletune.db"
  run db best matmul:M=256,N=256,K=256 --target host --db "$OUT/scaletune.db"
  echo "## 8. The HTML report of the tuning database (open $OUT/report/index.html)"
  run report --db "$OUT/scaletune.db" --out "$OUT/report"
  echo "## 9. Build-time replay: the best schedules as static libraries, a C header and Rust declarations"
  cat > "$OUT/kernels.toml" <<'EOF'
[[kernel]]
name = "matmul_256"
workload = "matmul:M=256,N=256,K=256"
target = "host"

[[kernel]]
name = "matmul_128_sve"
workload = "matmul:M=128,N=128,K=128"
target = "neoverse-v1"
vl = [128, 256]
EOF
  run build --db "$OUT/scaletune.db" --manifest "$OUT/kernels.toml" --out-dir "$OUT/kernels" --strict
  echo '```'
}

{
  # `set -e` is in force inside the subshell (it is not part of an AND-OR
  # list), so the steps stop at the first failure; its status is recorded.
  set +e
  (set -e; steps)
  echo "$?" > "$STATUS"
} 2>&1 | tee "$REPORT"

status=$(cat "$STATUS" 2>/dev/null || echo 1)
rm -f "$STATUS"
echo
if [ "$status" -ne 0 ]; then
  echo "demo FAILED (exit status $status); the report so far is in $REPORT" >&2
  exit "$status"
fi
echo "report written to $REPORT"
