/* Mechanism probes (issue #22): the native pieces a sandbox's system call is
 * made of, each measured alone so a crossing can be decomposed
 * (osbench_analysis/mechanism.py):
 *
 *   seccomp_trap        a system call a seccomp filter turns into SIGSYS, handled
 *                       in the same process, which returns a value: gVisor's
 *                       systrap platform pays this per application system call
 *                       (filter + trap + signal delivery + sigreturn).
 *   signal_trap_self    a breakpoint (int3/brk) raising SIGTRAP, handled, returned
 *                       from: signal delivery + sigreturn, with no system call.
 *   ptrace_syscall_stop a tracee's system call under PTRACE_SYSCALL: two stops
 *                       (entry, exit), each a round trip to the tracer.
 *   ptrace_sysemu_stop  a tracee's system call under PTRACE_SYSEMU: one stop, the
 *                       call not performed; what UML and gVisor's ptrace platform
 *                       pay per guest system call before their own handling.
 *
 * seccomp_trap installs a filter that lasts as long as the process: it runs in
 * osbench-parent (native_parent), which ends with its run, and its filter traps
 * only getpid(MAGIC), so no other call of that process is affected beyond the
 * filter's few instructions. */
#define _GNU_SOURCE
#include "harness.h"
#include "osb_partner.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define OSB_AUDIT_ARCH AUDIT_ARCH_X86_64
#define OSB_SET_RET(uc, v) ((uc)->uc_mcontext.gregs[REG_RAX] = (greg_t)(v))
#define OSB_BREAKPOINT() __asm__ volatile("int3" ::: "memory")
#define OSB_SKIP_BREAKPOINT(uc) ((void)(uc))  /* int3 leaves the PC after itself */
#elif defined(__aarch64__)
#define OSB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define OSB_SET_RET(uc, v) ((uc)->uc_mcontext.regs[0] = (unsigned long long)(v))
#define OSB_BREAKPOINT() __asm__ volatile("brk #0" ::: "memory")
#define OSB_SKIP_BREAKPOINT(uc) ((uc)->uc_mcontext.pc += 4)  /* brk leaves the PC on itself */
#endif

/* getpid(MAGIC) is the one call the filter traps; the handler returns RET. */
#define SECCOMP_MAGIC 0x05bec0deL
#define SECCOMP_RET_VALUE 0x7e57L
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1  /* si_code of a seccomp SIGSYS (older libc headers lack it) */
#endif

static volatile int64_t handled;

#ifdef OSB_AUDIT_ARCH
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    if (si->si_code == SYS_SECCOMP && si->si_syscall == SYS_getpid) {
        OSB_SET_RET((ucontext_t *)ctx, SECCOMP_RET_VALUE);
        handled++;
    }
}

static void on_sigtrap(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    OSB_SKIP_BREAKPOINT((ucontext_t *)ctx);
    handled++;
}
#endif

static struct sigaction saved_action;
static int saved_signal;

static int install_handler(osb_ctx *c, int sig, void (*fn)(int, siginfo_t *, void *))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &saved_action) != 0)
        return osb_fail(c, errno, "sigaction(%d) failed: %s", sig, strerror(errno));
    saved_signal = sig;
    return 0;
}

static int restore_handler(osb_ctx *c)
{
    (void)c;
    if (saved_signal)
        sigaction(saved_signal, &saved_action, NULL);
    saved_signal = 0;
    return 0;
}

/* Filters stack and are never removed: install one per process, not per batch. */
static int filter_installed;

static int seccomp_setup(osb_ctx *c)
{
#ifndef OSB_AUDIT_ARCH
    return osb_fail(c, ENOSYS, "seccomp_trap is built for x86-64 and aarch64 only");
#else
    if (!filter_installed) {
        struct sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, OSB_AUDIT_ARCH, 0, 5),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 3),
            /* the low 32 bits of args[0] (little-endian) */
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)SECCOMP_MAGIC, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
            return osb_fail(c, errno, "prctl(PR_SET_NO_NEW_PRIVS) failed: %s", strerror(errno));
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            return osb_fail(c, errno, "seccomp filter refused: %s", strerror(errno));
        filter_installed = 1;
    }
    return install_handler(c, SIGSYS, on_sigsys);
#endif
}

/* work = calls that came back with the handler's value (and were counted by it). */
static int seccomp_loop(osb_ctx *c, int64_t n)
{
    int64_t ok = 0;
    handled = 0;
    for (int64_t i = 0; i < n; i++)
        ok += syscall(SYS_getpid, SECCOMP_MAGIC) == SECCOMP_RET_VALUE;
    c->work = ok < handled ? ok : handled;
    return c->work == n ? 0 : osb_fail(c, EIO, "%lld of %lld calls trapped to the handler",
                                       (long long)c->work, (long long)n);
}

static int breakpoint_setup(osb_ctx *c)
{
#ifndef OSB_AUDIT_ARCH
    return osb_fail(c, ENOSYS, "signal_trap_self is built for x86-64 and aarch64 only");
#else
    return install_handler(c, SIGTRAP, on_sigtrap);
#endif
}

/* work = breakpoints the handler saw. */
static int breakpoint_loop(osb_ctx *c, int64_t n)
{
    handled = 0;
#ifdef OSB_AUDIT_ARCH
    for (int64_t i = 0; i < n; i++)
        OSB_BREAKPOINT();
#endif
    c->work = handled;
    return handled == n ? 0 : osb_fail(c, EIO, "handled %lld of %lld breakpoints",
                                       (long long)handled, (long long)n);
}

/* ---- ptrace: the tracee spins on getppid(); the tracer (the timed side)
 * resumes it to its next system-call stop and waits for that stop. */
typedef struct {
    pid_t tracee;
    int request;         /* PTRACE_SYSCALL or PTRACE_SYSEMU */
    int stops_per_call;  /* 2 (entry and exit) or 1 (entry; the call is skipped) */
} ptrace_state;

static ptrace_state tracing;

static int ptrace_setup_with(osb_ctx *c, int request, int stops_per_call)
{
    tracing = (ptrace_state){.tracee = -1, .request = request, .stops_per_call = stops_per_call};
    pid_t pid = osb_fork_partner(c);
    if (pid < 0)
        return osb_fail(c, errno, "fork failed: %s", strerror(errno));
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
            _exit(3);
        raise(SIGSTOP);
        for (;;)
            syscall(SYS_getppid);
    }
    tracing.tracee = pid;
    c->state = &tracing;
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
        osb_reap_partner(pid, 1);  /* teardown runs only after a setup that succeeded */
        return osb_fail(c, ECHILD, "tracee did not stop (ptrace refused here? status %#x)", st);
    }
    /* SYSGOOD: a syscall stop reads SIGTRAP|0x80, told apart from a real SIGTRAP;
     * EXITKILL: the tracee dies with its tracer. */
    if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)) != 0) {
        int e = errno;
        osb_reap_partner(pid, 1);
        return osb_fail(c, e, "PTRACE_SETOPTIONS failed: %s", strerror(e));
    }
    return 0;
}

static int ptrace_syscall_setup(osb_ctx *c) { return ptrace_setup_with(c, PTRACE_SYSCALL, 2); }

static int ptrace_sysemu_setup(osb_ctx *c)
{
#if defined(__x86_64__) || defined(__i386__)
    /* glibc declares PTRACE_SYSEMU as an enumerator (x86 only), not a macro */
    return ptrace_setup_with(c, PTRACE_SYSEMU, 1);
#else
    return osb_fail(c, ENOSYS, "PTRACE_SYSEMU exists on x86 only");
#endif
}

/* work = tracee system calls completed through their stops (stops / stops per call). */
static int ptrace_loop(osb_ctx *c, int64_t n)
{
    ptrace_state *s = c->state;
    int64_t stops = 0, want = n * s->stops_per_call;
    for (int64_t i = 0; i < want; i++) {
        int st;
        if (ptrace(s->request, s->tracee, NULL, NULL) != 0)
            break;
        if (waitpid(s->tracee, &st, 0) != s->tracee || !WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80))
            break;
        stops++;
    }
    c->work = stops / s->stops_per_call;
    return stops == want ? 0 : osb_fail(c, EIO, "%lld of %lld system-call stops seen",
                                        (long long)stops, (long long)want);
}

static int ptrace_teardown(osb_ctx *c)
{
    ptrace_state *s = c->state;
    if (s && s->tracee > 0)
        osb_reap_partner(s->tracee, 1);
    if (s)
        s->tracee = -1;
    c->state = NULL;
    return 0;
}

const osb_probe osb_probes_mechanism[] = {
    {"seccomp_trap", seccomp_setup, seccomp_loop, restore_handler},
    {"signal_trap_self", breakpoint_setup, breakpoint_loop, restore_handler},
    {"ptrace_syscall_stop", ptrace_syscall_setup, ptrace_loop, ptrace_teardown},
    {"ptrace_sysemu_stop", ptrace_sysemu_setup, ptrace_loop, ptrace_teardown},
    {NULL, NULL, NULL, NULL},
};
