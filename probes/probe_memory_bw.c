/* Memory copy bandwidth (UnixBench/lmbench-style memcpy of a large buffer)
 * and the small copy after malloc (UnixBench mallocMemCopy-style). */
#define _GNU_SOURCE
#include "harness.h"
#include "osb_copy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int memcpy_setup(osb_ctx *c)
{
    return osb_copy_setup(c, c->p->size > 0 ? (size_t)c->p->size : (size_t)8 << 20);
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
    {"memcpy_bw", memcpy_setup, osb_copy_loop, osb_copy_teardown},
    {"malloc_memcpy", NULL, malloc_memcpy_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
