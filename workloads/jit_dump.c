/* jit_dump.c: a minimal JIT runtime that writes a perf JIT dump, as V8 (--perf-prof) and
 * CPython 3.13 (-X perf_jit) do (tools/perf/Documentation/jitdump-specification.txt).
 * Build: cc -O1 -g -fno-omit-frame-pointer jit_dump.c -o jit_dump
 * Run:   ./jit_dump [units]  (default 30)
 * It copies two x86-64 functions into anonymous executable memory, writes
 * ./jit-PID.dump with their code-load records (names `js:hot_loop hot.js:10` and
 * `js:cold_loop cold.js:20`, code bytes) and debug-info records (one line per
 * instruction), maps the dump executable (the marker a recording keeps), then runs
 * hot_loop 3 times as long as cold_loop: hot ~ 75%, cold ~ 25% of the JIT code's
 * samples. Timestamps are CLOCK_MONOTONIC (record with `-k mono` for `perf inject --jit`). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
int main(void) { fprintf(stderr, "jit_dump: x86-64 only\n"); return 2; }
#else

/* mov %rdi,%rax ; 1: dec %rax ; jnz 1b ; ret  (loops rdi times) */
static const uint8_t loop_code[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
/* Offsets of the instructions above, one source line each. */
static const uint32_t insn_at[] = {0, 3, 6, 8};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }
static void put32(FILE *f, uint32_t v) { put(f, &v, 4); }
static void put64(FILE *f, uint64_t v) { put(f, &v, 8); }

static void header(FILE *f) {
    put32(f, 0x4A695444); /* magic */
    put32(f, 1);          /* version */
    put32(f, 40);         /* total_size */
    put32(f, 62);         /* EM_X86_64 */
    put32(f, 0);          /* pad1 */
    put32(f, (uint32_t)getpid());
    put64(f, now_ns());
    put64(f, 0);          /* flags */
}

static void debug_info(FILE *f, uint64_t addr, const char *file, uint32_t first_line) {
    size_t n = sizeof insn_at / sizeof insn_at[0];
    uint32_t size = 16 + 16;
    for (size_t i = 0; i < n; i++) size += 16 + (uint32_t)(i == 0 ? strlen(file) + 1 : 2);
    put32(f, 2); /* JIT_CODE_DEBUG_INFO */
    put32(f, size);
    put64(f, now_ns());
    put64(f, addr);
    put64(f, n);
    for (size_t i = 0; i < n; i++) {
        put64(f, addr + insn_at[i]);
        put32(f, first_line + (uint32_t)i);
        put32(f, 0); /* discriminator */
        if (i == 0) put(f, file, strlen(file) + 1);
        else put(f, "\xff", 2); /* same file as the previous entry */
    }
}

static void code_load(FILE *f, uint64_t addr, const char *name, uint64_t index) {
    uint32_t size = 16 + 8 + 32 + (uint32_t)strlen(name) + 1 + sizeof loop_code;
    put32(f, 0); /* JIT_CODE_LOAD */
    put32(f, size);
    put64(f, now_ns());
    put32(f, (uint32_t)getpid());
    put32(f, (uint32_t)syscall(SYS_gettid));
    put64(f, addr); /* vma */
    put64(f, addr); /* code_addr */
    put64(f, sizeof loop_code);
    put64(f, index);
    put(f, name, strlen(name) + 1);
    put(f, loop_code, sizeof loop_code);
}

int main(int argc, char **argv) {
    long units = argc > 1 ? atol(argv[1]) : 30;
    uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) { perror("mmap"); return 1; }
    uint8_t *hot = mem, *cold = mem + 0x100;
    memcpy(hot, loop_code, sizeof loop_code);
    memcpy(cold, loop_code, sizeof loop_code);

    char path[64];
    snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
    FILE *f = fopen(path, "w+");
    if (!f) { perror(path); return 1; }
    header(f);
    /* The marker: perf records executable mappings, and this one names the dump. */
    void *marker = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0);
    if (marker == MAP_FAILED) { perror("mmap dump"); return 1; }
    debug_info(f, (uint64_t)(uintptr_t)hot, "hot.js", 10);
    code_load(f, (uint64_t)(uintptr_t)hot, "js:hot_loop hot.js:10", 1);
    debug_info(f, (uint64_t)(uintptr_t)cold, "cold.js", 20);
    code_load(f, (uint64_t)(uintptr_t)cold, "js:cold_loop cold.js:20", 2);
    fflush(f);

    uint64_t (*hot_fn)(uint64_t) = (uint64_t (*)(uint64_t))(uintptr_t)hot;
    uint64_t (*cold_fn)(uint64_t) = (uint64_t (*)(uint64_t))(uintptr_t)cold;
    for (long u = 0; u < units; u++) {
        hot_fn(30000000);
        cold_fn(10000000);
    }
    put32(f, 3); /* JIT_CODE_CLOSE */
    put32(f, 16);
    put64(f, now_ns());
    fclose(f);
    return 0;
}
#endif
