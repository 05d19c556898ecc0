/* Memory probes: page mapping and small-block allocation. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* mmap one anonymous page, fault it in with one write, unmap it. */
static int mmap_touch_loop(osb_ctx *c, int64_t n)
{
    int64_t touched = 0;
    for (int64_t i = 0; i < n; i++) {
        volatile char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            return osb_fail(c, errno, "mmap failed: %s", strerror(errno));
        page[0] = 1;
        touched += page[0];
        if (munmap((void *)page, 4096) != 0)
            return osb_fail(c, errno, "munmap failed: %s", strerror(errno));
    }
    c->work = touched;
    return 0;
}

typedef struct {
    void **blocks;
} malloc_state;

/* Blocks allocated before the first is freed: size, else the whole batch. */
static int64_t group_of(osb_ctx *c)
{
    return c->p->size > 0 && c->p->size < c->n ? c->p->size : c->n;
}

/* The pointer array is allocated here, outside the timed region. */
static int malloc_setup(osb_ctx *c)
{
    malloc_state *s = calloc(1, sizeof *s);
    if (!s || !(s->blocks = calloc((size_t)group_of(c), sizeof(void *)))) {
        free(s);
        return osb_fail(c, ENOMEM, "cannot allocate %lld block pointers", (long long)c->n);
    }
    c->state = s;
    return 0;
}

/* Blocks of 4..128 bytes, each touched, allocated in groups and each group
 * then freed.  One iteration = one malloc + its free.
 * size = 0: one group of the whole batch, sizes 4 + (i*37 % 125) (the
 *   original probe: the group's size follows the calibrated batch, so its
 *   work per block does too -- a heap trimmed and faulted back each batch
 *   or not -- and two environments calibrated differently did different
 *   work: issue #22, UML 0.36x native.  The registry's default is now a
 *   fixed group, 1,000 blocks; this comment changing the probes' source
 *   hash keeps campaigns of the old default from pooling with the new);
 * size = G > 0: groups of G blocks, sizes ((i % 32) + 1) * 4 -- osbench
 *   mem_alloc with G = 1,000,000, exactly (a batch of n blocks is n / G of its
 *   rounds; a batch not a multiple of G ends with a smaller group). */
static int malloc_loop(osb_ctx *c, int64_t n)
{
    malloc_state *s = c->state;
    int64_t freed = 0, group = group_of(c);
    int osbench_sizes = c->p->size > 0;
    for (int64_t g = 0; g < n; g += group) {
        int64_t k = n - g < group ? n - g : group;
        for (int64_t i = 0; i < k; i++) {
            size_t size = osbench_sizes ? (size_t)((i % 32) + 1) * 4 : 4 + (size_t)(((g + i) * 37) % 125);
            char *b = malloc(size);
            if (!b)
                return osb_fail(c, ENOMEM, "malloc(%zu) failed", size);
            b[0] = 1;
            s->blocks[i] = b;
        }
        for (int64_t i = 0; i < k; i++) {
            free(s->blocks[i]);
            s->blocks[i] = NULL;
            freed++;
        }
    }
    c->work = freed;
    return 0;
}

static int malloc_teardown(osb_ctx *c)
{
    malloc_state *s = c->state;
    if (!s)
        return 0;
    for (int64_t i = 0; i < group_of(c); i++)
        free(s->blocks[i]);
    free(s->blocks);
    free(s);
    c->state = NULL;
    return 0;
}

/* The memory-system model's known answers (environments/memevents.py): a buffer made and touched in
 * setup, then read in passes.  size = its bytes. */
typedef struct {
    volatile unsigned char *buf;
    size_t bytes;
} pass_state;

static int pass_setup(osb_ctx *c, int64_t fallback)
{
    pass_state *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "no memory");
    s->bytes = (size_t)(c->p->size > 0 ? c->p->size : fallback);
    void *m = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) {
        int err = errno;
        size_t bytes = s->bytes;
        free(s);
        return osb_fail(c, err, "mmap of %zu bytes failed: %s", bytes, strerror(err));
    }
    s->buf = m;
    for (size_t off = 0; off < s->bytes; off += 64)
        s->buf[off] = 1;
    c->state = s;
    return 0;
}

static int pass_teardown(osb_ctx *c)
{
    pass_state *s = c->state;
    munmap((void *)s->buf, s->bytes);
    free(s);
    return 0;
}

/* size/4096 pages, one byte of each per pass, the byte's line moving along the page (page p: line p mod
 * 64) so that the lines spread over every L1 set: one pass touches each page once, its lines fit in L1D
 * up to 512 pages, and a data TLB of E entries misses once a page per pass when the pages exceed E. */
static int page_pass_setup(osb_ctx *c) { return pass_setup(c, 256 * 4096); }

static int page_pass_loop(osb_ctx *c, int64_t n)
{
    pass_state *s = c->state;
    size_t pages = s->bytes / 4096;
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++)
        for (size_t p = 0; p < pages; p++)
            sum += s->buf[p * 4096 + (p % 64) * 64];
    c->work = sum / (int64_t)(pages ? pages : 1);
    return 0;
}

/* one byte of every 64 B line of size bytes per pass, in order: a cache of C bytes (LRU) misses every
 * line of every pass once size exceeds C, and none once the pass fits. */
static int line_pass_setup(osb_ctx *c) { return pass_setup(c, 65536); }

static int line_pass_loop(osb_ctx *c, int64_t n)
{
    pass_state *s = c->state;
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++)
        for (size_t off = 0; off < s->bytes; off += 64)
            sum += s->buf[off];
    c->work = sum / (int64_t)(s->bytes / 64 ? s->bytes / 64 : 1);
    return 0;
}

const osb_probe osb_probes_memory[] = {
    {"mem_page_pass", page_pass_setup, page_pass_loop, pass_teardown},
    {"mem_line_pass", line_pass_setup, line_pass_loop, pass_teardown},
    {"mmap_touch", NULL, mmap_touch_loop, NULL},
    {"malloc_free_small", malloc_setup, malloc_loop, malloc_teardown},
    {NULL, NULL, NULL, NULL},
};
