/* xss_names.c: functions whose symbol names are HTML and script injections (given with
 * `__asm__` labels), for the HTML report's test: every one must show as text, never run or
 * become an element. `<iframe srcdoc=x>` calls the four leaves, so that the names are in
 * the call trees too (callers and callees), not only in the flat tables.
 * Build: cc -O1 -g -fno-omit-frame-pointer xss_names.c -o xss_names
 * Run:   ./xss_names [UNITS]   (default 4; one unit is ~8 ms of CPU, split 4:3:2:1)
 * The names (the assembler takes any character in a quoted label but the quote):
 *   <script>alert(1)</script>
 *   <img src=x onerror=alert(2)>
 *   </script><script>alert(3)</script>
 *   &lt;b&gt;'onmouseover='alert(4)     (entities stay literal text)
 *   <iframe srcdoc=x>                    (the caller) */
#include <stdint.h>
#include <stdlib.h>

#define UNIT 4000000ULL

static volatile uint64_t sink;

/* Called first by each spinning function, so that it is no leaf and sets its frame pointer
 * up on entry (GCC omits it in leaf functions): the caller is then in every call chain. */
__attribute__((noinline)) void enter(uint64_t seed) { sink += seed; }

static inline __attribute__((always_inline)) uint64_t spin(uint64_t units, uint64_t seed) {
    enter(seed);
    uint64_t x = seed;
    for (uint64_t i = 0; i < units * UNIT; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    return x;
}

uint64_t script_tag(uint64_t units) __asm__("\"<script>alert(1)</script>\"");
uint64_t img_tag(uint64_t units) __asm__("\"<img src=x onerror=alert(2)>\"");
uint64_t close_script(uint64_t units) __asm__("\"</script><script>alert(3)</script>\"");
uint64_t entity(uint64_t units) __asm__("\"&lt;b&gt;'onmouseover='alert(4)\"");
uint64_t caller(uint64_t units) __asm__("\"<iframe srcdoc=x>\"");

__attribute__((noinline)) uint64_t script_tag(uint64_t units) { return spin(4 * units, 1); }
__attribute__((noinline)) uint64_t img_tag(uint64_t units) { return spin(3 * units, 2); }
__attribute__((noinline)) uint64_t close_script(uint64_t units) { return spin(2 * units, 3); }
__attribute__((noinline)) uint64_t entity(uint64_t units) { return spin(units, 4); }

__attribute__((noinline)) uint64_t caller(uint64_t units) {
    uint64_t x = script_tag(units);
    x += img_tag(units);
    x += close_script(units);
    x += entity(units);
    sink += x;
    return x;
}

int main(int argc, char **argv) {
    uint64_t units = argc > 1 ? strtoull(argv[1], 0, 10) : 4;
    /* Rounds, so that each function's share holds over any part of the run. */
    for (int round = 0; round < 10; round++)
        sink += caller(units > 10 ? units / 10 : 1);
    return 0;
}
