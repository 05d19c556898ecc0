/* Reference for benchmarks/harness_overhead.py: the same system call as the
 * null_syscall probe, in a bare loop timed once around all iterations. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000L;
    long pid = (long)getpid(), ok = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t0);
    for (long i = 0; i < n; i++)
        ok += syscall(SYS_getpid) == pid;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("%.4f %ld\n", ns / n, ok);
    return ok == n ? 0 : 1;
}
