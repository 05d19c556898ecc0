/* osbench-guest-init: PID 1 of the linux-tcg guest (a Debian Linux kernel
 * under QEMU TCG with -icount, environments/linux_tcg.py).
 *
 * Linked statically with the same harness and probe tables as the cffi
 * extension and osbench-parent, so the guest runs osbench's own probes
 * unchanged.  It runs the jobs of /osb-jobs (one line each:
 *   K PROBE SIZE MIN_BATCH_NS WARMUP BATCHES MAX_ITERATIONS MULTIPLE FIXED
 * written by the host for the round) the way the worker does (worker.py:
 * calibration batches grow until one lasts MIN_BATCH_NS, reported as
 * warm-ups; then WARMUP and BATCHES batches), prints every batch on the
 * console in the lines the runner parses (environments/qemu.py):
 *   OSB job=K batch=I warmup=0|1 iterations=N elapsed=NS work=W cpu_start=...
 * and powers the guest off.  Under -icount shift=0 CLOCK_MONOTONIC_RAW
 * advances one ns per retired guest instruction, so `elapsed` counts
 * instructions (kernel + user). */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    ssize_t off = 0;
    while (off < n) {           /* unbuffered: a panic later must not swallow a batch */
        ssize_t w = write(1, line + off, (size_t)(n - off));
        if (w <= 0)
            break;
        off += w;
    }
}

/* worker.next_iterations, in integers: towards the target, at most 100x a step, whole groups */
static int64_t next_n(int64_t n, int64_t elapsed, int64_t target, int64_t cap, int64_t multiple)
{
    cap = cap / multiple * multiple;
    if (cap < multiple)
        cap = multiple;
    int64_t e = elapsed > 0 ? elapsed : 1;
    int64_t want = (int64_t)(((__int128)n * 12 * target + 10 * e - 1) / (10 * e));
    int64_t nx = want < n * 100 ? want : n * 100;
    if (nx > cap)
        nx = cap;
    if (nx < n + 1)
        nx = n + 1;
    nx = (nx + multiple - 1) / multiple * multiple;
    return nx < cap ? nx : cap;
}

static int batch(int job, const char *probe, const osb_params *p, int64_t n, int warm, int *index, int64_t *elapsed)
{
    osb_result r;
    memset(&r, 0, sizeof r);
    if (osb_run(probe, p, n, &r) != 0) {
        out("OSB job=%d error=%d %s\n", job, r.error, r.message);
        return -1;
    }
    *elapsed = r.elapsed_ns;
    out("OSB job=%d batch=%d warmup=%d iterations=%lld elapsed=%lld work=%lld cpu_start=%d cpu_end=%d "
        "nvcsw=%lld nivcsw=%lld minflt=%lld started_unix_ns=%lld\n", job, (*index)++, warm,
        (long long)r.iterations, (long long)r.elapsed_ns, (long long)r.work_done, r.cpu_start, r.cpu_end,
        (long long)r.nvcsw, (long long)r.nivcsw, (long long)r.minflt, (long long)r.started_unix_ns);
    return 0;
}

static void run_job(const char *line)
{
    int job;
    char probe[64];
    long long size, target, warmup, batches, cap, multiple, fixed;
    if (sscanf(line, "%d %63s %lld %lld %lld %lld %lld %lld %lld", &job, probe, &size, &target, &warmup, &batches,
               &cap, &multiple, &fixed) != 9) {
        out("OSB bad job line: %s\n", line);
        return;
    }
    char workdir[64];
    snprintf(workdir, sizeof workdir, "/tmp/osb-%d", job);
    mkdir(workdir, 0700);
    osb_params p = {.workdir = workdir, .helper_path = "/osbench-exit0", .child_cpu = -1, .size = size};
    out("OSB job=%d probe=%s begin\n", job, probe);
    if (multiple < 1)
        multiple = 1;
    int index = 0;
    int64_t elapsed = 0, n = fixed;
    if (n <= 0) {
        n = multiple;
        for (;;) {
            if (batch(job, probe, &p, n, 1, &index, &elapsed) != 0)
                return;
            if (elapsed >= target || n >= cap)
                break;
            n = next_n(n, elapsed, target, cap, multiple);
        }
    }
    for (long long i = 0; i < warmup; i++)
        if (batch(job, probe, &p, n, 1, &index, &elapsed) != 0)
            return;
    for (long long i = 0; i < batches; i++)
        if (batch(job, probe, &p, n, 0, &index, &elapsed) != 0)
            return;
    out("OSB job=%d done\n", job);
}

/* /sys/devices/system/cpu/vulnerabilities/NAME as one word (the hello line is key=value pairs) */
static void vulnerability(const char *name, char *buf, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/vulnerabilities/%s", name);
    snprintf(buf, size, "unknown");
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, size - 1);
    buf[n > 0 ? n : 0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    for (char *c = buf; *c; c++)
        if (*c == ' ')
            *c = '_';
    close(fd);
}

int main(void)
{
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);   /* /dev/zero, /dev/null for the probes */
    mount("proc", "/proc", "proc", 0, NULL);
    mount("sysfs", "/sys", "sysfs", 0, NULL);
    mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
    mkdir("/dev/shm", 01777);
    mount("tmpfs", "/dev/shm", "tmpfs", 0, NULL);
    char spectre_v2[200], meltdown[200];
    vulnerability("spectre_v2", spectre_v2, sizeof spectre_v2);
    /* "Mitigation:_PTI" when the kernel isolates its page tables (linux-tcg-pti checks it) */
    vulnerability("meltdown", meltdown, sizeof meltdown);
    out("OSB hello kernel=linux spectre_v2=%s meltdown=%s\n", spectre_v2, meltdown);
    FILE *jobs = fopen("/osb-jobs", "r");
    char line[256];
    while (jobs && fgets(line, sizeof line, jobs))
        run_job(line);
    out("OSB end\n");
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
