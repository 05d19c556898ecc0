/* osbench's seL4 root task: times seL4 primitives in batches and reports each
 * batch on the serial line, in the lines the runner parses
 * (osbench_analysis/environments/qemu.py, parse_serial):
 *
 *   OSB hello kernel=sel4 fastpath=0|1 imageframes=N ...
 *   OSB job=K probe=NAME begin
 *   OSB job=K batch=I warmup=0|1 iterations=N elapsed=TICKS work=W
 *   OSB job=K error=CODE text          (the job stops; the next one runs)
 *   OSB job=K done
 *   OSB end
 *
 * Freestanding (no libc, no libsel4 runtime beyond its headers): the kernel
 * (seL4 5.0.0, x86_64 pc99, a release build) starts it as the initial thread.
 * The round's jobs are written by the host into osb_jobs, a buffer of this
 * ELF's data that starts with a marker (environments/sel4.py, with_jobs), one
 * line per job, "K:probe:min_ticks:warmup:batches:max_iterations:fixed"
 * (fixed > 0: that batch size, no calibration).  As the worker does,
 * calibration batches grow until one lasts min_ticks and are reported as
 * warm-ups.  The clock is the TSC, read around a whole batch only: under
 * QEMU -icount shift=0 it counts retired guest instructions, user and kernel.
 * Output goes to COM1 through the IOPort capability the root task is given,
 * so the release kernel (no debug printing) is the one measured.
 *
 * A fault of any of our threads goes to a monitor thread blocked on the fault
 * endpoint, which prints "OSB panic: ..." (the runner's panic pattern): the
 * boot ends at once and the job it interrupted fails with that line. */
#include <autoconf.h>
#include <sel4/sel4.h>

typedef unsigned long u64;
typedef unsigned int u32;
typedef long i64;
#define PAGE 4096UL

extern char __executable_start[];
extern void thread_entry(void);

/* The round's jobs: the host overwrites the bytes after the marker (with_jobs in sel4.py). */
#define JOBS_MARKER "@@OSB-SEL4-JOBS@@"
char osb_jobs[8192] __attribute__((aligned(64))) = JOBS_MARKER;

static seL4_BootInfo *bi;
static seL4_CPtr next_free;                /* the next empty slot of the root CNode */
static seL4_CPtr ut_main; static u64 ut_main_bits;

static inline u64 rdtsc(void)
{ u32 lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi) :: "memory"); return ((u64)hi << 32) | lo; }

/* ---------------------------------------------------------------- serial line */
static void putc_(char c) { seL4_X86_IOPort_Out8(seL4_CapIOPort, 0x3f8, (unsigned char)c); }
static void puts_(const char *s) { while (*s) putc_(*s++); }
static void putu(u64 v) { char b[24]; int i = 0; do { b[i++] = (char)('0' + v % 10); v /= 10; } while (v); while (i) putc_(b[--i]); }
static void putx(u64 v) { puts_("0x"); for (int i = 60; i >= 0; i -= 4) putc_("0123456789abcdef"[(v >> i) & 15]); }
static void putkv(const char *k, u64 v) { putc_(' '); puts_(k); putc_('='); putu(v); }
static int streq(const char *a, const char *b) { while (*a && *a == *b) a++, b++; return *a == *b; }
static u64 field(const char **s)
{ u64 v = 0; while (**s >= '0' && **s <= '9') v = v * 10 + (u64)(*(*s)++ - '0'); if (**s == ':') (*s)++; return v; }

/* ---------------------------------------------------------------- objects */
static long retype(seL4_CPtr ut, seL4_Word type, seL4_Word bits, seL4_CPtr slot)
{ return seL4_Untyped_Retype(ut, type, bits, seL4_CapInitThreadCNode, 0, 0, slot, 1); }
static long del(seL4_CPtr slot) { return seL4_CNode_Delete(seL4_CapInitThreadCNode, slot, seL4_WordBits); }
static long revoke(seL4_CPtr slot) { return seL4_CNode_Revoke(seL4_CapInitThreadCNode, slot, seL4_WordBits); }
/* a new object of `type` from untyped `ut` in the next free slot; 0 if the kernel refused */
static seL4_CPtr make(seL4_CPtr ut, seL4_Word type, seL4_Word bits)
{ seL4_CPtr s = next_free; if (retype(ut, type, bits, s)) return 0; next_free++; return s; }
/* the frame cap of a page of our own image */
static seL4_CPtr image_frame(const void *va)
{ return bi->userImageFrames.start + (((u64)va - ((u64)__executable_start & ~(PAGE - 1))) >> 12); }
static u64 image_frames(void) { return bi->userImageFrames.end - bi->userImageFrames.start; }

/* Untypeds of our own, made once from the largest one: each is retyped from while it has no other
 * child, so the kernel resets (clears) it and a loop that creates and deletes reuses the same memory. */
static seL4_CPtr ut_job;      /* 1 MiB: one job's set-up objects, revoked at its teardown */
static seL4_CPtr ut_obj;      /* 4 KiB: the frame or TCB a loop creates and deletes */
static seL4_CPtr ut_proc;     /* 1 MiB: the address space a loop creates and revokes */
static seL4_CPtr fault_ep;    /* every thread's fault handler: the monitor */

/* ---------------------------------------------------------------- threads */
static char ipcbuf_server[PAGE] __attribute__((aligned(4096)));
static char ipcbuf_child[PAGE] __attribute__((aligned(4096)));
static char ipcbuf_monitor[PAGE] __attribute__((aligned(4096)));
static char stack_server[16384] __attribute__((aligned(4096)));
static char stack_child[16384] __attribute__((aligned(4096)));
static char stack_monitor[8192] __attribute__((aligned(4096)));

static long start_thread(seL4_CPtr tcb, seL4_CPtr vspace, char *ipcbuf, char *stack, u64 stack_size,
                         void (*fn)(void), int prio)
{
	long e = seL4_TCB_Configure(tcb, fault_ep, seL4_PrioProps_new(seL4_MaxPrio, prio), seL4_CapInitThreadCNode,
	                            seL4_NilData, vspace, seL4_NilData, (seL4_Word)ipcbuf, image_frame(ipcbuf));
	if (e) return e;
	seL4_UserContext r;
	for (unsigned i = 0; i < sizeof r / sizeof(seL4_Word); i++) ((seL4_Word *)&r)[i] = 0;
	r.rip = (seL4_Word)thread_entry; r.rsp = (seL4_Word)(stack + stack_size - 64); r.r12 = (seL4_Word)fn;
	r.tls_base = (seL4_Word)ipcbuf; r.rflags = 0x202;
	return seL4_TCB_WriteRegisters(tcb, 1, 0, sizeof r / sizeof(seL4_Word), &r);
}

/* The monitor: waits on the fault endpoint; a fault message is the end of the boot. */
static void monitor(void)
{
	seL4_Word badge;
	seL4_MessageInfo_t info = seL4_Recv(fault_ep, &badge);
	puts_("OSB panic: fault of a root-task thread label="); putu(seL4_MessageInfo_get_label(info));
	puts_(" mr0="); putx(seL4_GetMR(0)); puts_(" mr1="); putx(seL4_GetMR(1)); putc_('\n');
	for (;;) seL4_Recv(fault_ep, &badge);
}

/* The server of the round trips: reply to each request with its first word plus one. */
static seL4_CPtr ep;
static void server(void)
{
	seL4_Word badge;
	seL4_Recv(ep, &badge);
	for (;;) {
		seL4_SetMR(0, seL4_GetMR(0) + 1);
		seL4_ReplyRecv(ep, seL4_MessageInfo_new(0, 0, 0, 1), &badge);
	}
}

/* A second address space: a PML4 with an ASID, the paging structures our image needs, and copies
 * of all our image's frame caps mapped at the same addresses (objects from `ut`; the copies' slots
 * from copies[0] on, returned in *ncopies). */
static long make_vspace(seL4_CPtr ut, seL4_CPtr *pml4_out, seL4_CPtr *copies, u64 *ncopies)
{
	long e;
	seL4_CPtr pml4 = make(ut, seL4_X64_PML4Object, 0);
	if (!pml4) return -1;
	if ((e = seL4_X86_ASIDPool_Assign(seL4_CapInitThreadASIDPool, pml4))) return e;
	u64 base = (u64)__executable_start & ~(PAGE - 1), n = image_frames();
	for (u64 va = base & ~((1UL << 21) - 1); va < base + n * PAGE; va += 1UL << 21) {
		seL4_CPtr pdpt = make(ut, seL4_X86_PDPTObject, 0), pd = make(ut, seL4_X86_PageDirectoryObject, 0);
		seL4_CPtr pt = make(ut, seL4_X86_PageTableObject, 0);
		if (!pdpt || !pd || !pt) return -1;
		e = seL4_X86_PDPT_Map(pdpt, pml4, va, seL4_X86_Default_VMAttributes);
		if (e && e != seL4_DeleteFirst) return e;
		e = seL4_X86_PageDirectory_Map(pd, pml4, va, seL4_X86_Default_VMAttributes);
		if (e && e != seL4_DeleteFirst) return e;
		if ((e = seL4_X86_PageTable_Map(pt, pml4, va, seL4_X86_Default_VMAttributes))) return e;
	}
	*copies = next_free;
	for (u64 i = 0; i < n; i++) {
		seL4_CPtr c = next_free++;
		if ((e = seL4_CNode_Copy(seL4_CapInitThreadCNode, c, seL4_WordBits, seL4_CapInitThreadCNode,
		                         bi->userImageFrames.start + i, seL4_WordBits, seL4_AllRights))) return e;
		if ((e = seL4_X86_Page_Map(c, pml4, base + i * PAGE, seL4_AllRights, seL4_X86_Default_VMAttributes)))
			return e;
	}
	*ncopies = n;
	*pml4_out = pml4;
	return 0;
}

/* ---------------------------------------------------------------- probes
 * setup/teardown outside the timed region; loop(n) returns the work it
 * proved (n when every operation succeeded). */
typedef struct { i64 (*loop)(i64 n); long (*setup)(void); const char *name; } probe_t;

static seL4_CPtr ntfn, frame, server_tcb, copies_start;
static u64 copies_n;
static seL4_Word mapped_va;

static long setup_ntfn(void) { ntfn = make(ut_job, seL4_NotificationObject, 0); return ntfn ? 0 : -1; }
/* the closest seL4 has to a null system call: a poll of an idle notification (returns at once) */
static i64 loop_poll(i64 n)
{ i64 w = 0; seL4_Word b; for (i64 i = 0; i < n; i++) { seL4_NBRecv(ntfn, &b); w += b == 0; } return w; }
static i64 loop_signal(i64 n)
{ for (i64 i = 0; i < n; i++) seL4_Signal(ntfn); return n; }
static i64 loop_yield(i64 n) { for (i64 i = 0; i < n; i++) seL4_Yield(); return n; }

static long setup_frame(void) { frame = make(ut_job, seL4_X86_4K, 0); return frame ? 0 : -1; }
/* a small kernel query: the physical address of a frame (an invocation of its capability) */
static i64 loop_getaddress(i64 n)
{ i64 w = 0; for (i64 i = 0; i < n; i++) w += seL4_X86_Page_GetAddress(frame).error == 0; return w; }

/* Call / ReplyRecv round trips with a server thread, in this address space or in another */
static long setup_server_thread(void)
{
	ep = make(ut_job, seL4_EndpointObject, 0);
	server_tcb = make(ut_job, seL4_TCBObject, 0);
	if (!ep || !server_tcb) return -1;
	return start_thread(server_tcb, seL4_CapInitThreadVSpace, ipcbuf_server, stack_server, sizeof stack_server,
	                    server, seL4_MaxPrio);
}
static long setup_server_space(void)
{
	seL4_CPtr pml4;
	long e = make_vspace(ut_job, &pml4, &copies_start, &copies_n);
	if (e) return e;
	ep = make(ut_job, seL4_EndpointObject, 0);
	server_tcb = make(ut_job, seL4_TCBObject, 0);
	if (!ep || !server_tcb) return -1;
	return start_thread(server_tcb, pml4, ipcbuf_server, stack_server, sizeof stack_server, server, seL4_MaxPrio);
}
static i64 loop_call(i64 n)
{
	i64 w = 0;
	for (i64 i = 0; i < n; i++) {
		seL4_SetMR(0, (seL4_Word)i);
		seL4_Call(ep, seL4_MessageInfo_new(0, 0, 0, 1));
		w += seL4_GetMR(0) == (seL4_Word)i + 1;
	}
	return w;
}
/* 8 message registers: more than the fastpath takes (4), the request goes the slow path */
static i64 loop_call8(i64 n)
{
	i64 w = 0;
	for (i64 i = 0; i < n; i++) {
		for (int k = 0; k < 8; k++) seL4_SetMR(k, (seL4_Word)i);
		seL4_Call(ep, seL4_MessageInfo_new(0, 0, 0, 8));
		w += seL4_GetMR(0) == (seL4_Word)i + 1;
	}
	return w;
}

/* map + touch + unmap of a page: a frame retyped from ut_obj (the kernel clears the frame the
 * previous iteration used as it resets ut_obj: the analog of a zero-filled page), mapped, written,
 * unmapped and deleted; the paging structures at mapped_va are made once, in the set-up */
static long setup_map(void)
{
	mapped_va = 0x40000000UL;
	seL4_CPtr pdpt = make(ut_job, seL4_X86_PDPTObject, 0), pd = make(ut_job, seL4_X86_PageDirectoryObject, 0);
	seL4_CPtr pt = make(ut_job, seL4_X86_PageTableObject, 0);
	if (!pdpt || !pd || !pt) return -1;
	long e = seL4_X86_PDPT_Map(pdpt, seL4_CapInitThreadVSpace, mapped_va, seL4_X86_Default_VMAttributes);
	if (e && e != seL4_DeleteFirst) return e;
	e = seL4_X86_PageDirectory_Map(pd, seL4_CapInitThreadVSpace, mapped_va, seL4_X86_Default_VMAttributes);
	if (e && e != seL4_DeleteFirst) return e;
	return seL4_X86_PageTable_Map(pt, seL4_CapInitThreadVSpace, mapped_va, seL4_X86_Default_VMAttributes);
}
static i64 loop_map(i64 n)
{
	i64 w = 0;
	seL4_CPtr s = next_free;
	for (i64 i = 0; i < n; i++) {
		if (retype(ut_obj, seL4_X86_4K, 0, s)) continue;
		if (seL4_X86_Page_Map(s, seL4_CapInitThreadVSpace, mapped_va, seL4_AllRights,
		                      seL4_X86_Default_VMAttributes) == 0) {
			*(volatile char *)mapped_va = 1;
			w += seL4_X86_Page_Unmap(s) == 0;
		}
		del(s);
	}
	return w;
}

/* the memory model's known answers (environments/memevents.py), over frames of ut_job mapped at mapped_va
 * in the set-up and every line written (1).  Page pass: 128 frames (512 KiB), one byte of each read per pass, frame p's
 * line p mod 64 (every L1 set): a 64-entry data TLB misses each page once a pass.  Line passes: one byte
 * of each 64 B line of 64 KiB (twice L1D: every line misses L1D a pass, hits L2, 16 pages hit the TLB)
 * or of 16 KiB (inside L1D: no misses) */
#define PASS_PAGES 128
static u64 pass_bytes;
static long setup_frames(u64 pages)
{
	long e = setup_map();
	if (e) return e;
	pass_bytes = pages * PAGE;
	for (u64 p = 0; p < pages; p++) {
		seL4_CPtr f = make(ut_job, seL4_X86_4K, 0);
		if (!f) return -1;
		if ((e = seL4_X86_Page_Map(f, seL4_CapInitThreadVSpace, mapped_va + p * PAGE, seL4_AllRights,
		                           seL4_X86_Default_VMAttributes))) return e;
		for (u64 off = 0; off < PAGE; off += 64) *(volatile char *)(mapped_va + p * PAGE + off) = 1;
	}
	return 0;
}
static long setup_pass(void) { return setup_frames(PASS_PAGES); }
static long setup_line_64k(void) { return setup_frames(16); }
static long setup_line_16k(void) { return setup_frames(4); }
static i64 loop_pass(i64 n)
{
	i64 sum = 0;
	for (i64 i = 0; i < n; i++)
		for (int p = 0; p < PASS_PAGES; p++) sum += *(volatile unsigned char *)(mapped_va + (u64)p * PAGE + (p % 64) * 64);
	return sum / PASS_PAGES;
}
static i64 loop_line(i64 n)
{
	i64 sum = 0;
	for (i64 i = 0; i < n; i++)
		for (u64 off = 0; off < pass_bytes; off += 64) sum += *(volatile unsigned char *)(mapped_va + off);
	return sum / (i64)(pass_bytes / 64);
}

/* thread create to first run: a TCB retyped from ut_obj, configured, its registers written and
 * resumed; it answers one Call (its first run), then it is deleted */
static long setup_ep(void) { ep = make(ut_job, seL4_EndpointObject, 0); return ep ? 0 : -1; }
static i64 loop_thread(i64 n)
{
	i64 w = 0;
	seL4_CPtr s = next_free;
	for (i64 i = 0; i < n; i++) {
		if (retype(ut_obj, seL4_TCBObject, 0, s)) continue;
		if (start_thread(s, seL4_CapInitThreadVSpace, ipcbuf_child, stack_child, sizeof stack_child, server,
		                 seL4_MaxPrio) == 0) {
			seL4_SetMR(0, (seL4_Word)i);
			seL4_Call(ep, seL4_MessageInfo_new(0, 0, 0, 1));
			w += seL4_GetMR(0) == (seL4_Word)i + 1;
		}
		del(s);
	}
	return w;
}

/* address space create + destroy (the process analog): a PML4 with an ASID and paging structures,
 * copies of all our image's frames mapped in it, a thread in it that answers one Call; then the
 * frame copies deleted and ut_proc revoked (every other object with it) */
static i64 loop_space(i64 n)
{
	i64 w = 0;
	seL4_CPtr start = next_free;
	for (i64 i = 0; i < n; i++) {
		seL4_CPtr pml4, copies;
		u64 nc = 0;
		next_free = start;
		if (make_vspace(ut_proc, &pml4, &copies, &nc) == 0) {
			seL4_CPtr tcb = make(ut_proc, seL4_TCBObject, 0);
			if (tcb && start_thread(tcb, pml4, ipcbuf_child, stack_child, sizeof stack_child, server,
			                        seL4_MaxPrio) == 0) {
				seL4_SetMR(0, (seL4_Word)i);
				seL4_Call(ep, seL4_MessageInfo_new(0, 0, 0, 1));
				w += seL4_GetMR(0) == (seL4_Word)i + 1;
			}
		}
		for (seL4_CPtr c = copies; nc && c < copies + nc; c++) del(c);
		revoke(ut_proc);
	}
	next_free = start;
	return w;
}

/* test only: a write to an unmapped page, which the monitor reports as a fault */
static i64 loop_fault(i64 n) { volatile char *volatile p = (volatile char *)0x10; *p = 1; return n; }

static const probe_t PROBES[] = {
	{loop_poll, setup_ntfn, "sel4_poll_ntfn"},
	{loop_signal, setup_ntfn, "sel4_signal_ntfn"},
	{loop_yield, 0, "sel4_yield"},
	{loop_getaddress, setup_frame, "sel4_page_getaddress"},
	{loop_call, setup_server_thread, "sel4_call_thread"},
	{loop_call, setup_server_space, "sel4_call_space"},
	{loop_call8, setup_server_space, "sel4_call_space_8mr"},
	{loop_map, setup_map, "sel4_frame_map_touch"},
	{loop_pass, setup_pass, "sel4_page_pass"},
	{loop_line, setup_line_64k, "sel4_line_pass_64k"},
	{loop_line, setup_line_16k, "sel4_line_pass_16k"},
	{loop_thread, setup_ep, "sel4_thread_create"},
	{loop_space, setup_ep, "sel4_space_create"},
	{loop_fault, 0, "sel4_test_fault"},
};

/* ---------------------------------------------------------------- batches */
static void job_head(u64 job) { puts_("OSB job="); putu(job); }

static void batch(u64 job, const probe_t *p, i64 n, int warm, int *index, u64 *elapsed)
{
	u64 t0 = rdtsc();
	i64 w = p->loop(n);
	u64 t1 = rdtsc();
	*elapsed = t1 - t0;
	job_head(job); putkv("batch", (u64)(*index)++); putkv("warmup", (u64)warm);
	putkv("iterations", (u64)n); putkv("elapsed", *elapsed); putkv("work", (u64)w); putc_('\n');
}

/* the worker's growth rule (worker.next_iterations): towards the target, at most 100x a step */
static i64 next_n(i64 n, u64 elapsed, u64 target, i64 cap)
{
	u64 e = elapsed ? elapsed : 1;
	i64 want = (i64)(((u64)n * 12 * target + 10 * e - 1) / (10 * e));
	i64 nx = want < n * 100 ? want : n * 100;
	if (nx > cap) nx = cap;
	if (nx < n + 1) nx = n + 1;
	return nx < cap ? nx : cap;
}

/* undo a job's set-up: its server stops with the revoke of ut_job (which deletes its TCB) */
static void teardown(seL4_CPtr first_slot)
{
	if (copies_n) for (seL4_CPtr c = copies_start; c < copies_start + copies_n; c++) del(c);
	copies_n = 0;
	revoke(ut_job);
	for (seL4_CPtr c = first_slot; c < next_free; c++) del(c);
	next_free = first_slot;
}

static const char *run_job(const char *s)
{
	u64 job = field(&s);
	char name[48]; int k = 0;
	while (*s && *s != ':' && k < 47) name[k++] = *s++;
	name[k] = 0;
	if (*s == ':') s++;
	u64 target = field(&s), warmup = field(&s), batches = field(&s);
	i64 cap = (i64)field(&s), fixed = (i64)field(&s);
	while (*s && *s != '\n') s++;
	if (*s == '\n') s++;
	if (cap < 1) cap = 1;
	const probe_t *p = 0;
	for (unsigned i = 0; i < sizeof PROBES / sizeof PROBES[0]; i++)
		if (streq(PROBES[i].name, name)) p = &PROBES[i];
	job_head(job); puts_(" probe="); puts_(name); puts_(" begin\n");
	if (!p) { job_head(job); puts_(" error=1 no such probe in the seL4 root task\n"); return s; }
	seL4_CPtr first = next_free;
	long e = p->setup ? p->setup() : 0;
	if (e) {
		job_head(job); putkv("error", (u64)(e < 0 ? 2 : e)); puts_(" set-up refused by the kernel\n");
		teardown(first);
		return s;
	}
	int index = 0; u64 elapsed = 0;
	i64 n = fixed;
	if (n <= 0) {
		n = 1;
		for (;;) {
			batch(job, p, n, 1, &index, &elapsed);
			if (elapsed >= target || n >= cap) break;
			n = next_n(n, elapsed, target, cap);
		}
	}
	for (u64 i = 0; i < warmup; i++) batch(job, p, n, 1, &index, &elapsed);
	for (u64 i = 0; i < batches; i++) batch(job, p, n, 0, &index, &elapsed);
	teardown(first);
	job_head(job); puts_(" done\n");
	return s;
}

static int boot_setup(void)
{
	next_free = bi->empty.start;
	for (seL4_CPtr c = bi->untyped.start; c < bi->untyped.end; c++) {
		seL4_UntypedDesc *d = &bi->untypedList[c - bi->untyped.start];
		if (!d->isDevice && d->sizeBits > ut_main_bits) { ut_main_bits = d->sizeBits; ut_main = c; }
	}
	ut_job = make(ut_main, seL4_UntypedObject, 20);
	ut_proc = make(ut_main, seL4_UntypedObject, 20);
	ut_obj = make(ut_main, seL4_UntypedObject, 12);
	fault_ep = make(ut_main, seL4_EndpointObject, 0);
	seL4_CPtr mon = make(ut_main, seL4_TCBObject, 0);
	if (!ut_job || !ut_proc || !ut_obj || !fault_ep || !mon) return 1;
	/* the initial thread's own faults go to the monitor too */
	if (seL4_TCB_SetSpace(seL4_CapInitThreadTCB, fault_ep, seL4_CapInitThreadCNode, seL4_NilData,
	                      seL4_CapInitThreadVSpace, seL4_NilData)) return 2;
	return start_thread(mon, seL4_CapInitThreadVSpace, ipcbuf_monitor, stack_monitor, sizeof stack_monitor,
	                    monitor, seL4_MaxPrio - 1) ? 3 : 0;
}

void osb_sel4_main(seL4_BootInfo *boot_info)
{
	bi = boot_info;
	int err = boot_setup();
	puts_("OSB hello kernel=sel4");
#ifdef CONFIG_FASTPATH
	putkv("fastpath", 1);
#else
	putkv("fastpath", 0);
#endif
#ifdef CONFIG_DEBUG_BUILD
	puts_(" build=debug");
#else
	puts_(" build=release");
#endif
	putkv("imageframes", image_frames()); putkv("untyped_bits", ut_main_bits); putkv("tsc_mhz", bi->archInfo);
	putc_('\n');
	if (err) { puts_("OSB panic: root task set-up failed at step "); putu((u64)err); putc_('\n'); }
	else {
		const volatile char *jobs = osb_jobs + sizeof JOBS_MARKER;
		const char *s = (const char *)jobs;
		while (*s) s = run_job(s);
	}
	puts_("OSB end\n");
	for (;;) seL4_TCB_Suspend(seL4_CapInitThreadTCB);
}
