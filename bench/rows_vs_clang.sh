#!/bin/sh
# bench/rows_vs_clang: softmax and layer norm of the transformer suite,
# tuned, against the same row loops in C compiled by clang-19.
#
# Runs `scaletune tune` (200 trials, one thread, a fresh database per seed)
# on softmax_rows 1536x128 and layer_norm 128x768 on `host`, and times
# the C loops (the workloads' statements, one row at a time) built with
# `clang-19 -O3 -march=native` and with `-ffast-math -fveclib=libmvec`
# (glibc's vector expf: what clang needs to vectorize these loops at
# all), best of 200 calls, after each seed. Prints the tuned bests and
# the C times; compare ratios within one run.
#
#   sh bench/rows_vs_clang.sh                       # seeds 1 to 4, ./target/release/scaletune
#   sh bench/rows_vs_clang.sh 1 2 /tmp/old-scaletune # seeds 1 and 2, another build
#
# Figures: bench/RESULTS.md ("Row workloads"). Run on a quiet machine.
set -eu
cd "$(dirname "$0")/.."
last=""
seeds=""
for a in "$@"; do
  case "$a" in
    *[!0-9]*) last="$a" ;;
    *) seeds="$seeds $a" ;;
  esac
done
bin="${last:-target/release/scaletune}"
seeds="${seeds:- 1 2 3 4}"
out=out/bench/rows
mkdir -p "$out"
cat > "$out/rows.c" <<'EOF'
/* Softmax of 1536 rows of 128 and layer norm of 128 rows of 768, as the
 * workloads define them, one row at a time; best of 200 calls each. */
#include <math.h>
#include <stdio.h>
#include <time.h>
#define SM 1536
#define SN 128
#define LM 128
#define LN 768
static float X[SM][SN], E[SM][SN], Y[SM][SN];
static float LX[LM][LN], LD[LM][LN], LY[LM][LN], G[LN], B[LN];
__attribute__((noinline)) static void softmax(void) {
    for (int i = 0; i < SM; i++) {
        float m = -INFINITY;
        for (int j = 0; j < SN; j++) m = fmaxf(m, X[i][j]);
        for (int j = 0; j < SN; j++) E[i][j] = expf(X[i][j] - m);
        float s = 0.0f;
        for (int j = 0; j < SN; j++) s += E[i][j];
        for (int j = 0; j < SN; j++) Y[i][j] = E[i][j] / s;
    }
}
__attribute__((noinline)) static void layer_norm(void) {
    const float inv_n = 1.0f / LN, eps = 1e-5f;
    for (int i = 0; i < LM; i++) {
        float mu = 0.0f;
        for (int j = 0; j < LN; j++) mu += LX[i][j] * inv_n;
        float v = 0.0f;
        for (int j = 0; j < LN; j++) {
            LD[i][j] = LX[i][j] - mu;
            v += LD[i][j] * LD[i][j] * inv_n;
        }
        for (int j = 0; j < LN; j++) LY[i][j] = LD[i][j] / sqrtf(v + eps) * G[j] + B[j];
    }
}
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static double best_of(void (*f)(void)) {
    double best = 1e9;
    for (int r = 0; r < 200; r++) {
        double t = now();
        f();
        t = now() - t;
        if (t < best) best = t;
    }
    return best;
}
int main(void) {
    for (int i = 0; i < SM; i++)
        for (int j = 0; j < SN; j++) X[i][j] = (float)((i * 7 + j * 13) % 100) / 50.0f - 1.0f;
    for (int i = 0; i < LM; i++)
        for (int j = 0; j < LN; j++) LX[i][j] = (float)((i * 7 + j * 13) % 100) / 50.0f - 1.0f;
    for (int j = 0; j < LN; j++) G[j] = 1.0f, B[j] = 0.0f;
    double s = best_of(softmax), l = best_of(layer_norm);
    printf("softmax_rows %.3f us  layer_norm %.3f us  (check %g %g)\n", s * 1e6, l * 1e6, Y[3][5], LY[3][5]);
    return 0;
}
EOF
clang-19 -O3 -march=native "$out/rows.c" -o "$out/rows_plain" -lm
# (-INFINITY as the first maximum, as the workload has it, is clang's
# faster loop: 73 against 85 us with the first element on the Zen 5 VM.)
clang-19 -O3 -march=native -ffast-math -fveclib=libmvec -Wno-nan-infinity-disabled "$out/rows.c" -o "$out/rows_fast" -lmvec -lm
for seed in $seeds; do
  for w in layer_norm:M=128,N=768 softmax_rows:M=1536,N=128; do
    db="$out/${w%%:*}-$seed.db"
    rm -f "$db" "$db-wal" "$db-shm"
    best=$("$bin" tune "$w" --target host --trials 200 --threads 1 --seed "$seed" --db "$db" 2>&1 |
      grep -A1 '^task' | tail -1 | awk '{print $2, $3}')
    echo "seed $seed  ${w%%:*}  tuned $best"
  done
  echo "seed $seed  clang -O3 -march=native:                          $("$out/rows_plain")"
  echo "seed $seed  clang -O3 -march=native -ffast-math -fveclib=libmvec: $("$out/rows_fast")"
done
