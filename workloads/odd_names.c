/* odd_names.c: a process whose name (comm) holds a comma and a terminal escape, spinning in
 * a function whose loop holds a 10-byte instruction (movabs of a 64-bit immediate).
 * Build: cc -O1 -g odd_names.c -o odd_names
 * Run:   ./odd_names [MILLISECONDS]   (default 300)
 * Tests check that names from a file are escaped in text, CSV and JSON, and that
 * annotate --show-raw-insn keeps its columns apart around the longest instruction. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

__attribute__((noinline)) uint64_t wide_immediates(uint64_t n) {
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v;
        __asm__ volatile("movabs $0x1122334455667788, %0" : "=r"(v));
        acc += v ^ i;
    }
    return acc;
}

static long elapsed_ms(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(int argc, char **argv) {
    prctl(PR_SET_NAME, "a,b\x1b[31m", 0, 0, 0);
    long ms = argc > 1 ? atol(argv[1]) : 300;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile uint64_t sink = 0;
    do {
        sink += wide_immediates(1000000);
    } while (elapsed_ms(&t0) < ms);
    return 0;
}
