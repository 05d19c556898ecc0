/* Host-state canaries: fixed work whose cost depends on nothing but the state
 * of the host (its CPU frequency and contention, its memory bandwidth, the cost
 * of a kernel entry), measured in every round of every campaign so that a host
 * that got slower or noisier between or within campaigns shows as such
 * (reproducibility.canary_table).  They never change: editing one makes every
 * earlier campaign incomparable (the probe source hash changes). */
#define _GNU_SOURCE
#include "harness.h"
#include "osb_copy.h"

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

/* One memcpy of 2 MiB, tagged at both ends (osb_copy.h, as memcpy_bw). */
static int canary_copy_setup(osb_ctx *c)
{
    return osb_copy_setup(c, CANARY_COPY_BYTES);
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
    {"canary_memcpy", canary_copy_setup, osb_copy_loop, osb_copy_teardown},
    {"canary_syscall", NULL, canary_syscall_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
