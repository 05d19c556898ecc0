/* Application workloads (issue #22): what a user runs, so the micro factors
 * meet something real.  One iteration is one whole run of the workload:
 *
 *   app_compile  fork + exec of the system's C compiler (cc -O0 -pipe -c) on a
 *                small C file of the work dir, + waitpid; work = runs that
 *                exited 0 and left an object file.
 *   app_tar      fork + exec of /bin/tar creating an archive of a tree of
 *                `files` files of 1 KiB in the work dir, + waitpid; work = runs
 *                that exited 0 with an archive at least as large as the data.
 *   app_kv       one client connection to a key-value server process on
 *                127.0.0.1 (TCP) and `requests` requests over it, alternately
 *                SET k v and GET k, each answered; work = requests answered
 *                correctly (a GET returns what the SET before it stored).
 *
 * The programs are the host's own (/usr/bin/cc, /bin/tar), seen inside every
 * sandbox through its read-only view of the host's root. */
#define _GNU_SOURCE
#include "harness.h"
#include "osb_partner.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define COMPILER "/usr/bin/cc"
#define TAR "/bin/tar"
#define TAR_FILE_BYTES 1024

typedef struct {
    char dir[4096];        /* the work dir */
    char source[4200];     /* app_compile: the C file; app_tar: the tree */
    char output[4200];     /* the object file or the archive */
    int64_t files;         /* app_tar: files in the tree */
    pid_t server;          /* app_kv */
    struct sockaddr_in addr;
    int64_t requests;
} app_state;

static app_state app;

static const char SMALL_C[] =
    "/* osbench app_compile: a small C file, like a unit of a real program */\n"
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
    "struct entry { char key[32]; long value; struct entry *next; };\n\n"
    "static unsigned hash(const char *s) { unsigned h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; "
    "return h; }\n\n"
    "struct entry *insert(struct entry **table, unsigned size, const char *key, long value)\n"
    "{\n    unsigned i = hash(key) % size;\n    for (struct entry *e = table[i]; e; e = e->next)\n"
    "        if (strcmp(e->key, key) == 0) { e->value = value; return e; }\n"
    "    struct entry *e = calloc(1, sizeof *e);\n    if (!e) return NULL;\n"
    "    snprintf(e->key, sizeof e->key, \"%s\", key);\n    e->value = value;\n"
    "    e->next = table[i];\n    table[i] = e;\n    return e;\n}\n\n"
    "long sum(struct entry **table, unsigned size)\n{\n    long s = 0;\n"
    "    for (unsigned i = 0; i < size; i++)\n        for (struct entry *e = table[i]; e; e = e->next)\n"
    "            s += e->value;\n    return s;\n}\n\n"
    "int run(int argc, char **argv)\n{\n    struct entry *table[64] = {0};\n"
    "    for (int i = 1; i < argc; i++)\n        insert(table, 64, argv[i], strtol(argv[i], NULL, 10));\n"
    "    printf(\"%ld\\n\", sum(table, 64));\n    return 0;\n}\n";

static int write_file(osb_ctx *c, const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return osb_fail(c, errno, "cannot create %s: %s", path, strerror(errno));
    int ok = osb_write_full(fd, data, n) == 1;
    int e = errno;
    close(fd);
    return ok ? 0 : osb_fail(c, e, "cannot write %s: %s", path, strerror(e));
}

static int need_program(osb_ctx *c, const char *prog)
{
    return access(prog, X_OK) == 0 ? 0 : osb_fail(c, ENOENT, "%s not executable here (install it, or the "
                                                    "sandbox does not see the host's root)", prog);
}

static int need_workdir(osb_ctx *c)
{
    if (!c->p->workdir || !c->p->workdir[0])
        return osb_fail(c, EINVAL, "an application workload needs a work dir");
    memset(&app, 0, sizeof app);
    app.server = -1;
    snprintf(app.dir, sizeof app.dir, "%s", c->p->workdir);
    c->state = &app;
    return 0;
}

/* fork + execve(argv) with the work dir as cwd + waitpid: 1 if it exited 0. */
static int run_program(const char *dir, char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        if (chdir(dir) != 0)
            _exit(126);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    if (pid < 0)
        return 0;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* ---- app_compile */
static int compile_setup(osb_ctx *c)
{
    if (need_program(c, COMPILER) != 0 || need_workdir(c) != 0)
        return -1;
    snprintf(app.source, sizeof app.source, "%s/osb_small.c", app.dir);
    snprintf(app.output, sizeof app.output, "%s/osb_small.o", app.dir);
    return write_file(c, app.source, SMALL_C, sizeof SMALL_C - 1);
}

static int compile_loop(osb_ctx *c, int64_t n)
{
    /* -pipe: no temporary files under /tmp (a sandbox's own tmpfs would measure its memory) */
    char *const argv[] = {COMPILER, "-O0", "-pipe", "-c", "osb_small.c", "-o", "osb_small.o", NULL};
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        unlink(app.output);
        ok += run_program(app.dir, argv) && size_of(app.output) > 0;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld of %lld compiles failed", (long long)(n - ok), (long long)n);
}

static int compile_teardown(osb_ctx *c)
{
    unlink(app.output);
    unlink(app.source);
    c->state = NULL;
    return 0;
}

/* ---- app_tar */
static int64_t tar_files(osb_ctx *c) { return c->p->size > 0 ? c->p->size : 100; }

static int tar_teardown(osb_ctx *c)
{
    char path[4300];
    for (int64_t i = 0; i < app.files; i++) {
        snprintf(path, sizeof path, "%s/f%05lld", app.source, (long long)i);
        unlink(path);
    }
    if (app.source[0])
        rmdir(app.source);
    if (app.output[0])
        unlink(app.output);
    c->state = NULL;
    return 0;
}

static int tar_setup(osb_ctx *c)
{
    if (need_program(c, TAR) != 0 || need_workdir(c) != 0)
        return -1;
    int64_t files = tar_files(c);
    if (files > 10000)
        return osb_fail(c, EINVAL, "files %lld > 10000", (long long)files);
    snprintf(app.source, sizeof app.source, "%s/osb_tree", app.dir);
    snprintf(app.output, sizeof app.output, "%s/osb_tree.tar", app.dir);
    if (mkdir(app.source, 0755) != 0)
        return osb_fail(c, errno, "cannot create %s: %s", app.source, strerror(errno));
    char path[4300], data[TAR_FILE_BYTES];
    for (int64_t i = 0; i < files; i++) {
        memset(data, 'a' + (int)(i % 26), sizeof data);
        snprintf(path, sizeof path, "%s/f%05lld", app.source, (long long)i);
        if (write_file(c, path, data, sizeof data) != 0) {
            tar_teardown(c);   /* teardown runs only after a setup that succeeded */
            return -1;
        }
        app.files = i + 1;
    }
    return 0;
}

static int tar_loop(osb_ctx *c, int64_t n)
{
    char *const argv[] = {TAR, "-cf", "osb_tree.tar", "osb_tree", NULL};
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        unlink(app.output);
        ok += run_program(app.dir, argv) && size_of(app.output) >= (off_t)(app.files * TAR_FILE_BYTES);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld of %lld tar runs failed", (long long)(n - ok), (long long)n);
}

/* ---- app_kv: a line protocol, "S key value\n" -> "OK\n", "G key\n" -> "V value\n" | "NF\n" */
#define KV_SLOTS 1024
#define KV_LINE 64

/* One line: the protocol is one request, then its reply, so a line never shares a
 * read with the next one; reads whole segments, not a byte at a time (a real
 * server buffers). */
static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        n += (size_t)r;
        if (buf[n - 1] == '\n') {
            buf[n] = 0;
            return (int)n;
        }
    }
    return -1;
}

static void kv_serve(int listener)
{
    static long values[KV_SLOTS];
    static char used[KV_SLOTS];
    char line[KV_LINE], reply[KV_LINE];
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        while (read_line(fd, line, sizeof line) > 0) {
            unsigned long key = 0;
            long value = 0;
            int len;
            if (line[0] == 'S' && sscanf(line + 1, "%lu %ld", &key, &value) == 2) {
                values[key % KV_SLOTS] = value;
                used[key % KV_SLOTS] = 1;
                len = snprintf(reply, sizeof reply, "OK\n");
            } else if (line[0] == 'G' && sscanf(line + 1, "%lu", &key) == 1) {
                len = used[key % KV_SLOTS] ? snprintf(reply, sizeof reply, "V %ld\n", values[key % KV_SLOTS])
                                           : snprintf(reply, sizeof reply, "NF\n");
            } else {
                len = snprintf(reply, sizeof reply, "ERR\n");
            }
            if (osb_write_full(fd, reply, (size_t)len) != 1)
                break;
        }
        close(fd);
    }
}

static int kv_setup(osb_ctx *c)
{
    memset(&app, 0, sizeof app);
    app.server = -1;
    app.requests = c->p->size > 0 ? c->p->size : 100;
    c->state = &app;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0)
        return osb_fail(c, errno, "socket failed: %s", strerror(errno));
    app.addr.sin_family = AF_INET;
    app.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof app.addr;
    if (bind(listener, (struct sockaddr *)&app.addr, sizeof app.addr) != 0 || listen(listener, 16) != 0
        || getsockname(listener, (struct sockaddr *)&app.addr, &len) != 0) {
        int e = errno;
        close(listener);
        return osb_fail(c, e, "cannot listen on 127.0.0.1: %s", strerror(e));
    }
    pid_t pid = osb_fork_partner(c);
    if (pid == 0)
        kv_serve(listener);
    int e = errno;
    close(listener);
    if (pid < 0)
        return osb_fail(c, e, "fork failed: %s", strerror(e));
    app.server = pid;
    return 0;
}

/* One session: connect, `requests` requests (S i v, then G i), close; answers checked. */
static int64_t kv_session(int64_t base)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    if (connect(fd, (struct sockaddr *)&app.addr, sizeof app.addr) != 0) {
        close(fd);
        return 0;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char line[KV_LINE], reply[KV_LINE];
    int64_t ok = 0;
    for (int64_t r = 0; r < app.requests; r++) {
        unsigned long key = (unsigned long)((base + r / 2) % KV_SLOTS);
        long value = (long)(base + r);
        int len = r % 2 == 0 ? snprintf(line, sizeof line, "S %lu %ld\n", key, value)
                             : snprintf(line, sizeof line, "G %lu\n", key);
        if (osb_write_full(fd, line, (size_t)len) != 1 || read_line(fd, reply, sizeof reply) < 0)
            break;
        long got;
        ok += r % 2 == 0 ? strcmp(reply, "OK\n") == 0
                         : sscanf(reply, "V %ld", &got) == 1 && got == value - 1;
    }
    close(fd);
    return ok;
}

static int kv_loop(osb_ctx *c, int64_t n)
{
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++)
        ok += kv_session(i * app.requests);
    c->work = ok;
    return ok == n * app.requests ? 0 : osb_fail(c, EIO, "%lld of %lld requests answered correctly",
                                                 (long long)ok, (long long)(n * app.requests));
}

static int kv_teardown(osb_ctx *c)
{
    if (app.server > 0)
        osb_reap_partner(app.server, 1);
    app.server = -1;
    c->state = NULL;
    return 0;
}

const osb_probe osb_probes_apps[] = {
    {"app_compile", compile_setup, compile_loop, compile_teardown},
    {"app_tar", tar_setup, tar_loop, tar_teardown},
    {"app_kv", kv_setup, kv_loop, kv_teardown},
    {NULL, NULL, NULL, NULL},
};
