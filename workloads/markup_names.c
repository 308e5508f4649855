/* markup_names.c: four functions whose symbol names are markup and quotes (given with
 * `__asm__` labels), each spinning for as many work units as its argument says.
 * Build: cc -O1 -g -fno-omit-frame-pointer markup_names.c -o markup_names
 * Run:   ./markup_names [S] [A] [G] [F]   (default 3 1 1 0; one unit is ~8 ms of CPU)
 *   S units in `<script>alert(1)</script>`, A in `a&b<c>`, G in `gone'&` and F in `fresh<&>`.
 * Tests check that names from a file stay text in SVG, HTML, JSON and CSV output (never
 * markup), and diff two runs with different splits: `3 1 1 0` against `1 3 0 1` moves share
 * from the first function to the second, and makes `gone'&` vanish and `fresh<&>` appear. */
#include <stdint.h>
#include <stdlib.h>

#define UNIT 4000000ULL

static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t spin(uint64_t units, uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t i = 0; i < units * UNIT; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    return x;
}

/* The labels are quoted for the assembler, which then takes any character but the quote. */
uint64_t script_tag(uint64_t units) __asm__("\"<script>alert(1)</script>\"");
uint64_t ampersand(uint64_t units) __asm__("\"a&b<c>\"");
uint64_t apostrophe(uint64_t units) __asm__("\"gone'&\"");
uint64_t fresh(uint64_t units) __asm__("\"fresh<&>\"");

__attribute__((noinline)) uint64_t script_tag(uint64_t units) { return spin(units, 1); }
__attribute__((noinline)) uint64_t ampersand(uint64_t units) { return spin(units, 2); }
__attribute__((noinline)) uint64_t apostrophe(uint64_t units) { return spin(units, 3); }
__attribute__((noinline)) uint64_t fresh(uint64_t units) { return spin(units, 4); }

int main(int argc, char **argv) {
    uint64_t s = argc > 1 ? strtoull(argv[1], 0, 10) : 3;
    uint64_t a = argc > 2 ? strtoull(argv[2], 0, 10) : 1;
    uint64_t g = argc > 3 ? strtoull(argv[3], 0, 10) : 1;
    uint64_t f = argc > 4 ? strtoull(argv[4], 0, 10) : 0;
    /* Interleaved so that each function's share holds over any part of the run. */
    for (int round = 0; round < 10; round++) {
        if (s) sink += script_tag(s);
        if (a) sink += ampersand(a);
        if (g) sink += apostrophe(g);
        if (f) sink += fresh(f);
    }
    return 0;
}
