/* Naive baseline of the `sum_cos` workload: S[0] = sum_i cos(X[i]).
 *
 * Kernel ABI (see scaletune-measure): void SYMBOL(float *X, float *S).
 * The length comes in as the -D macro BENCH_N; the symbol as BENCH_SYMBOL.
 * Without -ffast-math clang keeps the sum in order and calls libm's cosf, so
 * this loop stays scalar: it is what -O3 gives for the plain C.
 */
#include <math.h>

void BENCH_SYMBOL(const float *restrict x, float *restrict s) {
    float sum = 0.0f;
    for (long i = 0; i < BENCH_N; i++) {
        sum += cosf(x[i]);
    }
    s[0] = sum;
}
