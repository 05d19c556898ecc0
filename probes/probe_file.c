/* File-system probes; all work happens inside params->workdir. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int dirfd;
    int64_t created;   /* files f0..f(created-1) exist or existed: teardown removes only those */
    char path[4096];
} file_state;

static int open_dir(osb_ctx *c, file_state *s)
{
    if (!c->p->workdir || !c->p->workdir[0])
        return osb_fail(c, EINVAL, "workdir parameter is required");
    s->dirfd = open(c->p->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dirfd < 0)
        return osb_fail(c, errno, "cannot open workdir %s: %s", c->p->workdir, strerror(errno));
    return 0;
}

/* open_close and stat share one small target file created in setup. */
static int target_setup(osb_ctx *c)
{
    file_state *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    if (open_dir(c, s) != 0)
        return -1;
    snprintf(s->path, sizeof s->path, "%s/osbench_target", c->p->workdir);
    int fd = open(s->path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, "osbench\n", 8) != 8 || close(fd) != 0)
        return osb_fail(c, errno, "cannot create %s: %s", s->path, strerror(errno));
    return 0;
}

static int target_teardown(osb_ctx *c)
{
    file_state *s = c->state;
    int rc = 0;
    if (!s)
        return 0;
    if (s->path[0] && unlink(s->path) != 0 && errno != ENOENT)
        rc = osb_fail(c, errno, "cannot remove %s: %s", s->path, strerror(errno));
    if (s->dirfd > 0)
        close(s->dirfd);
    free(s);
    c->state = NULL;
    return rc;
}

static int open_close_loop(osb_ctx *c, int64_t n)
{
    file_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        int fd = open(s->path, O_RDONLY);
        if (fd >= 0 && close(fd) == 0)
            ok++;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "open/close failed %lld times", (long long)(n - ok));
}

static int stat_loop(osb_ctx *c, int64_t n)
{
    file_state *s = c->state;
    struct stat st;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++)
        ok += stat(s->path, &st) == 0 && st.st_size == 8;
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "stat failed %lld times", (long long)(n - ok));
}

/* osbench create_files: n files of 32 bytes in one folder, then all deleted.
 * One iteration = create + write 32 B + close + unlink of one file, so the
 * directory grows to n entries inside a batch, as in the original. */
static int create_delete_setup(osb_ctx *c)
{
    file_state *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    return open_dir(c, s);
}

static void file_name(char *buf, size_t len, int64_t i)
{
    snprintf(buf, len, "f%lld", (long long)i);
}

static int create_delete_loop(osb_ctx *c, int64_t n)
{
    file_state *s = c->state;
    static const char data[32] = "osbench 32-byte file payload...";
    char name[32];
    int64_t removed = 0;
    int rc = 0;
    for (int64_t i = 0; i < n; i++) {
        file_name(name, sizeof name, i);
        int fd = openat(s->dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0) {
            rc = osb_fail(c, errno, "create %s failed: %s", name, strerror(errno));
            break;
        }
        s->created = i + 1;
        if (write(fd, data, sizeof data) != (ssize_t)sizeof data)
            rc = osb_fail(c, errno, "write to %s failed", name);
        close(fd);
        if (rc)
            break;
    }
    for (int64_t i = 0; i < n && rc == 0; i++) {
        file_name(name, sizeof name, i);
        if (unlinkat(s->dirfd, name, 0) == 0)
            removed++;
    }
    c->work = removed;
    return rc;
}

/* Whatever happened in the loop, leave no file behind. */
static int create_delete_teardown(osb_ctx *c)
{
    file_state *s = c->state;
    char name[32];
    if (!s)
        return 0;
    for (int64_t i = 0; i < s->created; i++) {
        file_name(name, sizeof name, i);
        unlinkat(s->dirfd, name, 0);
    }
    if (s->dirfd > 0)
        close(s->dirfd);
    free(s);
    c->state = NULL;
    return 0;
}

const osb_probe osb_probes_file[] = {
    {"open_close", target_setup, open_close_loop, target_teardown},
    {"stat", target_setup, stat_loop, target_teardown},
    {"file_create_delete", create_delete_setup, create_delete_loop, create_delete_teardown},
    {NULL, NULL, NULL, NULL},
};
