/* LD_PRELOAD shim for User-mode Linux on hosts whose XSAVE area is larger
 * than the 832 bytes the packaged UML kernel assumes (AVX-512, AMX, ...).
 *
 * UML saves and restores a guest process's FPU state with
 * PTRACE_GETREGSET/PTRACE_SETREGSET(NT_X86_XSTATE) and a fixed 832-byte
 * buffer.  The host kernel refuses a SETREGSET shorter than its full XSAVE
 * size (EFAULT, "ptrace set fp regs failed, errno = 14": UML panics at the
 * first guest process).  This shim makes both calls at full size: a short
 * GET reads the full state, keeps it per pid and returns the prefix; a short
 * SET overlays the caller's prefix on that pid's full state and writes it all.
 * The components beyond the prefix are therefore carried over unchanged,
 * which is why the guest's glibc is kept off AVX-512 (GLIBC_TUNABLES).
 *
 * osbench_xsave_size() returns the host's XSAVE size for enabled features
 * (CPUID 0xD, sub-leaf 0, EBX): the environment loads the shim only when it
 * exceeds 832.  OSBENCH_XSAVE_SHIM_FORCE=1 routes every XSTATE call through
 * the full-size path even when it is not needed (to test it on any host). */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#define UML_XSTATE_BYTES 832
#define MAX_XSTATE 65536
#define SLOTS 1024

typedef long (*ptrace_fn)(enum __ptrace_request, pid_t, void *, void *);

static struct { pid_t pid; size_t len; unsigned char *state; } cache[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Read once: CPUID traps to the hypervisor in a VM (tens of microseconds on these hosts), and UML
 * makes several ptrace calls per guest system call: asking on every call cost UML's getpid ~34 us. */
unsigned int osbench_xsave_size(void) {
    static unsigned int size, known;
    if (!__atomic_load_n(&known, __ATOMIC_ACQUIRE)) {
        unsigned int a, b = 0, c, d;
        if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d)) b = 0;
        size = b;
        __atomic_store_n(&known, 1, __ATOMIC_RELEASE);
    }
    return size;
}

static ptrace_fn real_ptrace(void) {
    static ptrace_fn fn;
    if (!fn) fn = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
    return fn;
}

/* Whether this host's kernel refuses UML's short (832-byte) PTRACE_SETREGSET(NT_X86_XSTATE):
 * 1 refused (the shim is needed), 0 accepted, -1 could not tell.  A stopped child is traced,
 * its state read at full size, then written back with the short length UML uses. */
int osbench_short_xstate_set_refused(void) {
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        real_ptrace()(PTRACE_TRACEME, 0, NULL, NULL);
        raise(SIGSTOP);
        _exit(0);
    }
    int status, verdict = -1;
    if (waitpid(child, &status, 0) == child && WIFSTOPPED(status)) {
        static unsigned char buf[MAX_XSTATE];
        struct iovec full = {buf, sizeof buf};
        if (real_ptrace()(PTRACE_GETREGSET, child, (void *)(long)NT_X86_XSTATE, &full) == 0) {
            struct iovec shortv = {buf, UML_XSTATE_BYTES < full.iov_len ? UML_XSTATE_BYTES : full.iov_len};
            long r = real_ptrace()(PTRACE_SETREGSET, child, (void *)(long)NT_X86_XSTATE, &shortv);
            verdict = r == 0 ? 0 : 1;
        }
    }
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    return verdict;
}

/* The slot for pid, claimed if new (an old pid's slot is reused: pids recycle). */
static int slot_of(pid_t pid) {
    int free_slot = -1;
    for (int i = 0; i < SLOTS; i++) {
        if (cache[i].pid == pid) return i;
        if (free_slot < 0 && cache[i].pid == 0) free_slot = i;
    }
    int s = free_slot >= 0 ? free_slot : (int)((unsigned)pid % SLOTS);
    cache[s].pid = pid;
    cache[s].len = 0;
    if (!cache[s].state) cache[s].state = malloc(MAX_XSTATE);
    return s;
}

/* Read pid's full XSAVE state into its slot; 0 or -1 with errno. */
static long fetch_full(pid_t pid, int s) {
    struct iovec full = {cache[s].state, MAX_XSTATE};
    long r = real_ptrace()(PTRACE_GETREGSET, pid, (void *)(long)NT_X86_XSTATE, &full);
    if (r == 0) cache[s].len = full.iov_len;
    return r;
}

long ptrace(enum __ptrace_request req, ...) {
    va_list ap;
    va_start(ap, req);
    pid_t pid = va_arg(ap, pid_t);
    void *addr = va_arg(ap, void *);
    void *data = va_arg(ap, void *);
    va_end(ap);

    int regset = (req == PTRACE_GETREGSET || req == PTRACE_SETREGSET) && (long)addr == NT_X86_XSTATE;
    struct iovec *iov = data;
    static int force = -1;
    if (force < 0) force = getenv("OSBENCH_XSAVE_SHIM_FORCE") != NULL;
    if (!regset || !iov || (!force && iov->iov_len >= osbench_xsave_size()))
        return real_ptrace()(req, pid, addr, data);

    pthread_mutex_lock(&lock);
    int s = slot_of(pid);
    long r;
    if (!cache[s].state) {
        errno = ENOMEM;
        r = -1;
    } else if (req == PTRACE_GETREGSET) {
        r = fetch_full(pid, s);
        if (r == 0) {
            size_t n = iov->iov_len < cache[s].len ? iov->iov_len : cache[s].len;
            memcpy(iov->iov_base, cache[s].state, n);
            iov->iov_len = n;
        }
    } else {
        r = cache[s].len ? 0 : fetch_full(pid, s);
        if (r == 0) {
            size_t n = iov->iov_len < cache[s].len ? iov->iov_len : cache[s].len;
            memcpy(cache[s].state, iov->iov_base, n);
            struct iovec full = {cache[s].state, cache[s].len};
            r = real_ptrace()(PTRACE_SETREGSET, pid, addr, &full);
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}
