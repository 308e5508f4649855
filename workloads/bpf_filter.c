// Loads a socket filter BPF program named `culprit_hot` (a long straight line of ALU
// instructions, so that its JIT code is where time goes) and runs it by sending UDP
// datagrams to a loopback socket it is attached to, for SECONDS (default 1). Needs root
// (CAP_BPF) and a kernel with BPF; exits 2 when it cannot load or attach the program.
// Samples in the program's JIT image are named by the recording's PERF_RECORD_KSYMBOL.
// `bpf_filter SECONDS FILE` also writes the program's JIT image, as the kernel gives it
// (BPF_OBJ_GET_INFO_BY_FD), to FILE: what annotate must show.
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

// Writes the JIT image of program `fd` to `path`; 0 on success.
static int write_jited(int fd, const char *path) {
    struct bpf_prog_info info;
    union bpf_attr attr;
    memset(&info, 0, sizeof info);
    memset(&attr, 0, sizeof attr);
    attr.info.bpf_fd = fd;
    attr.info.info_len = sizeof info;
    attr.info.info = (unsigned long)&info;
    if (syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof attr)) return -1;
    __u32 n = info.jited_prog_len;
    unsigned char *code = malloc(n ? n : 1);
    memset(&info, 0, sizeof info);
    info.jited_prog_len = n;
    info.jited_prog_insns = (unsigned long)code;
    if (!code || syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof attr)) return -1;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(code, 1, n, f) != n || fclose(f)) return -1;
    free(code);
    return 0;
}

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
    if (argc > 2 && write_jited(fd, argv[2])) { perror(argv[2]); return 1; }
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
