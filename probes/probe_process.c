/* Process probes: creation, program load, termination, and IPC between two
 * processes.  All of them fork: the worker runs them in osbench-parent
 * (probes/helpers/parent.c) unless parent=python. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Children created before the first is waited for: size, or 1 (one at a
 * time, lmbench and UnixBench); osbench forks 100, then waits for all. */
static int64_t outstanding_of(osb_ctx *c)
{
    return c->p->size > 1 ? c->p->size : 1;
}

/* Fork n children, each running child() (which must not return), keeping up
 * to `outstanding` alive before reaping them in order; work = children that
 * exited with status 0. */
static int fork_and_reap(osb_ctx *c, int64_t n, void (*child)(osb_ctx *))
{
    int64_t reaped = 0, group = outstanding_of(c);
    pid_t pids[group > 4096 ? 1 : group];  /* registry caps outstanding at 4096 */
    if (group > 4096)
        return osb_fail(c, EINVAL, "outstanding %lld > 4096", (long long)group);
    for (int64_t i = 0; i < n; i += group) {
        int64_t k = n - i < group ? n - i : group, made = 0;
        for (; made < k; made++) {
            pid_t pid = fork();
            if (pid == 0) {
                osb_pin_self(c->p->child_cpu);
                child(c);
            }
            if (pid < 0)
                break;
            pids[made] = pid;
        }
        int err = made < k ? errno : 0;
        for (int64_t j = 0; j < made; j++) {
            int st;
            if (waitpid(pids[j], &st, 0) == pids[j] && WIFEXITED(st) && WEXITSTATUS(st) == 0)
                reaped++;
        }
        if (err) {
            c->work = reaped;
            return osb_fail(c, err, "fork failed: %s", strerror(err));
        }
    }
    c->work = reaped;
    return 0;
}

/* _exit, not exit: no atexit handler or stdio flush of the parent (Python,
 * when parent=python) may run twice. */
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

static int all_ran(osb_ctx *c, int64_t n, const char *what)
{
    return c->work == n ? 0 : osb_fail(c, ENOEXEC, "%lld of %lld %s did not exit 0",
                                       (long long)(n - c->work), (long long)n, what);
}

/* fork + execve of a program whose main returns 0 at once + waitpid. */
static int fork_exec_loop(osb_ctx *c, int64_t n)
{
    if (fork_and_reap(c, n, exec_helper) != 0)
        return -1;
    return all_ran(c, n, "helper runs");
}

/* lmbench lat_proc shell: fork + execlp("/bin/sh", "sh", "-c", PROG) + waitpid,
 * PROG being the empty helper (lmbench's hello). */
static int shell_setup(osb_ctx *c)
{
    if (access("/bin/sh", X_OK) != 0)
        return osb_fail(c, ENOENT, "/bin/sh not executable");
    /* A helper path the shell would split or expand (a checkout in "/tmp/x y")
     * is passed as $0 and run as "$0"; any other path stays the literal PROG
     * lmbench runs.  Decided here, outside the timed loop; c->state is the
     * -c command string. */
    if (c->p->helper_path && strpbrk(c->p->helper_path, " \t\n'\"\\$`;&|<>()*?[]#~=%!{}"))
        c->state = (void *)"\"$0\"";
    return fork_exec_setup(c);
}

static void exec_shell(osb_ctx *c)
{
    if (c->state)
        execl("/bin/sh", "sh", "-c", (const char *)c->state, c->p->helper_path, (char *)NULL);
    else
        execl("/bin/sh", "sh", "-c", c->p->helper_path, (char *)NULL);
    _exit(127);
}

static int fork_shell_loop(osb_ctx *c, int64_t n)
{
    if (fork_and_reap(c, n, exec_shell) != 0)
        return -1;
    return all_ran(c, n, "shell runs");
}

/* posix_spawn of the empty helper + waitpid (glibc: clone(CLONE_VM|CLONE_VFORK)). */
static int spawn_loop(osb_ctx *c, int64_t n)
{
    int64_t ok = 0;
    char *const argv[] = {(char *)c->p->helper_path, NULL};
    for (int64_t i = 0; i < n; i++) {
        pid_t pid;
        int e = posix_spawn(&pid, c->p->helper_path, NULL, NULL, argv, environ);
        if (e != 0) {
            c->work = ok;
            return osb_fail(c, e, "posix_spawn failed: %s", strerror(e));
        }
        int st;
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
    }
    c->work = ok;
    return all_ran(c, n, "spawned helpers");
}

/* UnixBench execl: one process re-executes its program n times (exec only, no
 * fork per operation).  The batch forks once, the chain runs n execs, the last
 * one writes how many it did to a pipe; the one fork+wait is amortised over n. */
static int execl_loop(osb_ctx *c, int64_t n)
{
    int fds[2];
    if (pipe(fds) != 0)
        return osb_fail(c, errno, "pipe failed: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        char r[24], d[24], f[16];
        close(fds[0]);
        osb_pin_self(c->p->child_cpu);
        snprintf(r, sizeof r, "%lld", (long long)n);
        snprintf(d, sizeof d, "%d", 0);
        snprintf(f, sizeof f, "%d", fds[1]);
        execl(c->p->helper_path, c->p->helper_path, r, d, f, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return osb_fail(c, errno, "fork failed: %s", strerror(errno));
    }
    int64_t done = 0;
    ssize_t got = read(fds[0], &done, sizeof done);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    c->work = got == (ssize_t)sizeof done ? done : 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return osb_fail(c, ECHILD, "exec chain ended with status %d", st);
    return c->work == n ? 0 : osb_fail(c, ENOEXEC, "exec chain did %lld of %lld execs",
                                       (long long)c->work, (long long)n);
}

/* Children that wait to be killed: they die with their parent too. */
typedef struct {
    pid_t *pids;
    int64_t count;
} sleepers;

static int make_sleepers(osb_ctx *c, sleepers *s, int64_t count)
{
    pid_t self = getpid();
    s->pids = calloc((size_t)(count > 0 ? count : 1), sizeof(pid_t));
    if (!s->pids)
        return osb_fail(c, ENOMEM, "out of memory");
    for (s->count = 0; s->count < count; s->count++) {
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != self)
                _exit(0);
            for (;;)
                pause();
        }
        if (pid < 0)
            return osb_fail(c, errno, "fork of sleeper %lld failed: %s", (long long)s->count, strerror(errno));
        s->pids[s->count] = pid;
    }
    return 0;
}

/* SIGKILL + reap the sleepers from `from` on; how many died of a signal. */
static int64_t kill_sleepers(sleepers *s, int64_t from, int sig)
{
    int64_t killed = 0;
    for (int64_t i = from; i < s->count; i++) {
        int st;
        kill(s->pids[i], sig);
        if (waitpid(s->pids[i], &st, 0) == s->pids[i] && WIFSIGNALED(st) && WTERMSIG(st) == sig)
            killed++;
    }
    return killed;
}

static void free_sleepers(sleepers *s)
{
    if (s) {
        kill_sleepers(s, 0, SIGKILL);
        free(s->pids);
        free(s);
    }
}

/* McGarry process termination: n children created in setup (untimed); the
 * timed loop is kill(SIGTERM) + waitpid of each. work = children that died of SIGTERM. */
static int terminate_setup(osb_ctx *c)
{
    sleepers *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    if (make_sleepers(c, s, c->n) != 0)
        return -1;
    /* every child must be in pause() (its handlers reset) before timing: yield until they are */
    for (int64_t i = 0; i < s->count; i++) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)s->pids[i]);
        for (int tries = 0; tries < 10000; tries++) {
            FILE *f = fopen(path, "r");
            if (!f)
                break;
            size_t len = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[len] = 0;
            char *p = strrchr(buf, ')');
            if (p && p[2] == 'S')
                break;
            sched_yield();
        }
    }
    return 0;
}

static int terminate_loop(osb_ctx *c, int64_t n)
{
    sleepers *s = c->state;
    c->work = kill_sleepers(s, 0, SIGTERM);
    s->count = 0;
    return c->work == n ? 0 : osb_fail(c, ECHILD, "%lld of %lld children did not die of SIGTERM",
                                       (long long)(n - c->work), (long long)n);
}

static int sleepers_teardown(osb_ctx *c)
{
    free_sleepers(c->state);
    c->state = NULL;
    return 0;
}

/* McGarry's sweep: fork + exit + wait with `size` other processes alive (sleepers
 * created in setup, killed in teardown). */
static int alive_setup(osb_ctx *c)
{
    sleepers *s = calloc(1, sizeof *s);
    if (!s)
        return osb_fail(c, ENOMEM, "out of memory");
    c->state = s;
    return make_sleepers(c, s, c->p->size);
}

static int fork_alive_loop(osb_ctx *c, int64_t n)
{
    int64_t reaped = 0;
    for (int64_t i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        if (pid < 0)
            return osb_fail(c, errno, "fork failed: %s", strerror(errno));
        int st;
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            reaped++;
    }
    c->work = reaped;
    return 0;
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
    {"fork_shell", shell_setup, fork_shell_loop, NULL},
    {"posix_spawn", fork_exec_setup, spawn_loop, NULL},
    {"exec_only", fork_exec_setup, execl_loop, NULL},
    {"proc_terminate", terminate_setup, terminate_loop, sleepers_teardown},
    {"fork_alive", alive_setup, fork_alive_loop, sleepers_teardown},
    {NULL, NULL, NULL, NULL},
};
