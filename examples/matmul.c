/* matmul.c: culprit's demo workload, a textbook triple-loop matrix multiply.
 * Build: cc -O1 -g -fno-omit-frame-pointer matmul.c -o matmul
 * Run:   ./matmul [N] [repeats]   (default 512, 2)
 *
 * The i-j-k loop order walks b[k][j] down a column: each step of k jumps a
 * whole row (N doubles), so for N large enough that a column's cache lines do
 * not stay in L1/L2 nearly every load of b misses the data cache and, with
 * rows of 4 KiB or more, the DTLB. That load in multiply() is the culprit; the
 * initialisation and checksum loops are the cheap part. */
#include <stdio.h>
#include <stdlib.h>

static double *alloc_matrix(int n) {
    double *m = malloc(sizeof(double) * (size_t)n * (size_t)n);
    if (!m) { perror("malloc"); exit(1); }
    return m;
}

__attribute__((noinline)) void fill(double *m, int n, unsigned seed) {
    for (long i = 0; i < (long)n * n; i++) {
        seed = seed * 1103515245u + 12345u;
        m[i] = (double)(seed >> 16) / 65536.0;
    }
}

__attribute__((noinline)) void multiply(const double *a, const double *b, double *c, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double sum = 0.0;
            for (int k = 0; k < n; k++)
                sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
        }
}

__attribute__((noinline)) double checksum(const double *m, int n) {
    double s = 0.0;
    for (long i = 0; i < (long)n * n; i++) s += m[i];
    return s;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    int repeats = argc > 2 ? atoi(argv[2]) : 2;
    if (n <= 0 || repeats <= 0) { fprintf(stderr, "usage: %s [N>0] [repeats>0]\n", argv[0]); return 2; }
    double *a = alloc_matrix(n), *b = alloc_matrix(n), *c = alloc_matrix(n);
    fill(a, n, 1);
    fill(b, n, 2);
    double total = 0.0;
    for (int r = 0; r < repeats; r++) {
        multiply(a, b, c, n);
        total += checksum(c, n);
    }
    printf("checksum = %.6f\n", total);
    free(a); free(b); free(c);
    return 0;
}
