/* calltree: a known call tree for DWARF unwinding tests, built WITHOUT frame pointers
 * (-O2 -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls -g).
 *
 *   main -> a() -> b() -> c()   leaf, ~70% of the time
 *   main -> d() -> e()          leaf, ~30% of the time
 *
 * c() and e() run the same loop body (7 and 3 units per round), so the split follows
 * the unit counts. Calls are followed by a volatile store so -O2 cannot turn them into
 * jumps (a or d would vanish from the stack), and the leaves differ (no identical-code
 * folding). Usage: calltree [ROUNDS] (default 500, about 1.5 s on an idle core).
 */
#include <stdlib.h>

static volatile unsigned long sink;

#define UNIT 200000UL

__attribute__((noinline)) unsigned long c(unsigned long units)
{
    unsigned long x = 0x1234;
    for (unsigned long i = 0; i < units * UNIT; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
    return x;
}

__attribute__((noinline)) unsigned long e(unsigned long units)
{
    unsigned long x = 0x4321;
    for (unsigned long i = 0; i < units * UNIT; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x ^ 1;
    return x + 1;
}

__attribute__((noinline)) unsigned long b(unsigned long units)
{
    unsigned long r = c(units);
    sink = r;
    return r + 2;
}

__attribute__((noinline)) unsigned long a(unsigned long units)
{
    unsigned long r = b(units);
    sink = r;
    return r + 3;
}

__attribute__((noinline)) unsigned long d(unsigned long units)
{
    unsigned long r = e(units);
    sink = r;
    return r + 4;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 500;
    unsigned long acc = 0;
    for (long i = 0; i < rounds; i++) {
        acc += a(7);
        acc += d(3);
    }
    sink = acc;
    return 0;
}
