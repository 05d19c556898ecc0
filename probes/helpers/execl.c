/* UnixBench execl's method: a process that re-executes its own program,
 * counting down, without fork (the exec-only probe).
 *
 *   osbench-execl REMAINING DONE FD
 *
 * Each run execs itself with REMAINING-1 and DONE+1; the last one writes DONE
 * (an int64: how many execs really happened) to FD, so the probe can prove the
 * work, and exits 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4)
        return 125;
    long long remaining = atoll(argv[1]), done = atoll(argv[2]);
    if (remaining <= 0) {
        int64_t d = done;
        return write(atoi(argv[3]), &d, sizeof d) == (ssize_t)sizeof d ? 0 : 126;
    }
    char r[24], d[24];
    snprintf(r, sizeof r, "%lld", remaining - 1);
    snprintf(d, sizeof d, "%lld", done + 1);
    execl("/proc/self/exe", argv[0], r, d, argv[3], (char *)NULL);
    return 127;
}
