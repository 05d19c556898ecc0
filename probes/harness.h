/* osbench probe harness: the one place that reads the clock.
 *
 * A probe is three functions.  setup() and teardown() run outside the timed
 * region; loop() performs `n` iterations of the operation and nothing else
 * (no clock reads, no printing, no allocation it could do in setup).  The
 * harness (harness.c) brackets loop() with the clock and the interference
 * counters, so every probe is measured the same way.
 */
#ifndef OSB_HARNESS_H
#define OSB_HARNESS_H

#include <stdint.h>
#include <stdio.h>

/* cffi-cdef-begin: build_probes.py hands this region to ffi.cdef(), so keep
 * it to plain declarations (no macros, no attributes). */
typedef struct osb_params {
    const char *workdir;     /* private, existing, empty directory for file probes */
    const char *helper_path; /* executable for fork_exec (exits 0 at once) */
    int32_t child_cpu;       /* CPU for the second party (child/thread), -1: inherit */
    int64_t size;            /* probe-specific size parameter, 0: probe default */
} osb_params;

typedef struct osb_result {
    int64_t iterations;
    int64_t elapsed_ns;
    int64_t work_done;       /* what the probe proved it did, see each probe */
    int32_t cpu_start;
    int32_t cpu_end;
    int64_t nvcsw;
    int64_t nivcsw;
    int64_t minflt;
    int64_t started_unix_ns;
    int32_t error;           /* 0 ok, else an errno value (or -1) */
    char message[200];
} osb_result;

/* Public entry points. */
int osb_run(const char *probe, const osb_params *p, int64_t iterations, osb_result *out);
int osb_probe_count(void);
const char *osb_probe_name(int i);
const char *osb_build_info(void);
/* cffi-cdef-end */

typedef struct osb_ctx {
    const osb_params *p;
    int64_t n;               /* iterations of this batch */
    int64_t work;            /* set by loop(), may be corrected by teardown() */
    void *state;             /* probe-private */
    osb_result *out;
} osb_ctx;

typedef struct osb_probe {
    const char *name;
    int (*setup)(osb_ctx *);              /* 0 ok, else error (message via osb_fail) */
    int (*loop)(osb_ctx *, int64_t n);    /* the timed region */
    int (*teardown)(osb_ctx *);           /* always called once setup succeeded */
} osb_probe;

/* Record an error with a message; returns -1 so probes can `return osb_fail(...)`. */
int osb_fail(osb_ctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Pin the calling thread/process to one CPU; no-op for cpu < 0. */
int osb_pin_self(int cpu);

/* Probe tables, one per family file. */
extern const osb_probe osb_probes_syscall[];
extern const osb_probe osb_probes_file[];
extern const osb_probe osb_probes_process[];
extern const osb_probe osb_probes_thread[];
extern const osb_probe osb_probes_memory[];
extern const osb_probe osb_probes_testonly[];

#endif
