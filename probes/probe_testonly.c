/* Probes that misbehave on purpose, so tests can prove the worker isolation:
 * a crash or a hang in a probe must never take the caller down. */
#define _GNU_SOURCE
#include "harness.h"

#include <signal.h>
#include <unistd.h>

static int crash_loop(osb_ctx *c, int64_t n)
{
    (void)c; (void)n;
    raise(SIGSEGV);
    return 0;
}

static int hang_loop(osb_ctx *c, int64_t n)
{
    (void)c; (void)n;
    for (;;)
        pause();
    return 0;
}

const osb_probe osb_probes_testonly[] = {
    {"test_crash_segv", NULL, crash_loop, NULL},
    {"test_hang", NULL, hang_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
