/* OpenBLAS baseline of the `matmul` workload: C = A * B (row-major) by cblas_sgemm, single-threaded.
 *
 * Kernel ABI (see scaletune-measure): void SYMBOL(float *A, float *B, float *C).
 * The shape comes in as -D macros: BENCH_M, BENCH_N, BENCH_K; the symbol as
 * BENCH_SYMBOL. Linked with -lopenblas. The prototypes are OpenBLAS's LP64
 * interface (32-bit int dimensions, CBLAS enums passed as int), declared here
 * so that no include path depends on which OpenBLAS variant is installed.
 */
extern void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc);
extern void openblas_set_num_threads(int n_threads);

enum { BENCH_CBLAS_ROW_MAJOR = 101, BENCH_CBLAS_NO_TRANS = 111 };

void BENCH_SYMBOL(const float *a, const float *b, float *c) {
    static int single_threaded = 0;
    if (!single_threaded) {
        openblas_set_num_threads(1);
        single_threaded = 1;
    }
    cblas_sgemm(BENCH_CBLAS_ROW_MAJOR, BENCH_CBLAS_NO_TRANS, BENCH_CBLAS_NO_TRANS, BENCH_M, BENCH_N, BENCH_K, 1.0f, a,
                BENCH_K, b, BENCH_N, 0.0f, c, BENCH_N);
}
