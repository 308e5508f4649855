/* shares.c: two functions whose shares of CPU time are known by construction.
 * Build: cc -O1 -g -fno-omit-frame-pointer shares.c -o shares
 * Run:   ./shares [units]  (default 40)
 * heavy() does exactly 3 times the work of light() (same loop body, 3x the
 * iterations), so on any time-like event heavy ~ 75% and light ~ 25% of the
 * samples in the process (main's own share is negligible). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t spin(uint64_t iters, uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    return x;
}

__attribute__((noinline)) uint64_t heavy(uint64_t unit, uint64_t seed) { return spin(3 * unit, seed); }
__attribute__((noinline)) uint64_t light(uint64_t unit, uint64_t seed) { return spin(unit, seed); }

int main(int argc, char **argv) {
    uint64_t units = argc > 1 ? strtoull(argv[1], 0, 10) : 40;
    const uint64_t unit = 1000000;
    for (uint64_t u = 0; u < units; u++) {
        sink += heavy(unit, sink + u);
        sink += light(unit, sink + u);
    }
    printf("sink = %llu\n", (unsigned long long)sink);
    return 0;
}
