/* Microkernel-style IPC: one small service done directly as a system call,
 * and as a request to a user-space server process that performs it and
 * replies -- over pipes, an AF_UNIX socket, or shared memory with futex
 * wake-ups (the L4-style design).  The difference per call is what moving a
 * service out of the kernel costs on this monolithic kernel (MINIX 3's
 * system calls are messages to servers).
 *
 * The service (size = bytes): 0 -> getppid(); N > 0 -> read N bytes from
 * /dev/zero, the N bytes returned in the reply.  The client checks every
 * reply: getppid() in the server is the client's pid; read bytes are zeros. */
#define _GNU_SOURCE
#include "osb_partner.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#define MAX_BYTES 4096

typedef struct {
    int64_t seq;
    int64_t result;
} reply_head;

typedef struct {
    _Atomic uint32_t req;    /* client bumps: a request is waiting */
    _Atomic uint32_t rep;    /* server sets to req: the reply is ready */
    _Atomic uint32_t stop;
    int64_t result;
    unsigned char data[MAX_BYTES];
} shm_box;

typedef struct {
    int to_server, from_server;  /* pipe ends, or the same socket twice */
    int zero;                    /* /dev/zero for the direct read service */
    pid_t server;
    pid_t me;
    shm_box *box;
    size_t bytes;
    unsigned char buf[MAX_BYTES];
} service_state;

static int bytes_of(osb_ctx *c, size_t *out)
{
    if (c->p->size < 0 || c->p->size > MAX_BYTES)
        return osb_fail(c, EINVAL, "bytes must be in 0..%d (got %lld)", MAX_BYTES, (long long)c->p->size);
    *out = (size_t)c->p->size;
    return 0;
}

/* The service itself, as the kernel would do it for a caller. */
static int64_t do_service(int zero, size_t bytes, unsigned char *buf)
{
    if (bytes == 0)
        return (int64_t)getppid();
    return (int64_t)read(zero, buf, bytes);
}

static int reply_ok(service_state *s, int64_t result, const unsigned char *data)
{
    if (s->bytes == 0)
        return result == (int64_t)s->me;
    if (result != (int64_t)s->bytes)
        return 0;
    return data[0] == 0 && data[s->bytes - 1] == 0;
}

static service_state *new_state(osb_ctx *c)
{
    service_state *s = calloc(1, sizeof *s);
    if (!s) {
        osb_fail(c, ENOMEM, "out of memory");
        return NULL;
    }
    s->to_server = s->from_server = s->zero = -1;
    s->me = getpid();
    c->state = s;
    if (bytes_of(c, &s->bytes) != 0)
        return NULL;
    s->zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (s->zero < 0) {
        osb_fail(c, errno, "cannot open /dev/zero: %s", strerror(errno));
        return NULL;
    }
    return s;
}

static int service_teardown(osb_ctx *c)
{
    service_state *s = c->state;
    int rc = 0;
    if (!s)
        return 0;
    if (s->box) {
        atomic_store(&s->box->stop, 1);
        atomic_fetch_add(&s->box->req, 1);
        syscall(SYS_futex, &s->box->req, FUTEX_WAKE, 1, NULL, NULL, 0);
    }
    if (s->to_server >= 0)
        close(s->to_server);   /* EOF ends a pipe/socket server */
    if (s->from_server >= 0 && s->from_server != s->to_server)
        close(s->from_server);
    if (osb_reap_partner(s->server, c->out->error != 0) != 0)
        rc = osb_fail(c, ECHILD, "server did not exit cleanly");
    if (s->box)
        munmap(s->box, sizeof *s->box);
    if (s->zero >= 0)
        close(s->zero);
    free(s);
    c->state = NULL;
    return rc;
}

/* ---- direct: the service as one system call */

static int direct_setup(osb_ctx *c)
{
    return new_state(c) ? 0 : -1;
}

static int direct_loop(osb_ctx *c, int64_t n)
{
    service_state *s = c->state;
    pid_t parent = getppid();
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        s->buf[0] = s->bytes ? 1 : 0;
        int64_t r = do_service(s->zero, s->bytes, s->buf);
        ok += s->bytes == 0 ? r == (int64_t)parent : (r == (int64_t)s->bytes && s->buf[0] == 0);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld services failed", (long long)(n - ok));
}

/* ---- over a byte stream (pipes or AF_UNIX): request = seq (8 B),
 * reply = seq + result (16 B) + the bytes read */

static void stream_server(int in, int out, int zero, size_t bytes)
{
    struct {
        reply_head h;
        unsigned char data[MAX_BYTES];
    } rep;
    int64_t seq;
    for (;;) {
        int r = osb_read_full(in, &seq, sizeof seq);
        if (r == 0)
            _exit(0);
        if (r < 0)
            _exit(2);
        rep.h.seq = seq;
        rep.h.result = do_service(zero, bytes, rep.data);
        if (osb_write_full(out, &rep, sizeof rep.h + bytes) != 1)
            _exit(3);
    }
}

static int pipe_setup(osb_ctx *c)
{
    service_state *s = new_state(c);
    int req[2], rep[2];
    if (!s)
        return -1;
    if (pipe2(req, O_CLOEXEC) != 0)
        return osb_fail(c, errno, "pipe failed: %s", strerror(errno));
    if (pipe2(rep, O_CLOEXEC) != 0) {
        close(req[0]);
        close(req[1]);
        return osb_fail(c, errno, "pipe failed: %s", strerror(errno));
    }
    s->server = osb_fork_partner(c);
    if (s->server == 0) {
        close(req[1]);
        close(rep[0]);
        stream_server(req[0], rep[1], s->zero, s->bytes);
    }
    close(req[0]);
    close(rep[1]);
    s->to_server = req[1];
    s->from_server = rep[0];
    return s->server < 0 ? osb_fail(c, errno, "fork failed: %s", strerror(errno)) : 0;
}

static int unix_setup(osb_ctx *c)
{
    service_state *s = new_state(c);
    int sv[2];
    if (!s)
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return osb_fail(c, errno, "socketpair failed: %s", strerror(errno));
    s->server = osb_fork_partner(c);
    if (s->server == 0) {
        close(sv[1]);
        stream_server(sv[0], sv[0], s->zero, s->bytes);
    }
    close(sv[0]);
    s->to_server = s->from_server = sv[1];
    return s->server < 0 ? osb_fail(c, errno, "fork failed: %s", strerror(errno)) : 0;
}

/* One request and its checked reply; work = replies that were right. */
static int stream_loop(osb_ctx *c, int64_t n)
{
    service_state *s = c->state;
    reply_head h;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        if (osb_write_full(s->to_server, &i, sizeof i) != 1 ||
            osb_read_full(s->from_server, &h, sizeof h) != 1 ||
            (s->bytes && osb_read_full(s->from_server, s->buf, s->bytes) != 1))
            return osb_fail(c, errno ? errno : EIO, "request %lld got no reply", (long long)i);
        ok += h.seq == i && reply_ok(s, h.result, s->buf);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld replies wrong", (long long)(n - ok));
}

/* ---- shared memory + futex: no copy through the kernel, one wake-up each way */

static void futex_wait(_Atomic uint32_t *addr, uint32_t seen)
{
    syscall(SYS_futex, addr, FUTEX_WAIT, seen, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void shm_server(shm_box *b, int zero, size_t bytes)
{
    uint32_t done = 0;   /* the box starts zeroed: a request sent before we get here is not lost */
    for (;;) {
        uint32_t now;
        while ((now = atomic_load(&b->req)) == done)
            futex_wait(&b->req, done);
        if (atomic_load(&b->stop))
            _exit(0);
        b->result = do_service(zero, bytes, b->data);
        done = now;
        atomic_store(&b->rep, now);
        futex_wake(&b->rep);
    }
}

static int shm_setup(osb_ctx *c)
{
    service_state *s = new_state(c);
    if (!s)
        return -1;
    /* MAP_SHARED: inherited by the server; futexes on it are shared (not PRIVATE). */
    s->box = mmap(NULL, sizeof *s->box, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s->box == MAP_FAILED) {
        s->box = NULL;
        return osb_fail(c, errno, "mmap failed: %s", strerror(errno));
    }
    memset(s->box, 0, sizeof *s->box);
    s->server = osb_fork_partner(c);
    if (s->server == 0)
        shm_server(s->box, s->zero, s->bytes);
    return s->server < 0 ? osb_fail(c, errno, "fork failed: %s", strerror(errno)) : 0;
}

static int shm_loop(osb_ctx *c, int64_t n)
{
    service_state *s = c->state;
    shm_box *b = s->box;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        if (s->bytes)
            b->data[0] = b->data[s->bytes - 1] = 1;
        b->result = -1;
        uint32_t want = atomic_fetch_add(&b->req, 1) + 1;
        futex_wake(&b->req);
        uint32_t got;
        while ((got = atomic_load(&b->rep)) != want)
            futex_wait(&b->rep, got);
        ok += reply_ok(s, b->result, b->data);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld replies wrong", (long long)(n - ok));
}

const osb_probe osb_probes_service[] = {
    {"service_direct", direct_setup, direct_loop, service_teardown},
    {"service_pipe", pipe_setup, stream_loop, service_teardown},
    {"service_unix", unix_setup, stream_loop, service_teardown},
    {"service_shm", shm_setup, shm_loop, service_teardown},
    {NULL, NULL, NULL, NULL},
};
