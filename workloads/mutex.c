/* mutex.c: one contended pthread mutex, for `culprit lock`.
 * Build: cc -O1 -g -fno-omit-frame-pointer -pthread mutex.c -o mutex
 * Run:   ./mutex [threads] [rounds]  (default 4 threads, 500 rounds): each thread takes the
 *        global mutex `counter_lock` in add_under_lock() and spins about 100 µs holding it,
 *        `rounds` times, so the others wait in futex(FUTEX_WAIT) called from
 *        pthread_mutex_lock: the lock and its call site (add_under_lock) are the top of
 *        `culprit lock contention`'s user-lock table. Prints the mutex's address.
 * The lock is taken through one helper, take_lock(), so that frame-pointer call chains
 * (which lose the caller of a libc function without a frame pointer: here take_lock)
 * still show add_under_lock. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;
static int rounds = 500;

static void spin_us(long us) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 100; i++)
            counter += i;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

__attribute__((noinline)) static void take_lock(void) {
    pthread_mutex_lock(&counter_lock);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void add_under_lock(void) {
    take_lock();
    spin_us(100);
    pthread_mutex_unlock(&counter_lock);
}

static void *worker(void *arg) {
    (void)arg;
    for (int r = 0; r < rounds; r++)
        add_under_lock();
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        rounds = atoi(argv[2]);
    if (threads < 1 || threads > 64 || rounds < 1)
        return 2;
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("mutex: counter_lock at %p\n", (void *)&counter_lock);
    return 0;
}
