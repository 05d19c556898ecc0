#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifndef OSB_SOURCE_HASH
#define OSB_SOURCE_HASH "unknown"
#endif
#ifndef OSB_CFLAGS
#define OSB_CFLAGS "unknown"
#endif


int osb_fail(osb_ctx *c, int err, const char *fmt, ...)
{
    va_list ap;
    if (c->out->error == 0) {  /* keep the first error: later ones are usually consequences */
        c->out->error = err ? err : -1;
        va_start(ap, fmt);
        vsnprintf(c->out->message, sizeof c->out->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int osb_pin_self(int cpu)
{
    cpu_set_t set;
    if (cpu < 0)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static const osb_probe *find(const char *name)
{
    for (size_t f = 0; osb_families[f]; f++)
        for (const osb_probe *p = osb_families[f]; p->name; p++)
            if (strcmp(p->name, name) == 0)
                return p;
    return NULL;
}

int osb_probe_count(void)
{
    int n = 0;
    for (size_t f = 0; osb_families[f]; f++)
        for (const osb_probe *p = osb_families[f]; p->name; p++)
            n++;
    return n;
}

const char *osb_probe_name(int i)
{
    for (size_t f = 0; osb_families[f]; f++)
        for (const osb_probe *p = osb_families[f]; p->name; p++)
            if (i-- == 0)
                return p->name;
    return NULL;
}

const char *osb_build_info(void)
{
    return "compiler=" __VERSION__ ";cflags=" OSB_CFLAGS ";source_sha256=" OSB_SOURCE_HASH;
}

static int64_t ns_of(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

int osb_run(const char *name, const osb_params *p, int64_t iterations, osb_result *out)
{
    struct rusage r0, r1;
    struct timespec t0, t1, wall;
    osb_ctx c = {.p = p, .n = iterations, .out = out};
    const osb_probe *probe = find(name);

    memset(out, 0, sizeof *out);
    out->iterations = iterations;
    if (!probe)
        return osb_fail(&c, EINVAL, "unknown probe '%s'", name);
    if (iterations < 1)
        return osb_fail(&c, EINVAL, "iterations must be >= 1 (got %lld)", (long long)iterations);
    if (probe->setup && probe->setup(&c) != 0)
        return osb_fail(&c, EIO, "setup of %s failed", name);

    clock_gettime(CLOCK_REALTIME, &wall);
    getrusage(RUSAGE_SELF, &r0);
    out->cpu_start = sched_getcpu();
    /* MONOTONIC_RAW: not slewed by NTP, so a batch is never stretched or
     * shrunk by a clock adjustment; it is served by the vDSO like MONOTONIC. */
    clock_gettime(CLOCK_MONOTONIC_RAW, &t0);
    OSB_MARK_BEGIN();
    int rc = probe->loop(&c, iterations);
    OSB_MARK_END();
    clock_gettime(CLOCK_MONOTONIC_RAW, &t1);
    out->cpu_end = sched_getcpu();
    getrusage(RUSAGE_SELF, &r1);

    out->started_unix_ns = ns_of(&wall);
    out->elapsed_ns = ns_of(&t1) - ns_of(&t0);
    out->nvcsw = r1.ru_nvcsw - r0.ru_nvcsw;
    out->nivcsw = r1.ru_nivcsw - r0.ru_nivcsw;
    out->minflt = r1.ru_minflt - r0.ru_minflt;
    out->work_done = c.work;
    if (probe->teardown && probe->teardown(&c) != 0)
        rc = -1;
    out->work_done = c.work;
    if (rc != 0 && out->error == 0)
        osb_fail(&c, EIO, "%s failed", name);
    return out->error ? -1 : 0;
}
