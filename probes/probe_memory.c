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

/* The pointer array is allocated here, outside the timed region. */
static int malloc_setup(osb_ctx *c)
{
    malloc_state *s = calloc(1, sizeof *s);
    if (!s || !(s->blocks = calloc((size_t)c->n, sizeof(void *)))) {
        free(s);
        return osb_fail(c, ENOMEM, "cannot allocate %lld block pointers", (long long)c->n);
    }
    c->state = s;
    return 0;
}

/* osbench mem_alloc: n blocks of 4..128 bytes (a fixed, deterministic size
 * sequence), each touched, then all freed.  One iteration = malloc + free. */
static int malloc_loop(osb_ctx *c, int64_t n)
{
    malloc_state *s = c->state;
    int64_t freed = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t size = 4 + (size_t)((i * 37) % 125);
        char *b = malloc(size);
        if (!b)
            return osb_fail(c, ENOMEM, "malloc(%zu) failed", size);
        b[0] = (char)i;
        s->blocks[i] = b;
    }
    for (int64_t i = 0; i < n; i++) {
        free(s->blocks[i]);
        s->blocks[i] = NULL;
        freed++;
    }
    c->work = freed;
    return 0;
}

static int malloc_teardown(osb_ctx *c)
{
    malloc_state *s = c->state;
    if (!s)
        return 0;
    for (int64_t i = 0; i < c->n; i++)
        free(s->blocks[i]);
    free(s->blocks);
    free(s);
    c->state = NULL;
    return 0;
}

const osb_probe osb_probes_memory[] = {
    {"mmap_touch", NULL, mmap_touch_loop, NULL},
    {"malloc_free_small", malloc_setup, malloc_loop, malloc_teardown},
    {NULL, NULL, NULL, NULL},
};
