/* Host-state canaries: fixed work whose cost depends on nothing but the state
 * of the host (its CPU frequency and contention, its memory bandwidth, the cost
 * of a kernel entry), measured in every round of every campaign so that a host
 * that got slower or noisier between or within campaigns shows as such
 * (reproducibility.canary_table).  They never change: editing one makes every
 * earlier campaign incomparable (the probe source hash changes). */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CANARY_CHAIN 1024                 /* dependent multiply-adds per iteration (~1 us) */
#define CANARY_COPY_BYTES ((size_t)2 << 20) /* 2 MiB: beyond L2, a memory-bound copy */

static volatile uint64_t canary_sink;

/* One iteration: a chain of CANARY_CHAIN dependent 64-bit multiply-adds (an
 * LCG step); the empty asm keeps the compiler from folding the chain, so the
 * time is latency-bound CPU work only: no memory, no kernel. */
static int canary_cpu_loop(osb_ctx *c, int64_t n)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < n; i++) {
        for (int j = 0; j < CANARY_CHAIN; j++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            __asm__ volatile("" : "+r"(x));
        }
    }
    canary_sink = x;
    c->work = n;
    return 0;
}

typedef struct {
    char *src, *dst;
} canary_copy_state;

static int canary_copy_setup(osb_ctx *c)
{
    canary_copy_state *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    s->src = malloc(CANARY_COPY_BYTES);
    s->dst = malloc(CANARY_COPY_BYTES);
    if (!s->src || !s->dst)
        return osb_fail(c, ENOMEM, "cannot allocate 2 x %zu bytes", CANARY_COPY_BYTES);
    memset(s->src, 'c', CANARY_COPY_BYTES);   /* fault every page in outside the timed region */
    memset(s->dst, 0, CANARY_COPY_BYTES);
    return 0;
}

static int canary_copy_teardown(osb_ctx *c)
{
    canary_copy_state *s = c->state;
    if (s) {
        free(s->src);
        free(s->dst);
        free(s);
        c->state = NULL;
    }
    return 0;
}

/* One memcpy of 2 MiB; a tag at both ends changes every iteration and must
 * arrive, so no copy can be skipped.  work = copies that arrived. */
static int canary_copy_loop(osb_ctx *c, int64_t n)
{
    canary_copy_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        s->src[0] = s->src[CANARY_COPY_BYTES - 1] = (char)i;
        memcpy(s->dst, s->src, CANARY_COPY_BYTES);
        ok += s->dst[0] == (char)i && s->dst[CANARY_COPY_BYTES - 1] == (char)i;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld copies did not arrive", (long long)(n - ok));
}

/* One getppid() through syscall(2): a null kernel entry (getppid rather than
 * getpid so that no libc can answer it from a cache). */
static int canary_syscall_loop(osb_ctx *c, int64_t n)
{
    long ppid = syscall(SYS_getppid);
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++)
        ok += syscall(SYS_getppid) == ppid;
    c->work = ok;
    return 0;
}

const osb_probe osb_probes_canary[] = {
    {"canary_cpu", NULL, canary_cpu_loop, NULL},
    {"canary_memcpy", canary_copy_setup, canary_copy_loop, canary_copy_teardown},
    {"canary_syscall", NULL, canary_syscall_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
