/* jit_dump.c: a minimal JIT runtime that writes a perf JIT dump, as V8 (--perf-prof) and
 * CPython 3.13 (-X perf_jit) do (tools/perf/Documentation/jitdump-specification.txt).
 * Build: cc -O1 -g -fno-omit-frame-pointer jit_dump.c -o jit_dump
 * Run:   ./jit_dump [units]  (default 30)
 * It copies two x86-64 functions into anonymous executable memory, writes
 * ./jit-PID.dump with their code-load records (names `js:hot_loop hot.js:10` and
 * `js:cold_loop cold.js:20`, code bytes) and debug-info records (one line per
 * instruction), maps the dump executable (the marker a recording keeps), then runs
 * hot_loop 3 times as long as cold_loop: hot ~ 75%, cold ~ 25% of the JIT code's
 * samples. Timestamps are CLOCK_MONOTONIC (record with `-k mono` for `perf inject --jit`).
 *
 * `./jit_dump UNITS unwind` instead runs one JIT function, `js:framed_loop frame.js:30`,
 * that keeps a 40-byte stack frame and no frame pointer, called from the C function
 * `call_framed` (itself called from main). Its code load is preceded by a
 * JIT_CODE_UNWINDING_INFO record (.eh_frame and .eh_frame_hdr, as V8 writes with
 * --perf-prof-unwinding-info): a DWARF unwinder that reads it finds call_framed as the
 * caller, one that falls back to frame pointers skips call_framed (%rbp is still
 * call_framed's frame, whose return address is main's). */
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

/* sub $40,%rsp ; mov %rdi,%rax ; 1: dec %rax ; jnz 1b ; add $40,%rsp ; ret
 * The CFA is %rsp+8 at 0 and 16, %rsp+48 from 4 to 16. */
static const uint8_t framed_code[] = {0x48, 0x83, 0xec, 0x28, 0x48, 0x89, 0xf8, 0x48, 0xff,
                                      0xc8, 0x75, 0xfb, 0x48, 0x83, 0xc4, 0x28, 0xc3};

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

/* A JIT_CODE_LOAD of `len` code bytes at addr (the code is copied into the record). */
static void code_load_of(FILE *f, uint64_t addr, const char *name, uint64_t index,
                         const uint8_t *code, uint32_t len) {
    uint32_t size = 16 + 8 + 32 + (uint32_t)strlen(name) + 1 + len;
    put32(f, 0); /* JIT_CODE_LOAD */
    put32(f, size);
    put64(f, now_ns());
    put32(f, (uint32_t)getpid());
    put32(f, (uint32_t)syscall(SYS_gettid));
    put64(f, addr); /* vma */
    put64(f, addr); /* code_addr */
    put64(f, len);
    put64(f, index);
    put(f, name, strlen(name) + 1);
    put(f, code, len);
}

static void code_load(FILE *f, uint64_t addr, const char *name, uint64_t index) {
    code_load_of(f, addr, name, index, loop_code, sizeof loop_code);
}

/* Little-endian stores into a byte buffer. */
static void set32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* The .eh_frame (one CIE, one FDE, a terminator) and .eh_frame_hdr of framed_code, for the
 * layout perf inject --jit gives them: the code at 0, .eh_frame at the code size rounded
 * up to 8, .eh_frame_hdr right after it. Returns the .eh_frame size; the header is 20. */
static size_t framed_unwinding(uint8_t *out) {
    uint64_t eh = (sizeof framed_code + 7) & ~7ull;
    uint8_t *cie = out, *fde = out + 24, *hdr = out + 68;
    memset(out, 0, 88);
    /* CIE: length 20, id 0, version 1, "zR", code align 1, data align -8, RA = r16,
     * augmentation length 1, FDE pointers pcrel|sdata4 (0x1b); CFA = rsp+8
     * (DW_CFA_def_cfa 7 8), RA at CFA-8 (DW_CFA_offset r16 1); padded with DW_CFA_nop. */
    static const uint8_t cie_body[] = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
                                       0x0c, 7, 8, 0x90, 1};
    set32(cie, 20);
    memcpy(cie + 4, cie_body, sizeof cie_body);
    /* FDE: length 36, CIE pointer (back to the CIE), pc_begin (pcrel), pc_range, no
     * augmentation data; advance 4, CFA offset 48; advance 12, CFA offset 8. */
    set32(fde, 36);
    set32(fde + 4, 28);
    set32(fde + 8, (uint32_t)(0 - (eh + 32)));
    set32(fde + 12, sizeof framed_code);
    static const uint8_t fde_ops[] = {0, 0x44, 0x0e, 48, 0x4c, 0x0e, 8};
    memcpy(fde + 16, fde_ops, sizeof fde_ops);
    /* Terminator (length 0) at 64. .eh_frame_hdr: version 1, eh_frame_ptr pcrel|sdata4,
     * fde_count udata4, table datarel|sdata4; the table's one entry (pc, FDE). */
    hdr[0] = 1, hdr[1] = 0x1b, hdr[2] = 0x03, hdr[3] = 0x3b;
    set32(hdr + 4, (uint32_t)-72);
    set32(hdr + 8, 1);
    set32(hdr + 12, (uint32_t)(0 - (eh + 68)));
    set32(hdr + 16, (uint32_t)-44);
    return 68;
}

static void unwinding_info(FILE *f) {
    uint8_t data[88];
    size_t eh = framed_unwinding(data), total = eh + 20, padded = (total + 7) & ~(size_t)7;
    put32(f, 4); /* JIT_CODE_UNWINDING_INFO */
    put32(f, (uint32_t)(16 + 24 + padded));
    put64(f, now_ns());
    put64(f, total);    /* unwinding_size */
    put64(f, 20);       /* eh_frame_hdr_size */
    put64(f, total);    /* mapped_size */
    put(f, data, total);
    put(f, "\0\0\0\0\0\0\0", padded - total);
}

static void framed_load(FILE *f, uint64_t addr) {
    code_load_of(f, addr, "js:framed_loop frame.js:30", 3, framed_code, sizeof framed_code);
}

/* The C caller of the framed JIT function (a frame of its own, with %rbp). */
__attribute__((noinline)) uint64_t call_framed(uint64_t (*fn)(uint64_t), uint64_t n) {
    uint64_t r = fn(n);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

int main(int argc, char **argv) {
    long units = argc > 1 ? atol(argv[1]) : 30;
    int unwind = argc > 2 && strcmp(argv[2], "unwind") == 0;
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
    if (unwind) {
        uint8_t *framed = mem + 0x200;
        memcpy(framed, framed_code, sizeof framed_code);
        unwinding_info(f);
        framed_load(f, (uint64_t)(uintptr_t)framed);
        fflush(f);
        uint64_t (*framed_fn)(uint64_t) = (uint64_t (*)(uint64_t))(uintptr_t)framed;
        uint64_t sum = 0;
        for (long u = 0; u < units; u++) sum += call_framed(framed_fn, 40000000);
        put32(f, 3); /* JIT_CODE_CLOSE */
        put32(f, 16);
        put64(f, now_ns());
        fclose(f);
        return sum == 0;
    }
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
