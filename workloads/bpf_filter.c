// Loads a socket filter BPF program named `culprit_hot` (a long straight line of ALU
// instructions, so that its JIT code is where time goes) and runs it by sending UDP
// datagrams to a loopback socket it is attached to, for SECONDS (default 1). Needs root
// (CAP_BPF) and a kernel with BPF; exits 2 when it cannot load or attach the program.
// Samples in the program's JIT image are named by the recording's PERF_RECORD_KSYMBOL.
// Build: cc -O1 -g bpf_filter.c
#include <linux/bpf.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// 12,000 instructions: 96 KB of program, within the default net.core.optmem_max (128 KB)
// that SO_ATTACH_BPF charges it to.
#define ALU_INSNS 12000

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    static struct bpf_insn prog[ALU_INSNS + 3];
    int n = 0;
    prog[n++] = (struct bpf_insn){.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0};
    for (int i = 0; i < ALU_INSNS; i++)
        prog[n++] = (struct bpf_insn){.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_0, .imm = 1};
    // Keep no bytes: the datagram is dropped after the filter ran.
    prog[n++] = (struct bpf_insn){.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0};
    prog[n++] = (struct bpf_insn){.code = BPF_JMP | BPF_EXIT};
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insns = (unsigned long)prog;
    attr.insn_cnt = n;
    attr.license = (unsigned long)"GPL";
    strcpy(attr.prog_name, "culprit_hot");
    int fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
    if (fd < 0) { perror("bpf(BPF_PROG_LOAD)"); return 2; }
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(rx, (struct sockaddr *)&a, sizeof a) || getsockname(rx, (struct sockaddr *)&a, &len)) { perror("bind"); return 2; }
    if (setsockopt(rx, SOL_SOCKET, SO_ATTACH_BPF, &fd, sizeof fd)) { perror("SO_ATTACH_BPF"); return 2; }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long sent = 0;
    do {
        for (int i = 0; i < 64; i++, sent++)
            sendto(tx, "x", 1, 0, (struct sockaddr *)&a, sizeof a);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    printf("%ld datagrams\n", sent);
    return 0;
}
