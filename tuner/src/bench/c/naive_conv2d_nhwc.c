/* Naive baseline of the `conv2d_nhwc` workload:
 * Out[n, oh, ow, f] = sum_{r, s, c} In[n, oh*S + r, ow*S + s, c] * Wt[r, s, c, f]
 * (NHWC input, HWCF filter, no padding, stride S), every tensor row-major.
 *
 * Kernel ABI (see scaletune-measure): void SYMBOL(float *In, float *Wt, float *Out).
 * The shape comes in as -D macros: BENCH_N, BENCH_H, BENCH_WI, BENCH_C,
 * BENCH_F, BENCH_KH, BENCH_KW, BENCH_S; the symbol as BENCH_SYMBOL. The
 * innermost loop runs over the output channels f, contiguous in Wt and Out,
 * for clang to auto-vectorize.
 */
#define BENCH_OH ((BENCH_H - BENCH_KH) / BENCH_S + 1)
#define BENCH_OW ((BENCH_WI - BENCH_KW) / BENCH_S + 1)

void BENCH_SYMBOL(const float *restrict in, const float *restrict wt, float *restrict out) {
    for (long n = 0; n < BENCH_N; n++) {
        for (long oh = 0; oh < BENCH_OH; oh++) {
            for (long ow = 0; ow < BENCH_OW; ow++) {
                float *restrict o = out + ((n * BENCH_OH + oh) * BENCH_OW + ow) * BENCH_F;
                for (long f = 0; f < BENCH_F; f++) {
                    o[f] = 0.0f;
                }
                for (long r = 0; r < BENCH_KH; r++) {
                    for (long s = 0; s < BENCH_KW; s++) {
                        const float *restrict x = in + ((n * BENCH_H + oh * BENCH_S + r) * BENCH_WI + ow * BENCH_S + s) * BENCH_C;
                        const float *restrict w = wt + (r * BENCH_KW + s) * BENCH_C * BENCH_F;
                        for (long c = 0; c < BENCH_C; c++) {
                            const float x_c = x[c];
                            const float *restrict w_c = w + c * BENCH_F;
                            for (long f = 0; f < BENCH_F; f++) {
                                o[f] += x_c * w_c[f];
                            }
                        }
                    }
                }
            }
        }
    }
}
