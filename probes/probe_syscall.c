/* System-call entry/exit probes (lmbench lat_syscall null, UnixBench syscall). */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct { long pid; } syscall_state;
static syscall_state sys_state;

static int getpid_setup(osb_ctx *c)
{
    sys_state.pid = (long)getpid();
    c->state = &sys_state;
    return 0;
}

/* syscall() rather than getpid(): some libcs cached the pid in user space,
 * which would time a function call instead of a kernel entry. */
static int null_syscall_loop(osb_ctx *c, int64_t n)
{
    long pid = ((syscall_state *)c->state)->pid;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++)
        ok += syscall(SYS_getpid) == pid;
    c->work = ok;
    return 0;
}

/* UnixBench syscall.c "mix": close(dup(0)), getpid, getuid, umask.
 * One iteration = five system calls. */
static int syscall_mix_loop(osb_ctx *c, int64_t n)
{
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        int fd = dup(0);
        if (fd >= 0 && close(fd) == 0)
            ok++;
        syscall(SYS_getpid);
        getuid();
        umask(022);
    }
    c->work = ok;
    if (ok != n)
        return osb_fail(c, EBADF, "dup(0)/close failed %lld of %lld times (is stdin open?)",
                        (long long)(n - ok), (long long)n);
    return 0;
}

const osb_probe osb_probes_syscall[] = {
    {"null_syscall", getpid_setup, null_syscall_loop, NULL},
    {"syscall_mix", NULL, syscall_mix_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
