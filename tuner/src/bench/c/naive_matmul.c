/* Naive baseline of the `matmul` workload: C[i, j] = sum_k A[i, k] * B[k, j], row-major.
 *
 * Kernel ABI (see scaletune-measure): void SYMBOL(float *A, float *B, float *C).
 * The shape comes in as -D macros: BENCH_M, BENCH_N, BENCH_K; the symbol as
 * BENCH_SYMBOL. The loops run i, k, j so that the innermost loop walks rows of
 * B and C contiguously: the loop a C programmer writes for a compiler to
 * auto-vectorize (clang contracts the update into an FMA).
 */
void BENCH_SYMBOL(const float *restrict a, const float *restrict b, float *restrict c) {
    for (long i = 0; i < BENCH_M; i++) {
        float *restrict c_row = c + i * BENCH_N;
        for (long j = 0; j < BENCH_N; j++) {
            c_row[j] = 0.0f;
        }
        for (long k = 0; k < BENCH_K; k++) {
            const float a_ik = a[i * BENCH_K + k];
            const float *restrict b_row = b + k * BENCH_N;
            for (long j = 0; j < BENCH_N; j++) {
                c_row[j] += a_ik * b_row[j];
            }
        }
    }
}
