/* Memory copy bandwidth (UnixBench/lmbench-style memcpy of a large buffer)
 * and the small copy after malloc (UnixBench mallocMemCopy-style). */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *src, *dst;
    size_t bytes;
} membw_state;

static int memcpy_setup(osb_ctx *c)
{
    membw_state *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    s->bytes = c->p->size > 0 ? (size_t)c->p->size : (size_t)8 << 20;
    s->src = malloc(s->bytes);
    s->dst = malloc(s->bytes);
    if (!s->src || !s->dst)
        return osb_fail(c, ENOMEM, "cannot allocate 2 x %zu bytes", s->bytes);
    memset(s->src, 'm', s->bytes);  /* fault every page in outside the timed region */
    memset(s->dst, 0, s->bytes);
    return 0;
}

static int memcpy_teardown(osb_ctx *c)
{
    membw_state *s = c->state;
    if (s) {
        free(s->src);
        free(s->dst);
        free(s);
        c->state = NULL;
    }
    return 0;
}

/* One memcpy of the whole buffer; a tag at both ends changes every iteration
 * and must arrive, so no copy can be skipped.  work = copies that arrived. */
static int memcpy_loop(osb_ctx *c, int64_t n)
{
    membw_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        s->src[0] = s->src[s->bytes - 1] = (char)i;
        memcpy(s->dst, s->src, s->bytes);
        ok += s->dst[0] == (char)i && s->dst[s->bytes - 1] == (char)i;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld copies did not arrive", (long long)(n - ok));
}

/* malloc two buffers of size bytes, fill one, copy it into the other, free
 * both.  work = copies whose last byte arrived. */
static int malloc_memcpy_loop(osb_ctx *c, int64_t n)
{
    size_t bytes = c->p->size > 0 ? (size_t)c->p->size : 256;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        char *a = malloc(bytes), *b = malloc(bytes);
        if (!a || !b) {
            free(a);
            free(b);
            return osb_fail(c, ENOMEM, "malloc(%zu) failed", bytes);
        }
        memset(a, (int)(i & 0x7f), bytes);
        memcpy(b, a, bytes);
        ok += b[bytes - 1] == (char)(i & 0x7f);
        free(a);
        free(b);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld copies did not arrive", (long long)(n - ok));
}

const osb_probe osb_probes_memory_bw[] = {
    {"memcpy_bw", memcpy_setup, memcpy_loop, memcpy_teardown},
    {"malloc_memcpy", NULL, malloc_memcpy_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
