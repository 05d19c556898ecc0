/* osbench-guard: sits between the runner and one worker so that nothing the
 * worker started outlives the runner, however the runner dies.
 *
 *   osbench-guard RUNNER_PID -- worker argv...
 *
 * The kernel sends the guard SIGTERM when its parent (the runner) dies, even
 * by SIGKILL (PR_SET_PDEATHSIG); the guard is a child subreaper, so every
 * descendant that loses its parent (a daemonised helper, a sandbox that
 * called setsid) is re-parented to it and stays findable.  On SIGTERM, or
 * once the worker has exited, the guard SIGKILLs its process group and every
 * descendant, reaps them, and exits with the worker's status (re-raising the
 * worker's fatal signal, so the runner sees the same return code as without
 * a guard).  Between those moments it sleeps in sigwaitinfo: the probes'
 * timed loops get no extra work. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ppid, process group and state of pid from /proc/PID/stat; 0 on success. */
static int stat_of(pid_t pid, pid_t *ppid, pid_t *pgrp, char *state_out) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');  /* the command name may contain spaces and parentheses */
    int pp, pg;
    char state;
    if (!p || sscanf(p + 2, "%c %d %d", &state, &pp, &pg) != 3) return -1;
    *ppid = pp;
    *pgrp = pg;
    *state_out = state;
    return 0;
}

#define MAXP 65536
static pid_t pids[MAXP], ppids[MAXP], pgrps[MAXP];

/* SIGKILL every process in our group and every descendant; how many were signalled. */
static int kill_all(pid_t self, pid_t group) {
    int n = 0, killed = 0;
    DIR *d = opendir("/proc");
    if (!d) return killpg(group, SIGKILL) == 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAXP) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0 || pid == self) continue;
        char state;
        /* a zombie is dead already; its parent (or we, once re-parented) reaps it */
        if (stat_of(pid, &ppids[n], &pgrps[n], &state) == 0 && state != 'Z') pids[n++] = pid;
    }
    closedir(d);
    /* descendants: repeat until the set stops growing (a child may be listed before its parent) */
    static char mark[MAXP];
    memset(mark, 0, (size_t)n);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            if (mark[i]) continue;
            int take = pgrps[i] == group || ppids[i] == self;
            for (int j = 0; !take && j < n; j++)
                take = mark[j] && pids[j] == ppids[i];
            if (take) { mark[i] = 1; changed = 1; }
        }
    }
    for (int i = 0; i < n; i++)
        if (mark[i] && kill(pids[i], SIGKILL) == 0) killed++;
    return killed;
}

static void reap_everything(pid_t self, pid_t group) {
    for (int round = 0; round < 100; round++) {
        int killed = kill_all(self, group);
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
        if (killed == 0) {
            /* nothing left to signal; wait for the ones already dying */
            while (waitpid(-1, NULL, 0) > 0) {}
            return;
        }
        usleep(1000);
    }
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: osbench-guard RUNNER_PID -- command [args...]\n");
        return 125;
    }
    pid_t runner = (pid_t)atoi(argv[1]);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);  /* delivered only through sigwaitinfo below */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("osbench-guard: prctl");
        return 125;
    }
    /* The runner may have died between fork and prctl: then no signal will come. */
    if (getppid() != runner) return 125;
    pid_t self = getpid(), group = getpgrp();
    pid_t worker = fork();
    if (worker < 0) {
        perror("osbench-guard: fork");
        return 125;
    }
    if (worker == 0) {
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        prctl(PR_SET_PDEATHSIG, 0);
        execvp(argv[3], argv + 3);
        fprintf(stderr, "osbench-guard: cannot run %s: %s\n", argv[3], strerror(errno));
        _exit(127);
    }
    int status = 0;
    for (;;) {
        siginfo_t info;
        int sig = sigwaitinfo(&set, &info);
        if (sig < 0) continue;
        if (sig != SIGCHLD) {  /* runner gone or asking us to stop: take everything down */
            reap_everything(self, group);
            return 128 + sig;
        }
        int st;
        pid_t pid, done = 0;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
            if (pid == worker) { status = st; done = 1; }
        if (done) break;
    }
    reap_everything(self, group);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        /* no core from the guard: the worker already had its chance */
        prctl(PR_SET_DUMPABLE, 0);
        raise(sig);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}
