/* bench/gemm_structures: where a 512^3 f32 matmul loses to the FMA peak on this core.
 *
 * Times, in one process and in interleaved rounds (ROUNDS of every
 * contender, back to back), the tuned kernel `scaletune_matmul` linked in
 * from `scaletune compile --db`, OpenBLAS's cblas_sgemm, a handful of GEMM
 * loop structures written here with AVX-512 intrinsics around the same
 * 6x64 (6 rows of 4 zmm) and a 12x32 broadcast-FMA micro-kernel, and three
 * ceilings: the register-only FMA loop, the 6x64 micro-kernel over an
 * L1-resident panel (kc 128, 32 KiB) and over an L2-resident one (kc 512,
 * 128 KiB), the same A rows every call. Prints the best and the median
 * GFLOPS of each, and the best as a share of the FMA loop's best. Every
 * structure's result is checked against the tuned kernel's.
 *
 * Built by bench/gemm_structures.sh (clang-19 -O3 -march=native); AVX-512 only.
 */
#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 512
#define ROUNDS 25
#define PAD 16 /* zero rows after A, so a last partial tile reads zeros */

void scaletune_matmul(const float *A, const float *B, float *C);

static float *A, *B, *C, *Bp, *Ap;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* An MR x (16 NV) register tile: C[r][..] += sum over kc of a(r, k) * panel[k][..].
 * a(r, k) = a[r * sa + k * sk]; the panel's rows are nr floats apart; C's rows N apart.
 * With cn, the next tile's C rows are prefetched, one line every 8 steps. */
#define MICRO_KERNEL(NAME, MR, NV)                                                                       \
    static inline void NAME(int rows, int kc, const float *a, long sa, long sk, const float *b, long nr, \
                            float *c, const float *cn) {                                                 \
        __m512 acc[MR][NV];                                                                              \
        for (int i = 0; i < MR; i++)                                                                     \
            for (int j = 0; j < NV; j++)                                                                 \
                acc[i][j] = i < rows ? _mm512_loadu_ps(c + i * N + 16 * j) : _mm512_setzero_ps();        \
        for (int k = 0; k < kc; k++) {                                                                   \
            __m512 bv[NV];                                                                               \
            for (int j = 0; j < NV; j++) bv[j] = _mm512_load_ps(b + nr * k + 16 * j);                    \
            if (cn && (k & 7) == 0 && (k >> 3) < MR * NV) {                                              \
                int q = k >> 3;                                                                          \
                _mm_prefetch((const char *)(cn + (q / NV) * N + 16 * (q % NV)), _MM_HINT_T0);            \
            }                                                                                            \
            for (int i = 0; i < MR; i++) {                                                               \
                __m512 x = _mm512_set1_ps(a[i * sa + k * sk]);                                           \
                for (int j = 0; j < NV; j++) acc[i][j] = _mm512_fmadd_ps(x, bv[j], acc[i][j]);           \
            }                                                                                            \
        }                                                                                                \
        for (int i = 0; i < MR; i++)                                                                     \
            if (i < rows)                                                                                \
                for (int j = 0; j < NV; j++) _mm512_storeu_ps(c + i * N + 16 * j, acc[i][j]);            \
    }
MICRO_KERNEL(tile_6x64, 6, 4)
MICRO_KERNEL(tile_12x32, 12, 2)

static void pack_b(int k0, int kc, int j0, int nr, float *dst) {
    for (int k = 0; k < kc; k++) memcpy(dst + (long)k * nr, B + (long)(k0 + k) * N + j0, (size_t)nr * 4);
}

/* The tuned winner's order: column strips, reduction blocks (B panel packed), row tiles; A unpacked. */
static __attribute__((noinline)) void columns_6x64(int kc, int prefetch) {
    for (int j0 = 0; j0 < N; j0 += 64)
        for (int k0 = 0; k0 < N; k0 += kc) {
            pack_b(k0, kc, j0, 64, Bp);
            for (int i0 = 0; i0 < N; i0 += 6) {
                int next = i0 + 6 < N ? i0 + 6 : i0;
                tile_6x64(N - i0 < 6 ? N - i0 : 6, kc, A + (long)i0 * N + k0, N, 1, Bp, 64, C + (long)i0 * N + j0,
                          prefetch ? C + (long)next * N + j0 : 0);
            }
        }
}

static __attribute__((noinline)) void columns_12x32(int kc) {
    for (int j0 = 0; j0 < N; j0 += 32)
        for (int k0 = 0; k0 < N; k0 += kc) {
            pack_b(k0, kc, j0, 32, Bp);
            for (int i0 = 0; i0 < N; i0 += 12)
                tile_12x32(N - i0 < 12 ? N - i0 : 12, kc, A + (long)i0 * N + k0, N, 1, Bp, 32, C + (long)i0 * N + j0, 0);
        }
}

/* GotoBLAS with A packed too: per reduction block, every row of A packed into 6-row micro-panels
 * (contiguous along k, rows interleaved), then column strips over it, C prefetched. */
static __attribute__((noinline)) void packed_a_6x64(int kc) {
    for (int k0 = 0; k0 < N; k0 += kc) {
        for (int p = 0; p * 6 < N; p++)
            for (int k = 0; k < kc; k++)
                for (int r = 0; r < 6; r++) {
                    int i = p * 6 + r;
                    Ap[(long)p * 6 * kc + k * 6 + r] = i < N ? A[(long)i * N + k0 + k] : 0.0f;
                }
        for (int j0 = 0; j0 < N; j0 += 64) {
            pack_b(k0, kc, j0, 64, Bp);
            for (int p = 0; p * 6 < N; p++) {
                int i0 = p * 6, next = i0 + 6 < N ? i0 + 6 : i0;
                tile_6x64(N - i0 < 6 ? N - i0 : 6, kc, Ap + (long)p * 6 * kc, 1, 6, Bp, 64, C + (long)i0 * N + j0,
                          C + (long)next * N + j0);
            }
        }
    }
}

/* Row tiles outer: B packed whole per reduction block, one A tile in L1 while every strip streams past. */
static __attribute__((noinline)) void rows_6x64(int kc) {
    for (int k0 = 0; k0 < N; k0 += kc) {
        for (int s = 0; s < N / 64; s++) pack_b(k0, kc, s * 64, 64, Bp + (long)s * kc * 64);
        for (int i0 = 0; i0 < N; i0 += 6)
            for (int s = 0; s < N / 64; s++) {
                int next = s + 1 < N / 64 ? s + 1 : s;
                tile_6x64(N - i0 < 6 ? N - i0 : 6, kc, A + (long)i0 * N + k0, N, 1, Bp + (long)s * kc * 64, 64,
                          C + (long)i0 * N + s * 64, C + (long)i0 * N + next * 64);
            }
    }
}

/* The micro-kernel alone, the same 6 rows of A every call, over a panel of kc steps. */
static __attribute__((noinline)) void panel_only(int kc) {
    long calls = 2L * N * N * N / (2L * 6 * 64 * kc);
    for (long q = 0; q < calls; q++) tile_6x64(6, kc, A, kc, 1, Bp, 64, C, 0);
}

/* 16 independent FMA chains, registers only: 2 N^3 flops. */
static __attribute__((noinline)) float fma_loop(void) {
    __m512 c[16];
    for (int i = 0; i < 16; i++) c[i] = _mm512_set1_ps((float)i);
    __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
    for (long r = 0; r < 2L * N * N * N / 512; r++) {
        for (int i = 0; i < 16; i++) c[i] = _mm512_fmadd_ps(c[i], x, y);
        __asm__ volatile("" : : "v"(c[0]));
    }
    float s = 0.0f;
    for (int i = 0; i < 16; i++) s += _mm512_reduce_add_ps(c[i]);
    return s;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    static const char *names[] = {
        "FMA loop (registers only)", "6x64 tile, panel in L1 (kc 128)", "6x64 tile, panel in L2 (kc 512)",
        "scaletune (tuned)", "openblas cblas_sgemm", "columns 6x64 kc 512", "columns 6x64 kc 128",
        "columns 6x64 kc 64", "columns 6x64 kc 512 + C prefetch", "columns 12x32 kc 512",
        "packed A 6x64 kc 128 + C prefetch", "rows outer 6x64 kc 256 + C prefetch",
    };
    enum { CONTENDERS = sizeof names / sizeof names[0], CHECKED_FROM = 4 };
    A = aligned_alloc(64, 4L * (N + PAD) * N);
    B = aligned_alloc(64, 4L * N * N);
    C = aligned_alloc(64, 4L * N * N);
    Bp = aligned_alloc(64, 4L * N * N);
    Ap = aligned_alloc(64, 4L * (N + PAD) * N);
    float *want = aligned_alloc(64, 4L * N * N);
    if (!A || !B || !C || !Bp || !Ap || !want) return 1;
    memset(A, 0, 4L * (N + PAD) * N);
    for (long i = 0; i < (long)N * N; i++) {
        A[i] = (float)(i % 13) * 1e-2f;
        B[i] = (float)(i % 7) * 1e-2f;
    }
    scaletune_matmul(A, B, want);
    pack_b(0, N, 0, 64, Bp); /* the panel of the micro-kernel-only contenders */
    double runs[CONTENDERS][ROUNDS];
    volatile float sink = 0.0f;
    for (int round = 0; round < ROUNDS; round++) {
        for (int v = 0; v < CONTENDERS; v++) {
            if (v >= CHECKED_FROM) memset(C, 0, 4L * N * N);
            double t0 = now();
            switch (v) {
            case 0: sink += fma_loop(); break;
            case 1: panel_only(128); break;
            case 2: panel_only(512); break;
            case 3: scaletune_matmul(A, B, C); break;
            case 4: cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, A, N, B, N, 0.0f, C, N); break;
            case 5: columns_6x64(512, 0); break;
            case 6: columns_6x64(128, 0); break;
            case 7: columns_6x64(64, 0); break;
            case 8: columns_6x64(512, 1); break;
            case 9: columns_12x32(512); break;
            case 10: packed_a_6x64(128); break;
            case 11: rows_6x64(256); break;
            }
            runs[v][round] = 2.0 * N * N * N / (now() - t0) / 1e9;
            if (round == 0 && v >= CHECKED_FROM) {
                double err = 0.0;
                for (long i = 0; i < (long)N * N; i++) err = fmax(err, fabs((double)C[i] - (double)want[i]));
                if (err > 1e-2) {
                    fprintf(stderr, "%s differs from the tuned kernel by %g\n", names[v], err);
                    return 1;
                }
            }
        }
    }
    qsort(runs[0], ROUNDS, sizeof(double), by_value);
    double peak = runs[0][ROUNDS - 1];
    printf("%d interleaved rounds, one thread; GFLOPS; `of FMA` is best over the FMA loop's best\n", ROUNDS);
    printf("%-38s %8s %8s %8s\n", "contender", "best", "median", "of FMA");
    for (int v = 0; v < CONTENDERS; v++) {
        if (v > 0) qsort(runs[v], ROUNDS, sizeof(double), by_value);
        double best = runs[v][ROUNDS - 1];
        printf("%-38s %8.1f %8.1f %7.1f%%\n", names[v], best, runs[v][ROUNDS / 2], 100.0 * best / peak);
    }
    return sink == 12345.0f;
}
