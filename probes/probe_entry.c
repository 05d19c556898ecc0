/* Kernel-entry probes (lmbench lat_syscall, lat_select, lat_sig,
 * lat_pagefault, lat_mmap) and the clock_gettime floor. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 1000

typedef struct {
    int fd;
    int nfds;
    int fds[MAX_FDS];
    char path[4096];
    size_t file_bytes;
    struct sigaction old;
    int have_old;
} entry_state;

static entry_state *new_state(osb_ctx *c)
{
    entry_state *s = calloc(1, sizeof *s);
    if (!s) {
        osb_fail(c, ENOMEM, "out of memory");
        return NULL;
    }
    s->fd = -1;
    c->state = s;
    return s;
}

static int close_teardown(osb_ctx *c)
{
    entry_state *s = c->state;
    if (!s)
        return 0;
    if (s->fd >= 0)
        close(s->fd);
    for (int i = 0; i < s->nfds; i++)
        close(s->fds[i]);
    if (s->path[0])
        unlink(s->path);
    if (s->have_old)
        sigaction(SIGUSR1, &s->old, NULL);
    free(s);
    c->state = NULL;
    return 0;
}

static int open_dev(osb_ctx *c, const char *dev, int flags)
{
    entry_state *s = new_state(c);
    if (!s)
        return -1;
    s->fd = open(dev, flags | O_CLOEXEC);
    return s->fd < 0 ? osb_fail(c, errno, "cannot open %s: %s", dev, strerror(errno)) : 0;
}

static int devzero_setup(osb_ctx *c) { return open_dev(c, "/dev/zero", O_RDONLY); }
static int devnull_setup(osb_ctx *c) { return open_dev(c, "/dev/null", O_WRONLY); }

/* lmbench 'simple read': read(2) of one byte from /dev/zero; work = bytes read. */
static int read_loop(osb_ctx *c, int64_t n)
{
    entry_state *s = c->state;
    char b = 1;
    int64_t got = 0;
    for (int64_t i = 0; i < n; i++)
        got += read(s->fd, &b, 1) == 1 && b == 0;
    c->work = got;
    return got == n ? 0 : osb_fail(c, EIO, "read of /dev/zero failed %lld times", (long long)(n - got));
}

/* lmbench 'simple write': write(2) of one byte to /dev/null; work = bytes written. */
static int write_loop(osb_ctx *c, int64_t n)
{
    entry_state *s = c->state;
    char b = 0;
    int64_t put = 0;
    for (int64_t i = 0; i < n; i++)
        put += write(s->fd, &b, 1) == 1;
    c->work = put;
    return put == n ? 0 : osb_fail(c, EIO, "write to /dev/null failed %lld times", (long long)(n - put));
}

/* A file of `bytes` bytes (written, so its pages are in the page cache) in the workdir. */
static int make_file(osb_ctx *c, entry_state *s, const char *name, size_t bytes)
{
    if (!c->p->workdir || !c->p->workdir[0])
        return osb_fail(c, EINVAL, "workdir parameter is required");
    snprintf(s->path, sizeof s->path, "%s/%s", c->p->workdir, name);
    s->fd = open(s->path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    if (s->fd < 0)
        return osb_fail(c, errno, "cannot create %s: %s", s->path, strerror(errno));
    char buf[65536];
    memset(buf, 'x', sizeof buf);
    for (size_t done = 0; done < bytes;) {
        size_t k = bytes - done < sizeof buf ? bytes - done : sizeof buf;
        ssize_t w = write(s->fd, buf, k);
        if (w <= 0)
            return osb_fail(c, errno, "cannot write %s: %s", s->path, strerror(errno));
        done += (size_t)w;
    }
    s->file_bytes = bytes;
    return 0;
}

static int fstat_setup(osb_ctx *c)
{
    entry_state *s = new_state(c);
    return s ? make_file(c, s, "osbench_fstat", 8) : -1;
}

/* lmbench 'simple fstat': fstat(2) of an open file (no path lookup). */
static int fstat_loop(osb_ctx *c, int64_t n)
{
    entry_state *s = c->state;
    struct stat st;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++)
        ok += fstat(s->fd, &st) == 0 && st.st_size == 8;
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "fstat failed %lld times", (long long)(n - ok));
}

/* lmbench lat_select 'file': size descriptors of one open file, all readable. */
static int fds_setup(osb_ctx *c)
{
    entry_state *s = new_state(c);
    int want = c->p->size > 0 ? (int)c->p->size : 10;
    if (!s)
        return -1;
    if (want > MAX_FDS)
        return osb_fail(c, EINVAL, "fds must be <= %d (got %d)", MAX_FDS, want);
    if (make_file(c, s, "osbench_select", 8) != 0)
        return -1;
    for (s->nfds = 0; s->nfds < want; s->nfds++) {
        int fd = open(s->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return osb_fail(c, errno, "cannot open descriptor %d: %s", s->nfds, strerror(errno));
        s->fds[s->nfds] = fd;
        if (fd >= FD_SETSIZE)
            return osb_fail(c, EMFILE, "descriptor %d >= FD_SETSIZE", fd);
    }
    return 0;
}

/* One select(2) over all descriptors in the *write* set, rebuilt from a saved
 * copy each call, timeout 0, as lmbench's lat_select does; work = calls that
 * reported every descriptor ready. */
static int select_loop(osb_ctx *c, int64_t n)
{
    entry_state *s = c->state;
    fd_set all, rd;
    int maxfd = 0;
    FD_ZERO(&all);
    for (int i = 0; i < s->nfds; i++) {
        FD_SET(s->fds[i], &all);
        if (s->fds[i] > maxfd)
            maxfd = s->fds[i];
    }
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        struct timeval tv = {0, 0};
        rd = all;
        ok += select(maxfd + 1, NULL, &rd, NULL, &tv) == s->nfds;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "select missed descriptors %lld times", (long long)(n - ok));
}

static int poll_loop(osb_ctx *c, int64_t n)
{
    entry_state *s = c->state;
    struct pollfd pf[MAX_FDS];
    for (int i = 0; i < s->nfds; i++)
        pf[i] = (struct pollfd){.fd = s->fds[i], .events = POLLIN};
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++)
        ok += poll(pf, (nfds_t)s->nfds, 0) == s->nfds;
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "poll missed descriptors %lld times", (long long)(n - ok));
}

static volatile sig_atomic_t caught;

static void on_usr1(int sig)
{
    (void)sig;
    caught++;
}

/* The worker's own SIGUSR1 disposition is saved here and restored in teardown. */
static int signal_setup(osb_ctx *c)
{
    entry_state *s = new_state(c);
    struct sigaction sa;
    if (!s)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, &s->old) != 0)
        return osb_fail(c, errno, "sigaction failed: %s", strerror(errno));
    s->have_old = 1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    caught = 0;
    return 0;
}

/* lmbench 'signal handler installation': sigaction(2) of a handler, the old
 * action read back, as lat_sig install does. */
static int sigaction_loop(osb_ctx *c, int64_t n)
{
    struct sigaction sa, old;
    int64_t ok = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    for (int64_t i = 0; i < n; i++)
        ok += sigaction(SIGUSR1, &sa, &old) == 0 && old.sa_handler == on_usr1;
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "sigaction failed %lld times", (long long)(n - ok));
}

/* kill(getpid(), SIGUSR1) and the handler running; work = signals the
 * handler caught.  lmbench's 'signal handler overhead' subtracts the cost of
 * kill(getpid(), 0) from this; we keep the send in the time. */
static int sigcatch_loop(osb_ctx *c, int64_t n)
{
    pid_t me = getpid();
    caught = 0;
    for (int64_t i = 0; i < n; i++)
        kill(me, SIGUSR1);
    c->work = caught;
    return caught == n ? 0 : osb_fail(c, EIO, "caught %lld of %lld signals", (long long)caught, (long long)n);
}

/* kill(getpid(), 0): permission check, no signal -- lmbench's send cost,
 * which lat_sig subtracts from the catch; work = calls that succeeded. */
static int sigsend_loop(osb_ctx *c, int64_t n)
{
    pid_t me = getpid();
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++)
        ok += kill(me, 0) == 0;
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "kill(self, 0) failed %lld times", (long long)(n - ok));
}

/* Linux maps up to 16 neighbouring page-cache pages on one file fault
 * ("fault-around", 64 KiB): touching one page per 64 KiB makes every touch a fault. */
#define FAULT_STRIDE 65536

static int mapped_file_setup(osb_ctx *c)
{
    entry_state *s = new_state(c);
    size_t kb = c->p->size > 0 ? (size_t)c->p->size : 4096;
    return s ? make_file(c, s, "osbench_mapped", kb * 1024) : -1;
}

/* lmbench lat_pagefault: map the file, touch its pages in a stride, unmap;
 * one iteration = one page fault (the map/unmap shared by file/64 KiB
 * faults).  work = pages touched whose byte read back as written. */
static int pagefault_loop(osb_ctx *c, int64_t n)
{
    entry_state *s = c->state;
    int64_t done = 0, good = 0;
    while (done < n) {
        volatile char *m = mmap(NULL, s->file_bytes, PROT_READ, MAP_SHARED, s->fd, 0);
        if (m == MAP_FAILED)
            return osb_fail(c, errno, "mmap failed: %s", strerror(errno));
        for (size_t off = 0; off < s->file_bytes && done < n; off += FAULT_STRIDE, done++)
            good += m[off] == 'x';
        munmap((void *)m, s->file_bytes);
    }
    c->work = good;
    return good == n ? 0 : osb_fail(c, EIO, "%lld pages read back wrong", (long long)(n - good));
}

/* lmbench lat_mmap: mmap the file region, touch one byte per 64 KiB, munmap;
 * one iteration = one map + touch + unmap of the whole region. */
static int mmap_file_loop(osb_ctx *c, int64_t n)
{
    entry_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        volatile char *m = mmap(NULL, s->file_bytes, PROT_READ, MAP_SHARED, s->fd, 0);
        if (m == MAP_FAILED)
            return osb_fail(c, errno, "mmap failed: %s", strerror(errno));
        int good = 1;
        for (size_t off = 0; off < s->file_bytes; off += FAULT_STRIDE)
            good &= m[off] == 'x';
        ok += good && munmap((void *)m, s->file_bytes) == 0;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "map/touch/unmap failed %lld times", (long long)(n - ok));
}

/* clock_gettime(CLOCK_MONOTONIC), served by the vDSO: no kernel entry, the
 * floor under every probe; work = readings that did not go backwards. */
static int clock_loop(osb_ctx *c, int64_t n)
{
    struct timespec prev = {0, 0}, t;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        ok += t.tv_sec > prev.tv_sec || (t.tv_sec == prev.tv_sec && t.tv_nsec >= prev.tv_nsec);
        prev = t;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "clock went backwards %lld times", (long long)(n - ok));
}

const osb_probe osb_probes_entry[] = {
    {"read_devzero", devzero_setup, read_loop, close_teardown},
    {"write_devnull", devnull_setup, write_loop, close_teardown},
    {"fstat", fstat_setup, fstat_loop, close_teardown},
    {"select_fds", fds_setup, select_loop, close_teardown},
    {"poll_fds", fds_setup, poll_loop, close_teardown},
    {"sigaction_install", signal_setup, sigaction_loop, close_teardown},
    {"signal_catch", signal_setup, sigcatch_loop, close_teardown},
    {"signal_send", NULL, sigsend_loop, NULL},
    {"pagefault_file", mapped_file_setup, pagefault_loop, close_teardown},
    {"mmap_file", mapped_file_setup, mmap_file_loop, close_teardown},
    {"clock_gettime", NULL, clock_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
