/* FMA-peak probe: single-core FP32 fused multiply-add throughput at the widest vector width the compiler targets.
 *
 * Built with clang-19 -O2 -march=native: 512-bit vectors where AVX-512 is
 * available, 256-bit with AVX, else 128-bit. BENCH_CHAINS independent
 * accumulator chains (more than latency x FMA ports, so that the FMA units,
 * not the latency, bound the loop) are each updated acc = acc * x + y once
 * per iteration; x and y come from volatile memory so that nothing is folded.
 *
 * Usage: fma_peak ITERATIONS REPEATS. Prints, for the fastest repeat:
 * scaletune-peak: gflops=G lanes=L chains=C seconds=T checksum=S
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

typedef float bench_vec __attribute__((vector_size(BENCH_BYTES)));

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
            acc[c] = __builtin_elementwise_fma(acc[c], x, y);
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
    double best = -1.0;
    float checksum = 0.0f;
    for (int r = 0; r < repeats; r++) {
        double start = bench_now();
        checksum += bench_chains(iterations);
        double seconds = bench_now() - start;
        if (best < 0.0 || seconds < best) {
            best = seconds;
        }
    }
    double flops = 2.0 * (double)iterations * BENCH_CHAINS * BENCH_LANES;
    printf("scaletune-peak: gflops=%.3f lanes=%d chains=%d seconds=%.6f checksum=%g\n", flops / best / 1e9, BENCH_LANES,
           BENCH_CHAINS, best, (double)checksum);
    return 0;
}
