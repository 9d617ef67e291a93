#!/bin/sh
# bench/emulated_vs_native: how far QEMU-derived figures can be trusted.
#
# Draws schedules of matmul and conv2d from the design space for this
# machine (host features QEMU 7.2 can emulate: no AVX-512), times each one
# natively (median of the repeats of the timing protocol), runs it under
# qemu-x86_64 with the instruction-count plugin and llvm-mca for this CPU,
# and prints Kendall's tau-b between native time and estimated cycles,
# instruction count and the resource-bound estimate, per workload and overall.
#
#   bash bench/emulated_vs_native.sh                     # 30 schedules per workload, seed 1
#   bash bench/emulated_vs_native.sh --samples 40 --seed 2 --repeat 9 --csv out/bench/emulated_vs_native.csv
#   bash bench/emulated_vs_native.sh matmul:M=128,N=128,K=128   # other workloads
#
# Native timing needs a quiet machine: run it with nothing else busy.
set -eu
cd "$(dirname "$0")/.."
make -s deps
cargo build --release -q -p scaletune-measure --example emulated_vs_native
exec target/release/examples/emulated_vs_native "$@"
