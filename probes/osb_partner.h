/* Small helpers shared by the catalog's probe families (entry, ipc, service,
 * files, memory_bw, sweeps): full reads/writes and the forked partner process.
 * Header-only (static inline), so each family stays one translation unit. */
#ifndef OSB_PARTNER_H
#define OSB_PARTNER_H

#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* 1: all n bytes moved, 0: EOF first, -1: error. */
static inline int osb_read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r == 0)
            return 0;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

static inline int osb_write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* fork() a partner (server, echo, reader): in the child it returns 0 after
 * arranging to die with the caller (PR_SET_PDEATHSIG, so a killed worker or
 * Ctrl-C leaves no partner behind) and pinning to child_cpu; in the caller it
 * returns the pid, or -1.  The child must end with _exit(), never return. */
static inline pid_t osb_fork_partner(osb_ctx *c)
{
    pid_t self = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != self)
            _exit(0);
        osb_pin_self(c->p->child_cpu);
    }
    return pid;
}

/* Reap a partner: 0 if it exited with status 0.  With kill_it, SIGKILL first
 * (for partners blocked in a wait that will never end, e.g. after an error). */
static inline int osb_reap_partner(pid_t pid, int kill_it)
{
    int st;
    if (pid <= 0)
        return 0;
    if (kill_it)
        kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return kill_it || (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : -1;
}

#endif
