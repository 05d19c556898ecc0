/* The large-buffer copy shared by memcpy_bw (probe_memory_bw.c, its size a
 * parameter) and the memory canary (probe_canary.c, a fixed 2 MiB).
 * Header-only (static inline), so each family stays one translation unit. */
#ifndef OSB_COPY_H
#define OSB_COPY_H

#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *src, *dst;
    size_t bytes;
} osb_copy_state;

/* Two buffers of `bytes`, every page faulted in outside the timed region. */
static inline int osb_copy_setup(osb_ctx *c, size_t bytes)
{
    osb_copy_state *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    s->bytes = bytes;
    s->src = malloc(s->bytes);
    s->dst = malloc(s->bytes);
    if (!s->src || !s->dst)
        return osb_fail(c, ENOMEM, "cannot allocate 2 x %zu bytes", s->bytes);
    memset(s->src, 'm', s->bytes);
    memset(s->dst, 0, s->bytes);
    return 0;
}

static inline int osb_copy_teardown(osb_ctx *c)
{
    osb_copy_state *s = c->state;
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
static inline int osb_copy_loop(osb_ctx *c, int64_t n)
{
    osb_copy_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        s->src[0] = s->src[s->bytes - 1] = (char)i;
        memcpy(s->dst, s->src, s->bytes);
        ok += s->dst[0] == (char)i && s->dst[s->bytes - 1] == (char)i;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld copies did not arrive", (long long)(n - ok));
}

#endif
