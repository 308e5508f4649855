/* offcpu.c: off-CPU time known by construction.
 * Build: cc -O1 -g -fno-omit-frame-pointer offcpu.c -o offcpu
 * Run:   ./offcpu sleep [rounds]  (default 20): each round sleeps 2 ms in short_sleep() and
 *        20 ms in long_sleep(), so their off-CPU times are 1:10 (plus scheduling slack).
 *        ./offcpu pipe [rounds]   (default 10): a writer thread sends one byte every 10 ms;
 *        the main thread blocks in read() inside reader_waits(), so nearly all of its
 *        off-CPU time is under reader_waits.
 * Both sleepers block through one helper, nap(), so that with frame-pointer call chains
 * (which lose the caller of a libc function without a frame pointer: here nap) the
 * functions that chose the duration still show. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void nap(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

__attribute__((noinline)) void short_sleep(void) { nap(2); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void long_sleep(void) { nap(20); __asm__ volatile("" ::: "memory"); }

static int fds[2];
static int rounds = 10;

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < rounds; i++) {
        nap(10);
        if (write(fds[1], "x", 1) != 1) {
            break;
        }
    }
    close(fds[1]);
    return NULL;
}

__attribute__((noinline)) long reader_waits(void) {
    char c;
    long n = 0;
    while (read(fds[0], &c, 1) == 1) {
        n++;
    }
    __asm__ volatile("" ::: "memory");
    return n;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "sleep";
    if (strcmp(mode, "sleep") == 0) {
        int n = argc > 2 ? atoi(argv[2]) : 20;
        for (int i = 0; i < n; i++) {
            short_sleep();
            long_sleep();
        }
        return 0;
    }
    if (strcmp(mode, "pipe") == 0) {
        rounds = argc > 2 ? atoi(argv[2]) : 10;
        pthread_t t;
        if (pipe(fds) != 0 || pthread_create(&t, NULL, writer, NULL) != 0) {
            perror("offcpu");
            return 1;
        }
        long got = reader_waits();
        pthread_join(t, NULL);
        printf("read %ld bytes\n", got);
        return 0;
    }
    fprintf(stderr, "usage: offcpu sleep|pipe [rounds]\n");
    return 2;
}
