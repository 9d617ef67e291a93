#!/bin/sh
# bench/gemm_structures: the tuned matmul 512^3 against OpenBLAS, GEMM loop
# structures written in C with AVX-512 intrinsics, and the ceilings of the
# micro-kernel with its panel in L1 and in L2, in one process
# (bench/gemm_structures.c says what each contender is).
#
# Compiles the best record of matmul 512^3 on `host` in DB with
# `scaletune compile --db`, links it into the C program (clang-19 -O3
# -march=native, libopenblas) and runs it: best and median GFLOPS of 25
# interleaved rounds, and each best as a share of the register-only FMA
# loop's. Needs an AVX-512 host and a database that holds a tuned record
# (`scaletune bench` leaves one in out/bench/scaletune.db).
#
#   sh bench/gemm_structures.sh                          # out/bench/scaletune.db, ./target/release/scaletune
#   sh bench/gemm_structures.sh my.db /tmp/old-scaletune  # another database, another build
#
# Figures: bench/RESULTS.md ("Where a 512^3 matmul loses to the peak").
# Run on a quiet machine.
set -eu
cd "$(dirname "$0")/.."
db="${1:-out/bench/scaletune.db}"
bin="${2:-target/release/scaletune}"
grep -qw avx512f /proc/cpuinfo || { echo "gemm_structures: this host has no AVX-512" >&2; exit 1; }
out=out/bench/gemm_structures
mkdir -p "$out"
"$bin" compile matmul:M=512,N=512,K=512 --target host --db "$db" --emit obj -o "$out"
clang-19 -O3 -march=native -Wno-invalid-feature-combination bench/gemm_structures.c "$out/scaletune_matmul.o" \
  -o "$out/gemm_structures" -lopenblas -lm
OPENBLAS_NUM_THREADS=1 "$out/gemm_structures"
