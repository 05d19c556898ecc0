/* osbench-fuse: a user-space file server that serves a backing folder
 * through FUSE, so every file operation a probe makes in the mount goes
 * kernel VFS -> /dev/fuse -> this process -> the host's file system.
 *
 *   osbench-fuse BACKING MOUNTPOINT [--cache=default|never] [--threads=single|multi]
 *
 * --cache=default keeps libfuse's high-level defaults (entry and attribute
 *   timeouts of 1 s: a repeated stat is answered by the kernel's cache);
 * --cache=never sets every timeout to 0 and uses direct I/O, so each lookup,
 *   stat and read reaches this server.
 * Runs in the foreground until unmounted or killed; the caller unmounts. */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <signal.h>
#include <unistd.h>

static int backing_fd = -1;
static int cache_never = 0;

/* FUSE paths start with "/"; the backing folder is reached relative to its fd. */
static const char *rel(const char *path) {
    while (*path == '/') path++;
    return *path ? path : ".";
}

static void *srv_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    (void)conn;
    cfg->use_ino = 1;
    if (cache_never) {
        cfg->entry_timeout = 0;
        cfg->attr_timeout = 0;
        cfg->negative_timeout = 0;
        cfg->direct_io = 1;
        cfg->kernel_cache = 0;
    }
    return NULL;
}

static int srv_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    int r = fi ? fstat((int)fi->fh, st) : fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
    return r == -1 ? -errno : 0;
}

static int srv_access(const char *path, int mask) {
    return faccessat(backing_fd, rel(path), mask, 0) == -1 ? -errno : 0;
}

static int srv_readlink(const char *path, char *buf, size_t size) {
    ssize_t n = readlinkat(backing_fd, rel(path), buf, size - 1);
    if (n == -1) return -errno;
    buf[n] = 0;
    return 0;
}

static int srv_opendir(const char *path, struct fuse_file_info *fi) {
    int fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY);
    if (fd == -1) return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return -e;
    }
    fi->fh = (uint64_t)(uintptr_t)d;
    return 0;
}

static int srv_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                       struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
    (void)path; (void)off; (void)flags;
    DIR *d = (DIR *)(uintptr_t)fi->fh;
    rewinddir(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st = {0};
        st.st_ino = e->d_ino;
        st.st_mode = (mode_t)DTTOIF(e->d_type);
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    return 0;
}

static int srv_releasedir(const char *path, struct fuse_file_info *fi) {
    (void)path;
    closedir((DIR *)(uintptr_t)fi->fh);
    return 0;
}

static int srv_mknod(const char *path, mode_t mode, dev_t rdev) {
    return mknodat(backing_fd, rel(path), mode, rdev) == -1 ? -errno : 0;
}

static int srv_mkdir(const char *path, mode_t mode) {
    return mkdirat(backing_fd, rel(path), mode) == -1 ? -errno : 0;
}

static int srv_unlink(const char *path) {
    return unlinkat(backing_fd, rel(path), 0) == -1 ? -errno : 0;
}

static int srv_rmdir(const char *path) {
    return unlinkat(backing_fd, rel(path), AT_REMOVEDIR) == -1 ? -errno : 0;
}

static int srv_symlink(const char *target, const char *path) {
    return symlinkat(target, backing_fd, rel(path)) == -1 ? -errno : 0;
}

static int srv_rename(const char *from, const char *to, unsigned int flags) {
    return renameat2(backing_fd, rel(from), backing_fd, rel(to), flags) == -1 ? -errno : 0;
}

static int srv_link(const char *from, const char *to) {
    return linkat(backing_fd, rel(from), backing_fd, rel(to), 0) == -1 ? -errno : 0;
}

static int srv_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    int r = fi ? fchmod((int)fi->fh, mode) : fchmodat(backing_fd, rel(path), mode, 0);
    return r == -1 ? -errno : 0;
}

static int srv_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    int r = fi ? fchown((int)fi->fh, uid, gid) : fchownat(backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
    return r == -1 ? -errno : 0;
}

static int srv_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    int r;
    if (fi) {
        r = ftruncate((int)fi->fh, size);
    } else {
        int fd = openat(backing_fd, rel(path), O_WRONLY);
        if (fd == -1) return -errno;
        r = ftruncate(fd, size);
        int e = errno;
        close(fd);
        errno = e;
    }
    return r == -1 ? -errno : 0;
}

static int srv_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    int r = fi ? futimens((int)fi->fh, tv) : utimensat(backing_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);
    return r == -1 ? -errno : 0;
}

static int srv_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    int fd = openat(backing_fd, rel(path), fi->flags, mode);
    if (fd == -1) return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int srv_open(const char *path, struct fuse_file_info *fi) {
    int fd = openat(backing_fd, rel(path), fi->flags & ~O_NOFOLLOW);
    if (fd == -1) return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int srv_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    ssize_t n = pread((int)fi->fh, buf, size, off);
    return n == -1 ? -errno : (int)n;
}

static int srv_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    ssize_t n = pwrite((int)fi->fh, buf, size, off);
    return n == -1 ? -errno : (int)n;
}

static int srv_statfs(const char *path, struct statvfs *st) {
    (void)path;
    return fstatvfs(backing_fd, st) == -1 ? -errno : 0;
}

static int srv_flush(const char *path, struct fuse_file_info *fi) {
    (void)path; (void)fi;
    return 0;
}

static int srv_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int srv_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path;
    int r = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
    return r == -1 ? -errno : 0;
}

static const struct fuse_operations ops = {
    .init = srv_init,
    .getattr = srv_getattr,
    .access = srv_access,
    .readlink = srv_readlink,
    .opendir = srv_opendir,
    .readdir = srv_readdir,
    .releasedir = srv_releasedir,
    .mknod = srv_mknod,
    .mkdir = srv_mkdir,
    .unlink = srv_unlink,
    .rmdir = srv_rmdir,
    .symlink = srv_symlink,
    .rename = srv_rename,
    .link = srv_link,
    .chmod = srv_chmod,
    .chown = srv_chown,
    .truncate = srv_truncate,
    .utimens = srv_utimens,
    .create = srv_create,
    .open = srv_open,
    .read = srv_read,
    .write = srv_write,
    .statfs = srv_statfs,
    .flush = srv_flush,
    .release = srv_release,
    .fsync = srv_fsync,
};

static int usage(const char *why) {
    fprintf(stderr, "osbench-fuse: %s\nusage: osbench-fuse BACKING MOUNTPOINT "
                    "[--cache=default|never] [--threads=single|multi]\n", why);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage("BACKING and MOUNTPOINT are required");
    const char *backing = argv[1], *mountpoint = argv[2];
    int single = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--cache=never")) cache_never = 1;
        else if (!strcmp(argv[i], "--cache=default")) cache_never = 0;
        else if (!strcmp(argv[i], "--threads=single")) single = 1;
        else if (!strcmp(argv[i], "--threads=multi")) single = 0;
        else return usage("unknown option");
    }
    backing_fd = open(backing, O_RDONLY | O_DIRECTORY);
    if (backing_fd == -1) {
        perror(backing);
        return 1;
    }
    /* the session that started us may be killed outright: do not serve a dead campaign */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    umask(0);
    /* -f: stay in the foreground as the session's child; fsname names us in /proc/mounts */
    char *fargv[8];
    int fargc = 0;
    fargv[fargc++] = argv[0];
    fargv[fargc++] = "-f";
    if (single) fargv[fargc++] = "-s";
    fargv[fargc++] = "-o";
    fargv[fargc++] = "fsname=osbench-fuse,subtype=osbench,default_permissions";
    fargv[fargc++] = (char *)mountpoint;
    fargv[fargc] = NULL;
    return fuse_main(fargc, fargv, &ops, NULL);
}
