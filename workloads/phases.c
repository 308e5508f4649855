/* phases.c: a serial phase, then a parallel one, for latency profiling.
 * Build: cc -O1 -g -fno-omit-frame-pointer -pthread phases.c -o phases
 * Run:   ./phases [ms]  (default 1000): serial_phase() spins `ms` of CPU on the main thread
 *        alone, then parallel_phase() spins `ms` of CPU split over 2 threads at once (ms/2
 *        each). On 2 free CPUs both phases use the same CPU time (Overhead 1/2 each) while
 *        the serial one lasts twice as long (Latency 2/3 serial, 1/3 parallel), and the
 *        parallelism is 1 for 2/3 of the wall-clock time and 2 for 1/3. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Spins until `ms` of CPU time of this thread have passed. */
static void spin_cpu(double ms) {
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

__attribute__((noinline)) void serial_phase(double ms) { spin_cpu(ms); }

__attribute__((noinline)) void parallel_work(double ms) { spin_cpu(ms); }

static void *worker(void *arg) {
    parallel_work(*(double *)arg);
    return NULL;
}

__attribute__((noinline)) void parallel_phase(double ms) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, &ms);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 1000;
    if (ms <= 0)
        return 2;
    double t0 = now_ms();
    serial_phase(ms);
    double t1 = now_ms();
    parallel_phase(ms / 2);
    printf("phases: serial %.0f ms, parallel %.0f ms\n", t1 - t0, now_ms() - t1);
    return 0;
}
