/* osbench-parent: a minimal native parent for the probes that fork.
 *
 *   osbench-parent WORKER_PID PROBE HELPER_PATH WORKDIR CHILD_CPU SIZE PARENT_MB
 *
 * Linked with the same harness and probe tables as the cffi extension, it runs
 * batches of one probe on request: the worker (worker.py) writes an int64
 * iteration count to its stdin, and it answers with the osb_result the harness
 * filled (the raw struct: both sides are built by the same compiler from
 * harness.h).  EOF on stdin ends it.  Why: fork() copies the page tables of the
 * process that calls it, so a fork probe called inside a ~14 MB Python
 * interpreter measures the interpreter (issue 9: ~360 us instead of ~150 us for
 * fork+exit+wait).  Every published fork figure forks from a small C program;
 * this is that program.  PARENT_MB adds that much anonymous memory, touched,
 * to the parent (LEBench's big/huge fork).
 *
 * It dies with the worker (PR_SET_PDEATHSIG) and reaps every child it has
 * before it exits; the probes reap their own children batch by batch. */
#define _GNU_SOURCE
#include "harness.h"
#include "osb_partner.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: osbench-parent WORKER_PID PROBE HELPER_PATH WORKDIR CHILD_CPU SIZE PARENT_MB\n");
        return 125;
    }
    pid_t worker = (pid_t)atol(argv[1]);
    /* SIGKILL when the worker dies, however it dies; it may have died already */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != worker)
        return 125;
    osb_params p = {
        .workdir = argv[4],
        .helper_path = argv[3],
        .child_cpu = (int32_t)atol(argv[5]),
        .size = (int64_t)atoll(argv[6]),
    };
    long parent_mb = atol(argv[7]);
    if (parent_mb > 0) {  /* the parent's size: anonymous, private, every page touched */
        size_t len = (size_t)parent_mb << 20;
        char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            fprintf(stderr, "osbench-parent: cannot map %ld MB: %s\n", parent_mb, strerror(errno));
            return 124;
        }
        long page = sysconf(_SC_PAGESIZE);
        for (size_t off = 0; off < len; off += (size_t)page)
            mem[off] = 1;
    }
    const char *probe = argv[2];
    osb_result r;
    int64_t n;
    int status;
    while (osb_read_full(0, &n, sizeof n) == 1) {
        osb_run(probe, &p, n, &r);
        if (osb_write_full(1, &r, sizeof r) != 1)
            break;
    }
    while (waitpid(-1, &status, 0) > 0) {}  /* anything a probe left: reaped, not orphaned */
    return 0;
}
