/* McGarry's scalability sweeps: the cost of one operation against how many
 * like objects already exist (sockets open, mappings of one file, threads
 * alive).  The existing objects are made in setup and released in teardown,
 * both untimed; `size` is the sweep variable. */
#define _GNU_SOURCE
#include "osb_partner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define WINDOW 4096
#define MAPPED_FILE_BYTES ((off_t)200 << 20)   /* McGarry's 200 MB file, sparse */

typedef struct {
    int64_t count;          /* existing objects made */
    int *socks;
    void **maps;
    pthread_t *threads;
    int fd;
    char path[4096];
    pthread_mutex_t lock;
    pthread_cond_t go;
    int release;
    struct rlimit old_nofile;
    int raised;
} sweep_state;

static sweep_state *new_state(osb_ctx *c, size_t each)
{
    sweep_state *s = calloc(1, sizeof *s);
    int64_t k = c->p->size > 0 ? c->p->size : 0;
    if (!s) {
        osb_fail(c, ENOMEM, "out of memory");
        return NULL;
    }
    s->fd = -1;
    c->state = s;
    void *arr = calloc((size_t)(k > 0 ? k : 1), each);
    if (!arr) {
        osb_fail(c, ENOMEM, "out of memory for %lld objects", (long long)k);
        return NULL;
    }
    s->socks = arr;
    s->maps = arr;
    s->threads = arr;
    return s;
}

/* ---- socket + bind vs number of open (bound) sockets */

static int bind_loopback(int fd)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return bind(fd, (struct sockaddr *)&a, sizeof a);
}

static int sockets_setup(osb_ctx *c)
{
    sweep_state *s = new_state(c, sizeof(int));
    int64_t k = c->p->size > 0 ? c->p->size : 0;
    struct rlimit rl;
    if (!s)
        return -1;
    getrlimit(RLIMIT_NOFILE, &s->old_nofile);
    rl = s->old_nofile;
    if ((rlim_t)(k + 256) > rl.rlim_cur) {
        if ((rlim_t)(k + 256) > rl.rlim_max)
            return osb_fail(c, EMFILE, "sockets=%lld needs more descriptors than the hard limit %llu",
                            (long long)k, (unsigned long long)rl.rlim_max);
        rl.rlim_cur = (rlim_t)(k + 256);
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            return osb_fail(c, errno, "cannot raise the descriptor limit: %s", strerror(errno));
        s->raised = 1;
    }
    for (; s->count < k; s->count++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return osb_fail(c, errno, "socket %lld failed: %s", (long long)s->count, strerror(errno));
        s->socks[s->count] = fd;
        if (bind_loopback(fd) != 0)
            return osb_fail(c, errno, "bind of socket %lld failed: %s", (long long)s->count, strerror(errno));
    }
    return 0;
}

/* One socket(AF_INET, SOCK_STREAM) + bind(127.0.0.1, port 0) + close;
 * work = sockets bound. */
static int sockets_loop(osb_ctx *c, int64_t n)
{
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return osb_fail(c, errno, "socket failed: %s", strerror(errno));
        ok += bind_loopback(fd) == 0;
        close(fd);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld binds failed", (long long)(n - ok));
}

static int sockets_teardown(osb_ctx *c)
{
    sweep_state *s = c->state;
    if (!s)
        return 0;
    for (int64_t i = 0; i < s->count; i++)
        close(s->socks[i]);
    if (s->raised)
        setrlimit(RLIMIT_NOFILE, &s->old_nofile);
    free(s->socks);
    free(s);
    c->state = NULL;
    return 0;
}

/* ---- mmap of a 4 KiB window vs number of windows already mapped */

static off_t window_offset(int64_t i)
{
    /* every other page: neighbouring windows never merge into one mapping */
    return (off_t)((i * 2) % (MAPPED_FILE_BYTES / WINDOW)) * WINDOW;
}

static int maps_setup(osb_ctx *c)
{
    sweep_state *s = new_state(c, sizeof(void *));
    int64_t k = c->p->size > 0 ? c->p->size : 0;
    if (!s)
        return -1;
    if (!c->p->workdir || !c->p->workdir[0])
        return osb_fail(c, EINVAL, "workdir parameter is required");
    snprintf(s->path, sizeof s->path, "%s/osbench_mapped_200mb", c->p->workdir);
    s->fd = open(s->path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    if (s->fd < 0)
        return osb_fail(c, errno, "cannot create %s: %s", s->path, strerror(errno));
    if (ftruncate(s->fd, MAPPED_FILE_BYTES) != 0)   /* sparse: no block is written */
        return osb_fail(c, errno, "cannot size %s: %s", s->path, strerror(errno));
    for (; s->count < k; s->count++) {
        void *m = mmap(NULL, WINDOW, PROT_READ, MAP_SHARED, s->fd, window_offset(s->count));
        if (m == MAP_FAILED)
            return osb_fail(c, errno, "mapping %lld failed: %s", (long long)s->count, strerror(errno));
        s->maps[s->count] = m;
    }
    return 0;
}

/* One mmap of a 4 KiB window of the file + munmap; work = windows mapped. */
static int maps_loop(osb_ctx *c, int64_t n)
{
    sweep_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        void *m = mmap(NULL, WINDOW, PROT_READ, MAP_SHARED, s->fd, window_offset(s->count + i));
        if (m == MAP_FAILED)
            return osb_fail(c, errno, "mmap failed: %s", strerror(errno));
        ok += munmap(m, WINDOW) == 0;
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld unmaps failed", (long long)(n - ok));
}

static int maps_teardown(osb_ctx *c)
{
    sweep_state *s = c->state;
    if (!s)
        return 0;
    for (int64_t i = 0; i < s->count; i++)
        munmap(s->maps[i], WINDOW);
    if (s->fd >= 0)
        close(s->fd);
    if (s->path[0])
        unlink(s->path);
    free(s->maps);
    free(s);
    c->state = NULL;
    return 0;
}

/* ---- pthread_create + join vs number of threads alive */

static void *wait_for_release(void *arg)
{
    sweep_state *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->release)
        pthread_cond_wait(&s->go, &s->lock);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void *empty_thread(void *arg)
{
    return arg;
}

static int threads_setup(osb_ctx *c)
{
    sweep_state *s = new_state(c, sizeof(pthread_t));
    int64_t k = c->p->size > 0 ? c->p->size : 0;
    pthread_attr_t attr;
    if (!s)
        return -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->go, NULL);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);   /* small stacks: thousands stay cheap */
    for (; s->count < k; s->count++) {
        int e = pthread_create(&s->threads[s->count], &attr, wait_for_release, s);
        if (e != 0) {
            pthread_attr_destroy(&attr);
            return osb_fail(c, e, "thread %lld of %lld: %s", (long long)s->count, (long long)k, strerror(e));
        }
    }
    pthread_attr_destroy(&attr);
    return 0;
}

/* One pthread_create + pthread_join of an empty thread; work = threads joined
 * that returned their argument. */
static int threads_loop(osb_ctx *c, int64_t n)
{
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        pthread_t t;
        void *ret = NULL;
        int e = pthread_create(&t, NULL, empty_thread, (void *)(intptr_t)(i + 1));
        if (e != 0)
            return osb_fail(c, e, "pthread_create failed: %s", strerror(e));
        pthread_join(t, &ret);
        ok += ret == (void *)(intptr_t)(i + 1);
    }
    c->work = ok;
    return ok == n ? 0 : osb_fail(c, EIO, "%lld threads lost", (long long)(n - ok));
}

static int threads_teardown(osb_ctx *c)
{
    sweep_state *s = c->state;
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    s->release = 1;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->lock);
    for (int64_t i = 0; i < s->count; i++)
        pthread_join(s->threads[i], NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->go);
    free(s->threads);
    free(s);
    c->state = NULL;
    return 0;
}

const osb_probe osb_probes_sweeps[] = {
    {"socket_bind_open", sockets_setup, sockets_loop, sockets_teardown},
    {"mmap_window_maps", maps_setup, maps_loop, maps_teardown},
    {"thread_create_alive", threads_setup, threads_loop, threads_teardown},
    {NULL, NULL, NULL, NULL},
};
