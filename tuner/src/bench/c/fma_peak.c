/* FMA-peak probe: single-core FP32 fused multiply-add throughput at the widest vector width the compiler targets.
 *
 * Built with clang-19 -O2 -march=native: 512-bit vectors where AVX-512 is
 * available, 256-bit with AVX, else 128-bit. BENCH_CHAINS independent
 * accumulator chains (more than latency x FMA ports, so that the FMA units,
 * not the latency, bound the loop) are each updated acc = acc * x + y once
 * per iteration; x and y come from volatile memory so that nothing is folded.
 *
 * The same number of FMAs then runs fed from L1: the inner loop of a
 * register-blocked matmul micro-kernel, BENCH_ROWS x BENCH_VECTORS vector
 * accumulators (as many as the register file holds beside the panel's
 * vectors and one broadcast), each step loading BENCH_VECTORS vectors of a
 * packed panel and broadcasting BENCH_ROWS scalars, every operand from
 * arrays that stay in L1 (BENCH_STEPS steps: 16 KiB of panel with
 * AVX-512). What it reaches is the most a kernel that loads its operands
 * can hope for on this core: the load ports, not the FMA units, may bound
 * it.
 *
 * Usage: fma_peak ITERATIONS REPEATS. Prints, for the fastest repeat of each:
 * scaletune-peak: gflops=G lanes=L chains=C seconds=T l1_gflops=G1 l1_rows=R l1_vectors=V checksum=S
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
#define BENCH_BYTES 64
#define BENCH_CHAINS 16
#elif defined(__AVX__)
#define BENCH_BYTES 32
#define BENCH_CHAINS 12
#else
#define BENCH_BYTES 16
#define BENCH_CHAINS 12
#endif
#define BENCH_LANES (BENCH_BYTES / 4)
/* The L1-fed tile: 6 rows of 4 vectors with 32 vector registers, of 2 with 16. */
#define BENCH_ROWS 6
#if defined(__AVX512F__) || defined(__aarch64__)
#define BENCH_VECTORS 4
#else
#define BENCH_VECTORS 2
#endif
#define BENCH_STEPS 64

typedef float bench_vec __attribute__((vector_size(BENCH_BYTES)));

/* a * b + c: one fused instruction where the target has FMA; without it (SSE,
 * or AVX before FMA3) a multiply and an add, which such a core runs at full
 * rate, where the fused builtin would call libm's scalar fmaf. */
#if defined(__FMA__) || defined(__aarch64__)
#define BENCH_MADD(a, b, c) __builtin_elementwise_fma((a), (b), (c))
#else
#define BENCH_MADD(a, b, c) ((a) * (b) + (c))
#endif

static volatile float bench_x = 0.999999f;
static volatile float bench_y = 1e-6f;

static double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs `iterations` rounds of BENCH_CHAINS vector FMAs; returns the lane sum of the accumulators. */
/* min_vector_width keeps clang from splitting the vectors where it prefers 256-bit ones (e.g. on Sapphire Rapids). */
static __attribute__((noinline, min_vector_width(BENCH_BYTES * 8))) float bench_chains(long iterations) {
    const bench_vec x = (bench_vec){} + bench_x;
    const bench_vec y = (bench_vec){} + bench_y;
    bench_vec acc[BENCH_CHAINS];
    for (int c = 0; c < BENCH_CHAINS; c++) {
        acc[c] = (bench_vec){} + (float)c;
    }
    for (long i = 0; i < iterations; i++) {
#pragma clang loop unroll(full)
        for (int c = 0; c < BENCH_CHAINS; c++) {
            acc[c] = BENCH_MADD(acc[c], x, y);
        }
    }
    float sum = 0.0f;
    for (int c = 0; c < BENCH_CHAINS; c++) {
        for (int l = 0; l < BENCH_LANES; l++) {
            sum += acc[c][l];
        }
    }
    return sum;
}

/* The L1-fed operands: a panel of BENCH_STEPS x BENCH_VECTORS vectors and BENCH_ROWS x BENCH_STEPS scalars. */
static bench_vec bench_panel[BENCH_STEPS][BENCH_VECTORS] __attribute__((aligned(64)));
static float bench_rows[BENCH_ROWS][BENCH_STEPS] __attribute__((aligned(64)));

/* Runs `sweeps` sweeps of the panel, each BENCH_STEPS steps of BENCH_ROWS x BENCH_VECTORS FMAs; returns the lane sum of the accumulators. */
static __attribute__((noinline, min_vector_width(BENCH_BYTES * 8))) float bench_l1_fed(long sweeps) {
    bench_vec acc[BENCH_ROWS][BENCH_VECTORS];
    for (int r = 0; r < BENCH_ROWS; r++) {
        for (int v = 0; v < BENCH_VECTORS; v++) {
            acc[r][v] = (bench_vec){} + (float)(r + v);
        }
    }
    for (long s = 0; s < sweeps; s++) {
        for (int k = 0; k < BENCH_STEPS; k++) {
            bench_vec b[BENCH_VECTORS];
#pragma clang loop unroll(full)
            for (int v = 0; v < BENCH_VECTORS; v++) {
                b[v] = bench_panel[k][v];
            }
#pragma clang loop unroll(full)
            for (int r = 0; r < BENCH_ROWS; r++) {
                /* x - (+0) is x for every x (where 0 + x is not, for -0), so this is a plain broadcast. */
            const bench_vec a = bench_rows[r][k] - (bench_vec){};
#pragma clang loop unroll(full)
                for (int v = 0; v < BENCH_VECTORS; v++) {
                    acc[r][v] = BENCH_MADD(a, b[v], acc[r][v]);
                }
            }
        }
    }
    float sum = 0.0f;
    for (int r = 0; r < BENCH_ROWS; r++) {
        for (int v = 0; v < BENCH_VECTORS; v++) {
            for (int l = 0; l < BENCH_LANES; l++) {
                sum += acc[r][v][l];
            }
        }
    }
    return sum;
}

/* Seconds of the fastest of `repeats` calls of `loop(n)`; adds each call's result to *checksum. */
static double bench_fastest(float (*loop)(long), long n, int repeats, float *checksum) {
    double best = -1.0;
    for (int r = 0; r < repeats; r++) {
        double start = bench_now();
        *checksum += loop(n);
        double seconds = bench_now() - start;
        if (best < 0.0 || seconds < best) {
            best = seconds;
        }
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ITERATIONS REPEATS\n", argv[0]);
        return 2;
    }
    long iterations = atol(argv[1]);
    int repeats = atoi(argv[2]);
    if (iterations <= 0 || repeats <= 0) {
        fprintf(stderr, "ITERATIONS and REPEATS must be positive\n");
        return 2;
    }
    float checksum = 0.0f;
    double best = bench_fastest(bench_chains, iterations, repeats, &checksum);
    double flops = 2.0 * (double)iterations * BENCH_CHAINS * BENCH_LANES;
    /* Small operands (products near 1e-6) keep the sums normal and finite. */
    for (int k = 0; k < BENCH_STEPS; k++) {
        for (int v = 0; v < BENCH_VECTORS; v++) {
            bench_panel[k][v] = (bench_vec){} + bench_y * (float)(1 + (k + v) % 7);
        }
        for (int r = 0; r < BENCH_ROWS; r++) {
            bench_rows[r][k] = bench_x * (float)(1 + (r + k) % 5);
        }
    }
    /* About as many FMAs as the register-only loop. */
    long per_sweep = (long)BENCH_STEPS * BENCH_ROWS * BENCH_VECTORS;
    long sweeps = (iterations * BENCH_CHAINS + per_sweep - 1) / per_sweep;
    double l1_best = bench_fastest(bench_l1_fed, sweeps, repeats, &checksum);
    double l1_flops = 2.0 * (double)sweeps * per_sweep * BENCH_LANES;
    printf("scaletune-peak: gflops=%.3f lanes=%d chains=%d seconds=%.6f l1_gflops=%.3f l1_rows=%d l1_vectors=%d "
           "checksum=%g\n",
           flops / best / 1e9, BENCH_LANES, BENCH_CHAINS, best, l1_flops / l1_best / 1e9, BENCH_ROWS, BENCH_VECTORS,
           (double)checksum);
    return 0;
}
