/* Calls the tuned kernels of kernels.toml (through the generated header and
 * library) and checks each against a plain C loop. Build with the Makefile:
 * -DKERNELS_V1 picks the Neoverse V1 kernels (x_v1), else the host's (x_host). */
#include "kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef KERNELS_V1
#define KERNEL(name) name##_v1
#else
#define KERNEL(name) name##_host
#endif

enum { M = 37, N = 45, K = 19, LEN = 1000 };

static unsigned state = 12345u;

static float next_value(void) {
    state = state * 1664525u + 1013904223u;
    return (float)((state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void fill(float *x, int n) {
    for (int i = 0; i < n; i++) x[i] = next_value();
}

/* Largest |got - want| / (1 + |want|) over n values. */
static double error(const float *got, const float *want, int n) {
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]) / (1.0 + fabs((double)want[i]));
        if (!(e <= worst)) worst = e; /* also catches NaN */
    }
    return worst;
}

static int report(const char *name, double err) {
    int ok = err <= 1e-5;
    printf("%-8s max relative error %.2e: %s\n", name, err, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}

static int check_matmul(void) {
    static float a[M * K], b[K * N], c[M * N], want[M * N];
    fill(a, M * K);
    fill(b, K * N);
    for (int i = 0; i < M * N; i++) c[i] = NAN; /* the kernel initializes its output */
    KERNEL(matmul)(a, b, c);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j];
            want[i * N + j] = s;
        }
    return report("matmul", error(c, want, M * N));
}

static int check_axpy(void) {
    static float x[LEN], y[LEN], out[LEN], want[LEN];
    const float alpha = 0.75f;
    fill(x, LEN);
    fill(y, LEN);
    KERNEL(axpy)(x, y, out, alpha);
    for (int i = 0; i < LEN; i++) want[i] = alpha * x[i] + y[i];
    return report("axpy", error(out, want, LEN));
}

int main(void) {
    int failed = check_matmul() + check_axpy();
    printf("%s\n", failed ? "FAILED" : "all kernels match the plain C loops");
    return failed ? 1 : 0;
}
