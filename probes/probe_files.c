/* File throughput (UnixBench fstime: write, read, copy with 256 B, 1 KiB and
 * 4 KiB buffers) and osbench's many files in one folder.  All work happens
 * inside params->workdir; teardown removes every file, whatever happened. */
#define _GNU_SOURCE
#include "osb_partner.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_BUF 65536

typedef struct {
    int dirfd;
    int src, dst;
    char src_path[4096], dst_path[4096];
    size_t buf_bytes;
    size_t max_bytes;   /* the file wraps to offset 0 at this size, as fstime's */
    int64_t created;    /* files_in_folder: names f0..f(created-1) may exist */
    int64_t files;
    char buf[MAX_BUF];
} files_state;

/* UnixBench's fstime pairs each buffer size with a maximum file size:
 * 256 B -> 500 blocks, 1024 B -> 2000 blocks, 4096 B -> 8000 blocks of 1 KiB. */
static size_t max_bytes_for(size_t buf)
{
    if (buf <= 256)
        return 500 * 1024;
    if (buf <= 1024)
        return 2000 * 1024;
    return 8000 * 1024;
}

static files_state *new_state(osb_ctx *c)
{
    files_state *s = calloc(1, sizeof *s);
    if (!s) {
        osb_fail(c, ENOMEM, "out of memory");
        return NULL;
    }
    s->dirfd = s->src = s->dst = -1;
    c->state = s;
    if (!c->p->workdir || !c->p->workdir[0]) {
        osb_fail(c, EINVAL, "workdir parameter is required");
        return NULL;
    }
    s->dirfd = open(c->p->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dirfd < 0) {
        osb_fail(c, errno, "cannot open workdir %s: %s", c->p->workdir, strerror(errno));
        return NULL;
    }
    return s;
}

static int open_file(osb_ctx *c, files_state *s, int *fd, char *path, const char *name, int fill)
{
    snprintf(path, 4096, "%s/%s", c->p->workdir, name);
    *fd = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    if (*fd < 0)
        return osb_fail(c, errno, "cannot create %s: %s", path, strerror(errno));
    if (fill) {
        memset(s->buf, 'r', s->buf_bytes);
        for (size_t done = 0; done < s->max_bytes; done += s->buf_bytes)
            if (osb_write_full(*fd, s->buf, s->buf_bytes) != 1)
                return osb_fail(c, errno, "cannot fill %s: %s", path, strerror(errno));
        lseek(*fd, 0, SEEK_SET);
    }
    return 0;
}

static int fstime_setup(osb_ctx *c, int fill_src, int want_dst)
{
    files_state *s = new_state(c);
    if (!s)
        return -1;
    s->buf_bytes = c->p->size > 0 ? (size_t)c->p->size : 1024;
    if (s->buf_bytes > MAX_BUF)
        return osb_fail(c, EINVAL, "buffer must be <= %d bytes", MAX_BUF);
    s->max_bytes = max_bytes_for(s->buf_bytes) / s->buf_bytes * s->buf_bytes;
    if (open_file(c, s, &s->src, s->src_path, "osbench_fstime_src", fill_src) != 0)
        return -1;
    if (want_dst && open_file(c, s, &s->dst, s->dst_path, "osbench_fstime_dst", 0) != 0)
        return -1;
    memset(s->buf, 'w', s->buf_bytes);
    return 0;
}

static int write_setup(osb_ctx *c) { return fstime_setup(c, 0, 0); }
static int read_setup(osb_ctx *c) { return fstime_setup(c, 1, 0); }
static int copy_setup(osb_ctx *c) { return fstime_setup(c, 1, 1); }

static int files_teardown(osb_ctx *c)
{
    files_state *s = c->state;
    char name[32];
    if (!s)
        return 0;
    if (s->src >= 0) close(s->src);
    if (s->dst >= 0) close(s->dst);
    if (s->src_path[0]) unlink(s->src_path);
    if (s->dst_path[0]) unlink(s->dst_path);
    for (int64_t i = 0; i < s->created; i++) {
        snprintf(name, sizeof name, "f%lld", (long long)i);
        unlinkat(s->dirfd, name, 0);
    }
    if (s->dirfd >= 0) close(s->dirfd);
    free(s);
    c->state = NULL;
    return 0;
}

/* fstime write: one write(2) of the buffer; back to offset 0 at the maximum size.
 * work = buffers written in full. */
static int write_loop(osb_ctx *c, int64_t n)
{
    files_state *s = c->state;
    size_t pos = 0;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        if (pos >= s->max_bytes) {
            lseek(s->src, 0, SEEK_SET);
            pos = 0;
        }
        ok += write(s->src, s->buf, s->buf_bytes) == (ssize_t)s->buf_bytes;
        pos += s->buf_bytes;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld writes short", (long long)(n - ok));
}

/* fstime read: one read(2) of the buffer; rewind at end of file.
 * work = buffers read in full that hold the file's bytes. */
static int read_loop(osb_ctx *c, int64_t n)
{
    files_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        ssize_t r = read(s->src, s->buf, s->buf_bytes);
        if (r == 0) {
            lseek(s->src, 0, SEEK_SET);
            r = read(s->src, s->buf, s->buf_bytes);
        }
        ok += r == (ssize_t)s->buf_bytes && s->buf[0] == 'r';
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld reads short", (long long)(n - ok));
}

/* fstime copy: read a buffer from one file, write it to the other; both
 * rewind together at the end of the source.  work = buffers copied. */
static int copy_loop(osb_ctx *c, int64_t n)
{
    files_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        ssize_t r = read(s->src, s->buf, s->buf_bytes);
        if (r == 0) {
            lseek(s->src, 0, SEEK_SET);
            lseek(s->dst, 0, SEEK_SET);
            r = read(s->src, s->buf, s->buf_bytes);
        }
        ok += r == (ssize_t)s->buf_bytes && write(s->dst, s->buf, (size_t)r) == r;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld copies short", (long long)(n - ok));
}

/* osbench create_files: `files` files of 32 B created in one folder, then all
 * deleted.  One iteration = one such round; work = files deleted (n x files). */
static int folder_setup(osb_ctx *c)
{
    files_state *s = new_state(c);
    if (!s)
        return -1;
    s->files = c->p->size > 0 ? c->p->size : 65534;
    return 0;
}

static int folder_loop(osb_ctx *c, int64_t n)
{
    files_state *s = c->state;
    static const char data[32] = "osbench 32-byte file payload...";
    char name[32];
    int64_t removed = 0;
    for (int64_t round = 0; round < n; round++) {
        for (int64_t i = 0; i < s->files; i++) {
            snprintf(name, sizeof name, "f%lld", (long long)i);
            int fd = openat(s->dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
            if (fd < 0)
                return osb_fail(c, errno, "create %s failed: %s", name, strerror(errno));
            if (s->created < i + 1)
                s->created = i + 1;
            int w = write(fd, data, sizeof data) == (ssize_t)sizeof data;
            close(fd);
            if (!w)
                return osb_fail(c, errno, "write to %s failed", name);
        }
        for (int64_t i = 0; i < s->files; i++) {
            snprintf(name, sizeof name, "f%lld", (long long)i);
            removed += unlinkat(s->dirfd, name, 0) == 0;
        }
    }
    c->work = removed;
    return removed == n * s->files ? 0 : osb_fail(c, EIO, "removed %lld of %lld files",
                                                  (long long)removed, (long long)(n * s->files));
}

const osb_probe osb_probes_files[] = {
    {"file_write", write_setup, write_loop, files_teardown},
    {"file_read", read_setup, read_loop, files_teardown},
    {"file_copy", copy_setup, copy_loop, files_teardown},
    {"files_in_folder", folder_setup, folder_loop, files_teardown},
    {NULL, NULL, NULL, NULL},
};
