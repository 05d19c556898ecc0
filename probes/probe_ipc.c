/* IPC between two (or N) processes: pipe and AF_UNIX bandwidth, AF_UNIX, TCP
 * and UDP round trips on loopback, and lmbench's context switch among N
 * processes.  Every partner is forked in setup (untimed), dies with its
 * parent, and is reaped in teardown; sockets bind 127.0.0.1 only. */
#define _GNU_SOURCE
#include "osb_partner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CHUNK 65536
#define MAX_RING 64

typedef struct {
    int fd;              /* our end (write end / socket) */
    int report;          /* bandwidth: the control pipe asking the writer for bytes */
    pid_t partner;
    int nring;
    int ring[MAX_RING][2];
    pid_t ring_pids[MAX_RING];
    char buf[CHUNK];
} ipc_state;

static ipc_state *new_state(osb_ctx *c)
{
    ipc_state *s = calloc(1, sizeof *s);
    if (!s) {
        osb_fail(c, ENOMEM, "out of memory");
        return NULL;
    }
    s->fd = s->report = -1;
    c->state = s;
    return s;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* ---- bandwidth, as lmbench's bw_pipe/bw_unix: the partner writes 64 KiB
 * chunks on request, the timed side is the reader */

static void writer(int out, int control)
{
    static char buf[CHUNK];
    int64_t todo;
    memset(buf, 'b', sizeof buf);
    for (;;) {
        int r = osb_read_full(control, &todo, sizeof todo);
        if (r == 0)
            _exit(0);
        if (r < 0)
            _exit(2);
        while (todo > 0) {
            if (osb_write_full(out, buf, CHUNK) != 1)
                _exit(3);
            todo -= CHUNK;
        }
    }
}

/* fds[1] (write end) goes to the writer partner, fds[0] stays with us. */
static int bw_setup_with(osb_ctx *c, int fds[2])
{
    ipc_state *s = c->state;
    int ctl[2];
    if (pipe2(ctl, O_CLOEXEC) != 0) {
        close(fds[0]);
        close(fds[1]);
        return osb_fail(c, errno, "pipe failed: %s", strerror(errno));
    }
    s->partner = osb_fork_partner(c);
    if (s->partner == 0) {
        close(fds[0]);
        close(ctl[1]);
        writer(fds[1], ctl[0]);
    }
    close(fds[1]);
    close(ctl[0]);
    s->fd = fds[0];
    s->report = ctl[1];   /* here: where we ask for bytes */
    if (s->partner < 0)
        return osb_fail(c, errno, "fork failed: %s", strerror(errno));
    return 0;
}

static int pipe_bw_setup(osb_ctx *c)
{
    int fds[2];
    if (!new_state(c))
        return -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return osb_fail(c, errno, "pipe failed: %s", strerror(errno));
    return bw_setup_with(c, fds);
}

static int unix_bw_setup(osb_ctx *c)
{
    int fds[2];
    if (!new_state(c))
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        return osb_fail(c, errno, "socketpair failed: %s", strerror(errno));
    return bw_setup_with(c, fds);
}

/* Ask the writer for n chunks and read them all (reads of up to 64 KiB, as
 * lmbench's reader); work = chunks' worth of bytes received. */
static int bw_loop(osb_ctx *c, int64_t n)
{
    ipc_state *s = c->state;
    int64_t want = n * CHUNK, got = 0;
    if (osb_write_full(s->report, &want, sizeof want) != 1)
        return osb_fail(c, errno, "cannot ask the writer for bytes: %s", strerror(errno));
    while (got < want) {
        ssize_t r = read(s->fd, s->buf, CHUNK);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            break;
        }
        got += r;
    }
    c->work = got / CHUNK;
    return got == want ? 0 : osb_fail(c, EIO, "read %lld of %lld bytes", (long long)got, (long long)want);
}

static int ipc_teardown(osb_ctx *c)
{
    ipc_state *s = c->state;
    int rc = 0;
    if (!s)
        return 0;
    if (s->fd >= 0) {   /* UDP has no EOF: an empty datagram ends the echo partner */
        int type = 0;
        socklen_t len = sizeof type;
        if (getsockopt(s->fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM)
            send(s->fd, "", 0, 0);
    }
    close_fd(&s->fd);   /* EOF ends an echo partner */
    close_fd(&s->report);   /* EOF on its control pipe ends a writer */
    if (osb_reap_partner(s->partner, c->out->error != 0) != 0)
        rc = osb_fail(c, ECHILD, "partner did not exit cleanly");
    for (int i = 0; i < s->nring; i++) {
        close_fd(&s->ring[i][0]);
        close_fd(&s->ring[i][1]);
    }
    for (int i = 1; i < s->nring; i++)
        if (osb_reap_partner(s->ring_pids[i], c->out->error != 0) != 0)
            rc = osb_fail(c, ECHILD, "ring member %d did not exit cleanly", i);
    free(s);
    c->state = NULL;
    return rc;
}

/* ---- round trips: the partner returns every byte plus one */

static void echo(int fd)
{
    unsigned char b;
    for (;;) {
        ssize_t r = read(fd, &b, 1);
        if (r == 0)
            _exit(0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            _exit(errno == ECONNREFUSED || errno == ECONNRESET ? 0 : 2);
        }
        b++;
        if (write(fd, &b, 1) != 1)
            _exit(2);
    }
}

/* fds[0] goes to the echo partner, fds[1] stays. */
static int echo_setup_with(osb_ctx *c, int fds[2])
{
    ipc_state *s = c->state;
    s->partner = osb_fork_partner(c);
    if (s->partner == 0) {
        close(fds[1]);
        echo(fds[0]);
    }
    close(fds[0]);
    s->fd = fds[1];
    return s->partner < 0 ? osb_fail(c, errno, "fork failed: %s", strerror(errno)) : 0;
}

static int unix_rt_setup(osb_ctx *c)
{
    int fds[2];
    if (!new_state(c))
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        return osb_fail(c, errno, "socketpair failed: %s", strerror(errno));
    return echo_setup_with(c, fds);
}

static struct sockaddr_in loopback(void)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;   /* the kernel picks a free port */
    return a;
}

/* A connected TCP pair over 127.0.0.1 (listener closed at once). */
static int tcp_pair(osb_ctx *c, int fds[2])
{
    struct sockaddr_in a = loopback();
    socklen_t len = sizeof a;
    int one = 1, rc = -1;
    int lst = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fds[0] = fds[1] = -1;
    if (lst < 0)
        return osb_fail(c, errno, "socket failed: %s", strerror(errno));
    if (bind(lst, (struct sockaddr *)&a, sizeof a) != 0 || listen(lst, 1) != 0 ||
        getsockname(lst, (struct sockaddr *)&a, &len) != 0) {
        osb_fail(c, errno, "bind/listen on 127.0.0.1 failed: %s", strerror(errno));
        goto out;
    }
    fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[1] < 0 || connect(fds[1], (struct sockaddr *)&a, sizeof a) != 0) {
        osb_fail(c, errno, "connect to 127.0.0.1 failed: %s", strerror(errno));
        goto out;
    }
    fds[0] = accept4(lst, NULL, NULL, SOCK_CLOEXEC);
    if (fds[0] < 0) {
        osb_fail(c, errno, "accept failed: %s", strerror(errno));
        goto out;
    }
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rc = 0;
out:
    close(lst);
    if (rc != 0) {
        close_fd(&fds[0]);
        close_fd(&fds[1]);
    }
    return rc;
}

static int tcp_rt_setup(osb_ctx *c)
{
    int fds[2];
    if (!new_state(c) || tcp_pair(c, fds) != 0)
        return -1;
    return echo_setup_with(c, fds);
}

/* Two UDP sockets on 127.0.0.1, each connected to the other. */
static int udp_rt_setup(osb_ctx *c)
{
    int fds[2] = {-1, -1};
    struct sockaddr_in a[2];
    if (!new_state(c))
        return -1;
    for (int i = 0; i < 2; i++) {
        socklen_t len = sizeof a[i];
        a[i] = loopback();
        fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a[i], sizeof a[i]) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&a[i], &len) != 0)
            goto fail;
    }
    if (connect(fds[0], (struct sockaddr *)&a[1], sizeof a[1]) != 0 ||
        connect(fds[1], (struct sockaddr *)&a[0], sizeof a[0]) != 0)
        goto fail;
    return echo_setup_with(c, fds);
fail:
    osb_fail(c, errno, "UDP socket on 127.0.0.1 failed: %s", strerror(errno));
    close_fd(&fds[0]);
    close_fd(&fds[1]);
    return -1;
}

/* One round trip of a 1-byte message; work = replies that came back incremented. */
static int rt_loop(osb_ctx *c, int64_t n)
{
    ipc_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        unsigned char out = (unsigned char)i, in = 0;
        if (write(s->fd, &out, 1) != 1 || read(s->fd, &in, 1) != 1)
            return osb_fail(c, errno, "round trip %lld failed: %s", (long long)i, strerror(errno));
        ok += in == (unsigned char)(out + 1);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld replies wrong", (long long)(n - ok));
}

/* ---- lmbench lat_ctx (size 0): a token passed around a ring of N processes */

static int ring_size(osb_ctx *c)
{
    return c->p->size > 1 ? (int)c->p->size : 2;
}

/* Member i reads from ring[i] and writes to ring[(i+1) % N], adding one. */
static int ring_setup(osb_ctx *c)
{
    ipc_state *s = new_state(c);
    int nr = ring_size(c);
    if (!s)
        return -1;
    if (nr > MAX_RING)
        return osb_fail(c, EINVAL, "processes must be <= %d (got %d)", MAX_RING, nr);
    for (int i = 0; i < nr; i++) {
        s->ring[i][0] = s->ring[i][1] = -1;
    }
    s->nring = nr;
    for (int i = 0; i < nr; i++)
        if (pipe2(s->ring[i], O_CLOEXEC) != 0)
            return osb_fail(c, errno, "pipe failed: %s", strerror(errno));
    for (int i = 1; i < nr; i++) {
        pid_t pid = osb_fork_partner(c);
        if (pid == 0) {
            int in = s->ring[i][0], out = s->ring[(i + 1) % nr][1];
            for (int k = 0; k < nr; k++) {
                if (s->ring[k][0] != in) close(s->ring[k][0]);
                if (s->ring[k][1] != out) close(s->ring[k][1]);
            }
            int64_t tok;
            for (;;) {
                int r = osb_read_full(in, &tok, sizeof tok);
                if (r == 0)
                    _exit(0);
                if (r < 0)
                    _exit(2);
                tok++;
                if (osb_write_full(out, &tok, sizeof tok) != 1)
                    _exit(errno == EPIPE ? 0 : 3);
            }
        }
        if (pid < 0)
            return osb_fail(c, errno, "fork of ring member %d failed: %s", i, strerror(errno));
        s->ring_pids[i] = pid;
    }
    /* member 0 (us) keeps only ring[0] read end and ring[1] write end */
    for (int k = 0; k < nr; k++) {
        if (k != 0) close_fd(&s->ring[k][0]);
        if (k != 1 % nr) close_fd(&s->ring[k][1]);
    }
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* One lap of the token around all N processes = N context switches;
 * work = laps whose token came back incremented by N - 1. */
static int ring_loop(osb_ctx *c, int64_t n)
{
    ipc_state *s = c->state;
    int nr = s->nring;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t tok = i * 1000, back = -1;
        if (osb_write_full(s->ring[1 % nr][1], &tok, sizeof tok) != 1 ||
            osb_read_full(s->ring[0][0], &back, sizeof back) != 1)
            return osb_fail(c, errno, "token lap %lld failed: %s", (long long)i, strerror(errno));
        ok += back == tok + nr - 1;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld laps lost hops", (long long)(n - ok));
}

const osb_probe osb_probes_ipc[] = {
    {"pipe_bw", pipe_bw_setup, bw_loop, ipc_teardown},
    {"unix_bw", unix_bw_setup, bw_loop, ipc_teardown},
    {"unix_pingpong", unix_rt_setup, rt_loop, ipc_teardown},
    {"tcp_pingpong", tcp_rt_setup, rt_loop, ipc_teardown},
    {"udp_pingpong", udp_rt_setup, rt_loop, ipc_teardown},
    {"ctxsw_ring", ring_setup, ring_loop, ipc_teardown},
    {NULL, NULL, NULL, NULL},
};
