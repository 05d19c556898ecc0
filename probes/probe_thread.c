/* Thread lifecycle probes (osbench create_threads, NetBSD/FreeBSD thread tests). */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

static int64_t ran;

static void *thread_body(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
    return NULL;
}

static int create_join_loop(osb_ctx *c, int64_t n)
{
    pthread_attr_t attr;
    pthread_attr_t *pattr = NULL;
    if (c->p->child_cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(c->p->child_cpu, &set);
        pthread_attr_init(&attr);
        pthread_attr_setaffinity_np(&attr, sizeof set, &set);
        pattr = &attr;
    }
    __atomic_store_n(&ran, 0, __ATOMIC_RELAXED);
    int rc = 0;
    for (int64_t i = 0; i < n; i++) {
        pthread_t t;
        int e = pthread_create(&t, pattr, thread_body, NULL);
        if (e != 0) {
            rc = osb_fail(c, e, "pthread_create failed: %s", strerror(e));
            break;
        }
        pthread_join(t, NULL);
    }
    if (pattr)
        pthread_attr_destroy(pattr);
    c->work = __atomic_load_n(&ran, __ATOMIC_RELAXED);
    return rc;
}

const osb_probe osb_probes_thread[] = {
    {"thread_create_join", NULL, create_join_loop, NULL},
    {NULL, NULL, NULL, NULL},
};
