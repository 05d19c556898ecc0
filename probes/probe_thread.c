/* Thread probes: creation (osbench create_threads; McGarry thread lifecycle),
 * synchronisation (McGarry Table 2: uncontested mutex; condition-variable
 * wake-up) and McGarry Table 3's ping-pong games. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static int64_t ran;

static void *thread_body(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* Attributes pinning a new thread to child_cpu (NULL: inherit). */
static pthread_attr_t *pinned_attr(osb_ctx *c, pthread_attr_t *attr)
{
    if (c->p->child_cpu < 0)
        return NULL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c->p->child_cpu, &set);
    pthread_attr_init(attr);
    pthread_attr_setaffinity_np(attr, sizeof set, &set);
    return attr;
}

#define MAX_OUTSTANDING 4096

/* pthread_create of up to `size` threads (1: one at a time), then
 * pthread_join of each; osbench creates 100, then joins them. */
static int create_join_loop(osb_ctx *c, int64_t n)
{
    pthread_attr_t attr;
    pthread_attr_t *pattr = pinned_attr(c, &attr);
    int64_t group = c->p->size > 1 ? c->p->size : 1;
    if (group > MAX_OUTSTANDING)
        return osb_fail(c, EINVAL, "outstanding %lld > %d", (long long)group, MAX_OUTSTANDING);
    pthread_t ts[group];
    __atomic_store_n(&ran, 0, __ATOMIC_RELAXED);
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i += group) {
        int64_t k = n - i < group ? n - i : group, made = 0;
        for (; made < k; made++) {
            int e = pthread_create(&ts[made], pattr, thread_body, NULL);
            if (e != 0) {
                rc = osb_fail(c, e, "pthread_create failed: %s", strerror(e));
                break;
            }
        }
        for (int64_t j = 0; j < made; j++)
            pthread_join(ts[j], NULL);
    }
    if (pattr)
        pthread_attr_destroy(pattr);
    c->work = __atomic_load_n(&ran, __ATOMIC_RELAXED);
    return rc;
}

/* McGarry uncontested mutex: lock + unlock of a mutex no other thread wants. */
static int mutex_loop(osb_ctx *c, int64_t n)
{
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    static volatile int64_t held;
    held = 0;
    for (int64_t i = 0; i < n; i++) {
        if (pthread_mutex_lock(&m) != 0)
            return osb_fail(c, EINVAL, "pthread_mutex_lock failed");
        held++;
        pthread_mutex_unlock(&m);
    }
    c->work = held;
    return 0;
}

/* Ping-pong games: in each game two player threads hand a token back and
 * forth under the game's mutex, each waiting on its own condition variable
 * until the token is its own.  One game: the condition-variable ping-pong
 * between two threads; McGarry Table 3 plays 1, 4 and 500 games at once.
 * One iteration = one hand-over (one thread-to-thread switch when they share
 * a CPU); a batch of n plays n / games hand-overs in each game. */
typedef struct game {
    pthread_mutex_t m;
    pthread_cond_t cv[2];
    pthread_cond_t done;      /* the last hand-over of a batch wakes the timing thread */
    int64_t turn, passes, limit;
    int stop;
    pthread_t threads[2];
    int started;
} game;

typedef struct { game *g; int me; } player_arg;

typedef struct {
    game *games;
    player_arg *args;
    int count;
} match;

static void *player(void *arg)
{
    player_arg *a = arg;
    game *g = a->g;
    int me = a->me, other = 1 - me;
    pthread_mutex_lock(&g->m);
    for (;;) {
        while ((g->turn != me || g->passes >= g->limit) && !g->stop)
            pthread_cond_wait(&g->cv[me], &g->m);
        if (g->stop)
            break;
        if (++g->passes == g->limit)
            pthread_cond_signal(&g->done);
        g->turn = other;
        pthread_cond_signal(&g->cv[other]);
    }
    pthread_mutex_unlock(&g->m);
    return NULL;
}

static int games_teardown(osb_ctx *c);

static int games_setup(osb_ctx *c, int count, size_t stack)
{
    match *mt = calloc(1, sizeof *mt);
    if (!mt)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = mt;
    mt->games = calloc((size_t)count, sizeof *mt->games);
    mt->args = calloc((size_t)count * 2, sizeof *mt->args);
    if (!mt->games || !mt->args)
        return osb_fail(c, ENOMEM, "out of memory");
    mt->count = count;
    for (int i = 0; i < count; i++) {
        game *g = &mt->games[i];
        pthread_mutex_init(&g->m, NULL);
        pthread_cond_init(&g->cv[0], NULL);
        pthread_cond_init(&g->cv[1], NULL);
        pthread_cond_init(&g->done, NULL);
        g->turn = -1;  /* nobody plays until the timed loop starts */
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (stack)
        pthread_attr_setstacksize(&attr, stack);
    if (c->p->child_cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(c->p->child_cpu, &set);
        pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    int rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        game *g = &mt->games[i];
        for (int k = 0; k < 2; k++) {
            mt->args[2 * i + k] = (player_arg){g, k};
            int e = pthread_create(&g->threads[k], &attr, player, &mt->args[2 * i + k]);
            if (e != 0) {
                rc = osb_fail(c, e, "pthread_create of a player of game %d failed: %s", i, strerror(e));
                break;
            }
            g->started++;
        }
    }
    pthread_attr_destroy(&attr);
    return rc;
}

static int games_loop(osb_ctx *c, int64_t n)
{
    match *mt = c->state;
    int64_t total = 0;
    for (int i = 0; i < mt->count; i++) {
        game *g = &mt->games[i];
        pthread_mutex_lock(&g->m);
        g->passes = 0;
        g->limit = n / mt->count + (i < n % mt->count);
        g->turn = 0;
        pthread_cond_signal(&g->cv[0]);
        pthread_mutex_unlock(&g->m);
    }
    for (int i = 0; i < mt->count; i++) {
        game *g = &mt->games[i];
        pthread_mutex_lock(&g->m);
        while (g->passes < g->limit)
            pthread_cond_wait(&g->done, &g->m);
        total += g->passes;
        pthread_mutex_unlock(&g->m);
    }
    c->work = total;
    return 0;
}

static int games_teardown(osb_ctx *c)
{
    match *mt = c->state;
    if (!mt)
        return 0;
    for (int i = 0; mt->games && i < mt->count; i++) {
        game *g = &mt->games[i];
        pthread_mutex_lock(&g->m);
        g->stop = 1;
        pthread_cond_broadcast(&g->cv[0]);
        pthread_cond_broadcast(&g->cv[1]);
        pthread_mutex_unlock(&g->m);
        for (int k = 0; k < g->started; k++)
            pthread_join(g->threads[k], NULL);
        pthread_cond_destroy(&g->cv[0]);
        pthread_cond_destroy(&g->cv[1]);
        pthread_cond_destroy(&g->done);
        pthread_mutex_destroy(&g->m);
    }
    free(mt->games);
    free(mt->args);
    free(mt);
    c->state = NULL;
    return 0;
}

static int condvar_setup(osb_ctx *c)
{
    return games_setup(c, 1, 0);
}

/* McGarry Table 3 (size = experiment): 1: one game (2 players); 2: four games
 * (8 players); 3: 500 games (1000 players) with 32 KiB stacks. */
static int mcgarry_setup(osb_ctx *c)
{
    switch (c->p->size) {
    case 0:
    case 1: return games_setup(c, 1, 0);
    case 2: return games_setup(c, 4, 0);
    case 3: return games_setup(c, 500, 32 * 1024);
    default: return osb_fail(c, EINVAL, "experiment must be 1, 2 or 3 (got %lld)", (long long)c->p->size);
    }
}

const osb_probe osb_probes_thread[] = {
    {"thread_create_join", NULL, create_join_loop, NULL},
    {"mutex_uncontested", NULL, mutex_loop, NULL},
    {"condvar_pingpong", condvar_setup, games_loop, games_teardown},
    {"thread_pingpong_game", mcgarry_setup, games_loop, games_teardown},
    {NULL, NULL, NULL, NULL},
};
