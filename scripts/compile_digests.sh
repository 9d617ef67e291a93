#!/bin/sh
# Digests of everything `scaletune compile` writes (assembly, LLVM IR, loop
# nest, vector program) for every shipped target x shipped workload x
# (sampled schedules, shipped schedules, no schedule): a before/after check
# for refactors that must not change generated code.
#
# Usage: scripts/compile_digests.sh SCALETUNE OUTFILE TRACEDIR [sample]
#   With `sample`, first writes 4 explore samples (seed 7) per target and
#   workload into TRACEDIR; without it, reuses the traces already there, so
#   two builds of scaletune can be compared on the same schedules:
#     scripts/compile_digests.sh old/scaletune before.txt /tmp/traces sample
#     scripts/compile_digests.sh target/release/scaletune after.txt /tmp/traces
#     diff before.txt after.txt
# One line per combination: target, workload, schedule, and the first 16 hex
# digits of the SHA-256 of the outputs, or FAIL and the error's first bytes.
set -u
ST=$1; OUT=$2; TR=$3; MODE=${4:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
: > "$OUT"
for t in host neon neoverse-v1 neoverse-v2 a64fx sve-generic rvv; do
  for wl in scale_add axpy daxpy sum_cos row_sum softmax_rows matmul:M=67,N=131,K=29 matmul_bt batch_matmul \
            outer_product paged_read transpose conv2d_nhwc depthwise_conv2d_nhwc matmul_i8 matmul_f16; do
    d="$TR/$t-$(echo "$wl" | tr ':,=' '___')"
    mkdir -p "$d"
    [ "$MODE" = sample ] && "$ST" explore "$wl" --target "$t" --samples 4 --seed 7 --out "$d" > /dev/null 2>&1
    for s in "$d"/*.trace "$ROOT"/configs/schedules/*.trace NONE; do
      [ -e "$s" ] || [ "$s" = NONE ] || continue
      if [ "$s" = NONE ]; then set --; else set -- --schedule "$s"; fi
      rm -rf "$W/o"
      if "$ST" compile "$wl" --target "$t" "$@" --emit asm,llvm,loops,vector -o "$W/o" > /dev/null 2> "$W/err"; then
        echo "$t $wl $(basename "$s") $(cat "$W"/o/* | sha256sum | cut -c1-16)" >> "$OUT"
      else
        echo "$t $wl $(basename "$s") FAIL $(head -c 100 "$W/err" | tr '\n' ' ' | sed -e "s#$TR/##g" -e "s#$ROOT/##g")" >> "$OUT"
      fi
    done
  done
done
