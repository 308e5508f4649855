/* schedmix.c: scheduling delay by construction: more runnable threads than CPUs.
 * Build: cc -O1 -g -fno-omit-frame-pointer -pthread schedmix.c -o schedmix
 * Run:   ./schedmix [threads] [rounds]  (default 4 threads, 20 rounds): each thread spins
 *        about 2 ms of CPU, then sleeps 1 ms, `rounds` times. With more threads than CPUs
 *        the woken threads wait for a CPU, so `culprit sched latency` shows their delay;
 *        the thread names are schedmix-N (prctl), one row each with --pids. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int rounds = 20;
static volatile unsigned long sink;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Spins for about `ms` of CPU time (thread CPU clock: waiting for a CPU does not count). */
__attribute__((noinline)) static void spin(double ms) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    double end = t.tv_sec * 1e3 + t.tv_nsec / 1e6 + ms;
    for (;;) {
        for (int i = 0; i < 1000; i++)
            sink += i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        if (t.tv_sec * 1e3 + t.tv_nsec / 1e6 >= end)
            break;
    }
}

static void *worker(void *arg) {
    char name[16];
    snprintf(name, sizeof name, "schedmix-%ld", (long)arg);
    prctl(PR_SET_NAME, name);
    for (int r = 0; r < rounds; r++) {
        spin(2.0);
        usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        rounds = atoi(argv[2]);
    if (threads < 1 || threads > 64 || rounds < 1)
        return 2;
    pthread_t t[64];
    double start = now_ms();
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("schedmix: %d threads x %d rounds in %.1f ms\n", threads, rounds, now_ms() - start);
    return 0;
}
