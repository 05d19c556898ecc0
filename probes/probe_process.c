/* Process probes: creation, program load, and IPC between two processes. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Fork n children one at a time, each running child() (which must not
 * return), and reap each; work = children that exited with status 0. */
static int fork_and_reap(osb_ctx *c, int64_t n, void (*child)(osb_ctx *))
{
    int64_t reaped = 0;
    for (int64_t i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            osb_pin_self(c->p->child_cpu);
            child(c);
        }
        if (pid < 0)
            return osb_fail(c, errno, "fork failed: %s", strerror(errno));
        int st;
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            reaped++;
    }
    c->work = reaped;
    return 0;
}

/* _exit, not exit: no atexit handler or stdio flush of the (Python) parent
 * may run twice. */
static void exit_at_once(osb_ctx *c)
{
    (void)c;
    _exit(0);
}

static int fork_exit_loop(osb_ctx *c, int64_t n)
{
    return fork_and_reap(c, n, exit_at_once);
}

static int fork_exec_setup(osb_ctx *c)
{
    if (!c->p->helper_path || access(c->p->helper_path, X_OK) != 0)
        return osb_fail(c, ENOENT, "helper program not executable: %s",
                        c->p->helper_path ? c->p->helper_path : "(none)");
    return 0;
}

/* A failed exec exits 127, so only children that really ran the helper count. */
static void exec_helper(osb_ctx *c)
{
    char *const argv[] = {(char *)c->p->helper_path, NULL};
    execve(c->p->helper_path, argv, environ);
    _exit(127);
}

/* fork + execve of a program whose main returns 0 at once + waitpid. */
static int fork_exec_loop(osb_ctx *c, int64_t n)
{
    if (fork_and_reap(c, n, exec_helper) != 0)
        return -1;
    return c->work == n ? 0 : osb_fail(c, ENOEXEC, "%lld of %lld helper runs did not exit 0",
                                       (long long)(n - c->work), (long long)n);
}

typedef struct {
    int to_child[2];
    int to_parent[2];
    pid_t child;
} pingpong_state;

/* The echo child is created in setup, outside the timed region: it returns
 * every byte plus one, so the parent can check each round trip. */
static int pingpong_setup(osb_ctx *c)
{
    pingpong_state *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    s->child = -1;
    if (pipe(s->to_child) != 0 || pipe(s->to_parent) != 0)
        return osb_fail(c, errno, "pipe failed: %s", strerror(errno));
    s->child = fork();
    if (s->child < 0)
        return osb_fail(c, errno, "fork failed: %s", strerror(errno));
    if (s->child == 0) {
        unsigned char b;
        osb_pin_self(c->p->child_cpu);
        close(s->to_child[1]);
        close(s->to_parent[0]);
        while (read(s->to_child[0], &b, 1) == 1) {
            b++;
            if (write(s->to_parent[1], &b, 1) != 1)
                _exit(2);
        }
        _exit(0);
    }
    close(s->to_child[0]);
    close(s->to_parent[1]);
    s->to_child[0] = s->to_parent[1] = -1;
    return 0;
}

static int pingpong_loop(osb_ctx *c, int64_t n)
{
    pingpong_state *s = c->state;
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) {
        unsigned char out = (unsigned char)i, in = 0;
        if (write(s->to_child[1], &out, 1) != 1 || read(s->to_parent[0], &in, 1) != 1)
            return osb_fail(c, errno, "pipe round trip %lld failed: %s", (long long)i, strerror(errno));
        ok += in == (unsigned char)(out + 1);
    }
    c->work = ok;  /* round trips; 2 bytes moved each */
    return 0;
}

static int pingpong_teardown(osb_ctx *c)
{
    pingpong_state *s = c->state;
    int rc = 0;
    if (!s)
        return 0;
    for (int k = 0; k < 2; k++) {
        if (s->to_child[k] > 0) close(s->to_child[k]);
        if (s->to_parent[k] > 0) close(s->to_parent[k]);
    }
    if (s->child > 0) {  /* EOF on its pipe ends the child */
        int st;
        if (waitpid(s->child, &st, 0) != s->child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = osb_fail(c, ECHILD, "echo child did not exit cleanly");
    }
    free(s);
    c->state = NULL;
    return rc;
}

const osb_probe osb_probes_process[] = {
    {"fork_exit", NULL, fork_exit_loop, NULL},
    {"fork_exec", fork_exec_setup, fork_exec_loop, NULL},
    {"pipe_pingpong", pingpong_setup, pingpong_loop, pingpong_teardown},
    {NULL, NULL, NULL, NULL},
};
