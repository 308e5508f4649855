/* libc_heavy.c: time in libc's local functions, which only libc's debug file names (Debian's
 * libc is stripped): qsort's merge sort (`msort_with_tmp`) about 40 %, `memcpy`'s
 * `__memmove_*_unaligned_erms` variant about 15 %, the comparison `cmp` the rest.
 * Build: cc -O1 -g libc_heavy.c -o libc_heavy
 * Run:   ./libc_heavy [ROUNDS]   (default 6, about 0.3 s)
 */
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    size_t n = 1 << 20;
    unsigned *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
    if (!v || !w)
        return 2;
    for (int round = 0; round < rounds; round++) {
        for (size_t i = 0; i < n; i++)
            v[i] = (unsigned)(i * 2654435761u);
        qsort(v, n, sizeof *v, cmp);
        for (int k = 0; k < 40; k++)
            memcpy(w, v, n * sizeof *v);
    }
    return w[0] > w[1];  /* sorted: 0 */
}
