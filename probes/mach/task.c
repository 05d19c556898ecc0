/* osbench's GNU Mach bootstrap task: times Mach primitives in batches and
 * reports each batch on the kernel console, in the lines the runner parses
 * (osbench_analysis/environments/qemu.py, parse_serial):
 *
 *   OSB hello kernel=mach
 *   OSB job=K probe=NAME begin
 *   OSB job=K batch=I warmup=0|1 iterations=N elapsed=TICKS work=W
 *   OSB job=K error=CODE text          (the job stops; the next one runs)
 *   OSB job=K done
 *   OSB end
 *
 * Freestanding (no libc, no Hurd): GRUB's boot script starts it as
 *   bench HOST_PORT DEVICE_PORT JOB...
 * one JOB word per job, "K:probe:min_ticks:warmup:batches:max_iterations:fixed"
 * (fixed > 0: that batch size, no calibration).  As the worker does
 * (worker.py), calibration batches grow until one lasts min_ticks and are
 * reported as warm-ups.  The clock is the TSC, read around a whole batch
 * only: under QEMU -icount shift=0 it counts retired guest instructions,
 * user and kernel.  Output goes through device_open("console") +
 * device_write_inband (MIG stubs generated at build time): the non-debug
 * kernel has no mach_print. */
#include <stdint.h>
#include <mach/message.h>
#include <mach/port.h>
#include <mach/kern_return.h>
#include <mach/x86_64/thread_status.h>
#include "device.h"
#include "mach.h"
#include "mach_port.h"

extern mach_port_t mach_reply_port(void);
extern mach_port_t mach_task_self(void);
extern mach_port_t null_port_trap(void);
extern void swtch_pri(int);
extern mach_msg_return_t mach_msg_trap(mach_msg_header_t *, mach_msg_option_t, mach_msg_size_t,
                                       mach_msg_size_t, mach_port_name_t, mach_msg_timeout_t, mach_port_name_t);

/* ---------------------------------------------------------------- libc bits */
void *memcpy(void *d, const void *s, unsigned long n)
{ char *dd = d; const char *ss = s; while (n--) *dd++ = *ss++; return d; }
void *memset(void *d, int c, unsigned long n)
{ char *dd = d; while (n--) *dd++ = (char)c; return d; }
void mig_strncpy(char *d, const char *s, int n)
{ int i = 0; for (; i < n - 1 && s[i]; i++) d[i] = s[i]; for (; i < n; i++) d[i] = 0; }

/* MIG runtime: only the main thread makes MIG calls (servers and joiners use raw traps). */
static mach_port_t reply_port_cache;
mach_port_t mig_get_reply_port(void)
{ if (!reply_port_cache) reply_port_cache = mach_reply_port(); return reply_port_cache; }
void mig_dealloc_reply_port(mach_port_t p) { (void)p; reply_port_cache = 0; }
void mig_put_reply_port(mach_port_t p) { (void)p; }

static inline uint64_t rdtsc(void)
{ uint32_t lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi) :: "memory"); return ((uint64_t)hi << 32) | lo; }

/* ---------------------------------------------------------------- console */
static mach_port_t console = MACH_PORT_NULL;
static char obuf[512]; static int olen;
static void flush(void)
{
	int off = 0;
	while (off < olen && console != MACH_PORT_NULL) {
		int n = olen - off, written = 0;
		if (n > 128) n = 128;
		if (device_write_inband(console, 0, 0, obuf + off, n, &written) != KERN_SUCCESS || written <= 0)
			break;
		off += written;
	}
	olen = 0;
}
static void putc_(char c) { if (olen >= (int)sizeof obuf) flush(); obuf[olen++] = c; if (c == '\n') flush(); }
static void puts_(const char *s) { while (*s) putc_(*s++); }
static void putu(uint64_t v) { char b[24]; int i = 0; do { b[i++] = '0' + v % 10; v /= 10; } while (v); while (i) putc_(b[--i]); }
static void putkv(const char *k, uint64_t v) { putc_(' '); puts_(k); putc_('='); putu(v); }
static int streq(const char *a, const char *b) { while (*a && *a == *b) a++, b++; return *a == *b; }
/* parses a decimal field ending at ':' or NUL; *s moves past it */
static uint64_t field(const char **s)
{ uint64_t v = 0; while (**s >= '0' && **s <= '9') v = v * 10 + (uint64_t)(*(*s)++ - '0'); if (**s == ':') (*s)++; return v; }

/* ---------------------------------------------------------------- helpers */
typedef struct { mach_msg_header_t h; mach_msg_type_t t; uint64_t v; } small_msg_t;

static mach_port_t task;                /* mach_task_self(), once */
static volatile mach_port_t srv_port;   /* the RPC server's service port (same name in a child task) */
static volatile mach_port_t join_port;  /* joiners send here once they run */

/* The classic Mach server loop: receive a request, reply on the send-once
   right it carried, and wait for the next request in the same mach_msg. */
static void rpc_server(void)
{
	small_msg_t m;
	mach_msg_return_t r = mach_msg_trap(&m.h, MACH_RCV_MSG, 0, sizeof m, srv_port, 0, MACH_PORT_NULL);
	for (;;) {
		if (r != MACH_MSG_SUCCESS)
			for (;;) swtch_pri(0);
		m.h.msgh_bits = MACH_MSGH_BITS(MACH_MSGH_BITS_REMOTE(m.h.msgh_bits), 0);
		m.h.msgh_local_port = MACH_PORT_NULL;   /* msgh_remote_port: the reply send-once right */
		r = mach_msg_trap(&m.h, MACH_SEND_MSG | MACH_RCV_MSG, m.h.msgh_size, sizeof m, srv_port, 0,
		                  MACH_PORT_NULL);
	}
}

/* A created thread's whole life: say it ran (a join message), then yield until terminated. */
static void joiner(void)
{
	mach_msg_header_t h;
	h.msgh_bits = MACH_MSGH_BITS(MACH_MSG_TYPE_COPY_SEND, 0);
	h.msgh_size = sizeof h;
	h.msgh_remote_port = join_port;
	h.msgh_local_port = MACH_PORT_NULL;
	h.msgh_id = 7;
	mach_msg_trap(&h, MACH_SEND_MSG, sizeof h, 0, MACH_PORT_NULL, 0, MACH_PORT_NULL);
	for (;;) swtch_pri(0);
}

#define STACK_WORDS 8192
static uint64_t stack_server[STACK_WORDS] __attribute__((aligned(16)));
static uint64_t stack_joiner[STACK_WORDS] __attribute__((aligned(16)));

static kern_return_t start_thread(mach_port_t in_task, void (*fn)(void), uint64_t *stk, mach_port_t *th)
{
	kern_return_t kr = thread_create(in_task, th);
	if (kr) return kr;
	struct i386_thread_state st;
	memset(&st, 0, sizeof st);
	st.rip = (uint64_t)fn;
	st.ursp = (uint64_t)&stk[STACK_WORDS - 2] - 8;   /* as just after a call */
	st.rfl = 0x202;
	kr = thread_set_state(*th, i386_THREAD_STATE, (thread_state_t)&st, i386_THREAD_STATE_COUNT);
	return kr ? kr : thread_resume(*th);
}

static kern_return_t service_port(mach_port_t *p)
{
	kern_return_t kr = mach_port_allocate(task, MACH_PORT_RIGHT_RECEIVE, p);
	return kr ? kr : mach_port_insert_right(task, *p, *p, MACH_MSG_TYPE_MAKE_SEND);
}

static int receive_join(void)
{
	mach_msg_header_t h;
	return mach_msg_trap(&h, MACH_RCV_MSG, 0, sizeof h, join_port, 0, MACH_PORT_NULL) == MACH_MSG_SUCCESS;
}

/* ---------------------------------------------------------------- probes
 * setup/teardown outside the timed region; loop(n) returns the work it
 * proved (n when every operation succeeded). */
typedef struct { int64_t (*loop)(int64_t n); kern_return_t (*setup)(void); void (*teardown)(void); const char *name; } probe_t;

static int64_t loop_null_trap(int64_t n)
{ int64_t w = 0; for (int64_t i = 0; i < n; i++) w += null_port_trap() == MACH_PORT_NULL; return w; }

/* each call adds a user reference to the task port's name; past the kernel's
   maximum the call still returns the name (a campaign's job makes over 100,000
   calls, and work_done counts every non-null name), so a long batch stays valid */
static int64_t loop_task_self(int64_t n)
{ int64_t w = 0; for (int64_t i = 0; i < n; i++) w += mach_task_self() != MACH_PORT_NULL; return w; }

static mach_port_t self_port;
static kern_return_t setup_self(void) { self_port = mach_reply_port(); return self_port ? KERN_SUCCESS : KERN_FAILURE; }
static void teardown_self(void) { mach_port_destroy(task, self_port); }
static int64_t loop_msg_self(int64_t n)
{
	small_msg_t m; int64_t w = 0;
	for (int64_t i = 0; i < n; i++) {
		m.h.msgh_bits = MACH_MSGH_BITS(MACH_MSG_TYPE_MAKE_SEND_ONCE, 0);
		m.h.msgh_size = sizeof(mach_msg_header_t);
		m.h.msgh_remote_port = self_port; m.h.msgh_local_port = MACH_PORT_NULL; m.h.msgh_id = 1;
		w += mach_msg_trap(&m.h, MACH_SEND_MSG | MACH_RCV_MSG, sizeof(mach_msg_header_t), sizeof m, self_port, 0,
		                   MACH_PORT_NULL) == MACH_MSG_SUCCESS;
	}
	return w;
}

/* RPC: client mach_msg(SEND|RCV) with a make-send-once reply right, 48 B typed message */
static small_msg_t cm;
static mach_port_t cli_reply, server_thread, server_task;
static int64_t loop_rpc(int64_t n)
{
	int64_t w = 0;
	for (int64_t i = 0; i < n; i++) {
		cm.h.msgh_bits = MACH_MSGH_BITS(MACH_MSG_TYPE_COPY_SEND, MACH_MSG_TYPE_MAKE_SEND_ONCE);
		cm.h.msgh_size = sizeof cm;
		cm.h.msgh_remote_port = srv_port;
		cm.h.msgh_local_port = cli_reply;
		cm.h.msgh_id = 4242;
		cm.t.msgt_name = MACH_MSG_TYPE_INTEGER_64; cm.t.msgt_size = 64; cm.t.msgt_number = 1;
		cm.t.msgt_inline = 1; cm.t.msgt_longform = 0; cm.t.msgt_deallocate = 0; cm.t.msgt_unused = 0;
		cm.v = (uint64_t)i;
		w += mach_msg_trap(&cm.h, MACH_SEND_MSG | MACH_RCV_MSG, sizeof cm, sizeof cm, cli_reply, 0,
		                   MACH_PORT_NULL) == MACH_MSG_SUCCESS;
	}
	return w;
}
static kern_return_t setup_rpc_thread(void)
{
	mach_port_t p = 0;
	if (!cli_reply) cli_reply = mach_reply_port();
	kern_return_t kr = service_port(&p);
	srv_port = p;
	return kr ? kr : start_thread(task, rpc_server, stack_server, &server_thread);
}
static void teardown_rpc_thread(void) { thread_terminate(server_thread); mach_port_destroy(task, srv_port); }
/* the server in a second task: a copy of this one (inherit memory), given the
   service port's receive right under the same name */
static kern_return_t setup_rpc_task(void)
{
	mach_port_t p = 0;
	if (!cli_reply) cli_reply = mach_reply_port();
	kern_return_t kr = service_port(&p);
	srv_port = p;
	if (!kr) kr = task_create(task, 1, &server_task);
	if (!kr) kr = mach_port_insert_right(server_task, p, p, MACH_MSG_TYPE_MOVE_RECEIVE);
	return kr ? kr : start_thread(server_task, rpc_server, stack_server, &server_thread);
}
static void teardown_rpc_task(void) { task_terminate(server_task); mach_port_destroy(task, srv_port); }

static int64_t loop_vm(int64_t n)
{
	int64_t w = 0;
	for (int64_t i = 0; i < n; i++) {
		vm_address_t a = 0;
		if (vm_allocate(task, &a, 4096, 1) != KERN_SUCCESS) continue;
		*(volatile char *)a = 1;   /* the first touch: a zero-fill page fault */
		w += vm_deallocate(task, a, 4096) == KERN_SUCCESS;
	}
	return w;
}

static int64_t loop_port(int64_t n)
{
	int64_t w = 0;
	for (int64_t i = 0; i < n; i++) {
		mach_port_t p = 0;
		if (mach_port_allocate(task, MACH_PORT_RIGHT_RECEIVE, &p) != KERN_SUCCESS) continue;
		w += mach_port_destroy(task, p) == KERN_SUCCESS;
	}
	return w;
}

/* the memory model's known answers (environments/memevents.py), over a buffer vm_allocate'd and written
 * line by line in set-up.  Page pass: 1 MiB (256 pages), one byte of each page read per pass, page p's
 * line p mod 64 (every L1 set): a 64-entry data TLB misses each page once a pass, the lines stay in L1D.
 * Line passes: one byte of each 64 B line of 64 KiB (twice L1D: every line misses L1D a pass, hits L2,
 * 16 pages hit the TLB) or of 16 KiB (inside L1D: no misses) */
#define PASS_PAGES 256
static volatile unsigned char *pass_buf;
static unsigned long pass_bytes;
static kern_return_t setup_buf(unsigned long bytes)
{
	vm_address_t a = 0;
	kern_return_t kr = vm_allocate(task, &a, bytes, 1);
	if (kr) return kr;
	pass_buf = (volatile unsigned char *)a;
	pass_bytes = bytes;
	for (unsigned long off = 0; off < bytes; off += 64) pass_buf[off] = 1;
	return KERN_SUCCESS;
}
static kern_return_t setup_pass(void) { return setup_buf(PASS_PAGES * 4096); }
static kern_return_t setup_line_64k(void) { return setup_buf(64 << 10); }
static kern_return_t setup_line_16k(void) { return setup_buf(16 << 10); }
static void teardown_pass(void) { vm_deallocate(task, (vm_address_t)pass_buf, pass_bytes); }
static int64_t loop_pass(int64_t n)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		for (int p = 0; p < PASS_PAGES; p++) sum += pass_buf[p * 4096 + (p % 64) * 64];
	return sum / PASS_PAGES;
}
static int64_t loop_line(int64_t n)
{
	int64_t sum = 0;
	for (int64_t i = 0; i < n; i++)
		for (unsigned long off = 0; off < pass_bytes; off += 64) sum += pass_buf[off];
	return sum / (int64_t)(pass_bytes / 64);
}

static kern_return_t setup_join(void) { mach_port_t p = 0; kern_return_t kr = service_port(&p); join_port = p; return kr; }
static void teardown_join(void) { mach_port_destroy(task, join_port); }
/* thread_create + set_state + resume, the thread's join message received, thread_terminate */
static int64_t loop_thread(int64_t n)
{
	int64_t w = 0;
	for (int64_t i = 0; i < n; i++) {
		mach_port_t th = 0;
		if (start_thread(task, joiner, stack_joiner, &th) != KERN_SUCCESS) continue;
		w += receive_join();
		thread_terminate(th);
		mach_port_deallocate(task, th);
	}
	return w;
}
/* task_create (inheriting a copy-on-write copy of this task) + a send right to
   the join port + a thread started in it, its join message received, task_terminate */
static int64_t loop_task(int64_t n)
{
	int64_t w = 0;
	for (int64_t i = 0; i < n; i++) {
		mach_port_t child = 0, th = 0;
		if (task_create(task, 1, &child) != KERN_SUCCESS) continue;
		if (mach_port_insert_right(child, join_port, join_port, MACH_MSG_TYPE_MAKE_SEND) == KERN_SUCCESS
		    && start_thread(child, joiner, stack_joiner, &th) == KERN_SUCCESS)
			w += receive_join();
		task_terminate(child);
		if (th) mach_port_deallocate(task, th);
		mach_port_deallocate(task, child);
	}
	return w;
}

static const probe_t PROBES[] = {
	{loop_null_trap, 0, 0, "mach_null_trap"},
	{loop_task_self, 0, 0, "mach_task_self"},
	{loop_msg_self, setup_self, teardown_self, "mach_msg_self"},
	{loop_rpc, setup_rpc_thread, teardown_rpc_thread, "mach_rpc_thread"},
	{loop_rpc, setup_rpc_task, teardown_rpc_task, "mach_rpc_task"},
	{loop_vm, 0, 0, "mach_vm_touch"},
	{loop_port, 0, 0, "mach_port_alloc"},
	{loop_thread, setup_join, teardown_join, "mach_thread_create"},
	{loop_task, setup_join, teardown_join, "mach_task_create"},
	{loop_pass, setup_pass, teardown_pass, "mach_page_pass"},
	{loop_line, setup_line_64k, teardown_pass, "mach_line_pass_64k"},
	{loop_line, setup_line_16k, teardown_pass, "mach_line_pass_16k"},
};

/* ---------------------------------------------------------------- batches */
static void job_head(uint64_t job) { puts_("OSB job="); putu(job); }

static void batch(uint64_t job, const probe_t *p, int64_t n, int warm, int *index, uint64_t *elapsed)
{
	uint64_t t0 = rdtsc();
	int64_t w = p->loop(n);
	uint64_t t1 = rdtsc();
	*elapsed = t1 - t0;
	job_head(job); putkv("batch", (uint64_t)(*index)++); putkv("warmup", (uint64_t)warm);
	putkv("iterations", (uint64_t)n); putkv("elapsed", *elapsed); putkv("work", (uint64_t)w); putc_('\n');
}

/* the worker's growth rule (worker.next_iterations): towards the target, at most 100x a step */
static int64_t next_n(int64_t n, uint64_t elapsed, uint64_t target, int64_t cap)
{
	uint64_t e = elapsed ? elapsed : 1;
	int64_t want = (int64_t)(((uint64_t)n * 12 * target + 10 * e - 1) / (10 * e));
	int64_t nx = want < n * 100 ? want : n * 100;
	if (nx > cap) nx = cap;
	if (nx < n + 1) nx = n + 1;
	return nx < cap ? nx : cap;
}

static void run_job(const char *spec)
{
	const char *s = spec;
	uint64_t job = field(&s);
	char name[48]; int k = 0;
	while (*s && *s != ':' && k < 47) name[k++] = *s++;
	name[k] = 0;
	if (*s == ':') s++;
	uint64_t target = field(&s), warmup = field(&s), batches = field(&s);
	int64_t cap = (int64_t)field(&s), fixed = (int64_t)field(&s);
	if (cap < 1) cap = 1;
	const probe_t *p = 0;
	for (unsigned i = 0; i < sizeof PROBES / sizeof PROBES[0]; i++)
		if (streq(PROBES[i].name, name)) p = &PROBES[i];
	job_head(job); puts_(" probe="); puts_(name); puts_(" begin\n");
	if (!p) { job_head(job); puts_(" error=1 no such probe in the Mach task\n"); return; }
	kern_return_t kr = p->setup ? p->setup() : KERN_SUCCESS;
	if (kr) { job_head(job); putkv("error", (uint64_t)kr); puts_(" setup failed\n"); return; }
	int index = 0; uint64_t elapsed = 0;
	int64_t n = fixed;
	if (n <= 0) {
		n = 1;
		for (;;) {
			batch(job, p, n, 1, &index, &elapsed);
			if (elapsed >= target || n >= cap) break;
			n = next_n(n, elapsed, target, cap);
		}
	}
	for (uint64_t i = 0; i < warmup; i++) batch(job, p, n, 1, &index, &elapsed);
	for (uint64_t i = 0; i < batches; i++) batch(job, p, n, 0, &index, &elapsed);
	if (p->teardown) p->teardown();
	job_head(job); puts_(" done\n");
}

void osb_mach_main(uint64_t *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)&sp[1];
	/* boot-script argv: { "bench", ${host-port}, ${device-port}, JOB... } */
	mach_port_t devmaster = 0;
	if (argc > 2) { const char *d = argv[2]; devmaster = (mach_port_t)field(&d); }
	if (device_open(devmaster, D_READ | D_WRITE, "console", &console) != KERN_SUCCESS)
		console = MACH_PORT_NULL;
	task = mach_task_self();
	puts_("OSB hello kernel=mach"); putkv("jobs", (uint64_t)(argc > 3 ? argc - 3 : 0)); putc_('\n');
	for (int i = 3; i < argc; i++)
		run_job(argv[i]);
	puts_("OSB end\n");
	/* park: a receive nobody can satisfy (the host kills QEMU on "OSB end") */
	mach_port_t dead = mach_reply_port();
	for (;;) { mach_msg_header_t h; mach_msg_trap(&h, MACH_RCV_MSG, 0, sizeof h, dead, 0, MACH_PORT_NULL); }
}
