/* osb_memsim: osbench's memory-system model, a QEMU TCG plugin (API version 1, QEMU 7.2) loaded into
 * the guests' QEMU when a campaign asks for memory events (environments/memevents.py).
 *
 * It sees every guest instruction and every data access (with its physical address) and runs them
 * through a stated model: L1I and L1D 32 KiB 8-way, a unified 1 MiB 16-way L2 behind both, 64 B lines,
 * LRU, no prefetcher, no write-back traffic; an instruction TLB (64 entries, 8-way) and a data TLB
 * (64 entries, 4-way) of 4 KiB pages behind a shared second-level TLB (1536 entries, 12-way), every
 * non-global entry dropped on a write to CR3 (qemu64 has no PCID) and every entry on a write to CR4
 * (Linux toggles CR4.PGE to drop global ones).  Which pages are global is an argument (global=): the
 * kernel half of the address space (upper), only the kernel image (image: Linux under PTI without
 * PCID keeps its image global), or none.  No timing: it counts events, never cycles.
 *
 * It counts, per batch of the guest's harness (a window), instructions, loads, stores, the misses of
 * each structure, the distinct lines and physical pages touched, CR3 writes, kernel entries (an
 * instruction of the kernel half right after one of the user half: system calls, faults and
 * interrupts alike), system-call instructions executed in the user half (syscall, sysenter, int n),
 * hypercalls (vmcall, vmmcall, and syscall from the kernel half: a 64-bit Xen PV kernel's hypercall),
 * entries into Xen's own range and WRMSRs.  A window opens and closes at (boundary=):
 *   marker  the harness's marker instructions (probes/harness.c OSB_MARK_*: two no-op encodings no
 *           compiler emits, right around the probe's loop) -- the Linux guest, whose kernel and vDSO
 *           read the TSC far more often than the harness;
 *   rdtsc   every RDTSC/RDTSCP of the task's code (text=LO-HI, from its ELF), in pairs -- the Mach and
 *           seL4 tasks, whose batch() is their only clock read (GRUB's own RDTSCs lie outside).
 * pollute=1 empties every cache and TLB at each window's start: what a partner touching a buffer
 * larger than L2 (and than the second-level TLB's reach) between operations leaves behind.
 *
 * The model is off until the task's first instruction (rdtsc) or the harness's first marker (marker),
 * until then only the boundaries are instrumented, so the boot runs at plain TCG speed; then the
 * translation cache is flushed and every instruction instrumented (the first window, a calibration
 * batch, is then not modelled whole: modelled=0).  One line per window is appended to out= (flushed at once: the
 * host may stop QEMU as soon as the guest says it is done):
 *   W insns=... loads=... ...
 * after a first line "M key=value ..." stating the model; a window the model did not see whole says
 * modelled=0.  (In rdtsc mode a window closes before its RDTSC's own instruction is counted.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_v1.h"

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* ------------------------------------------------------------------ the structures */

typedef struct {
    const char *name;
    unsigned sets, ways;
    uint64_t *tag;      /* key + 1, 0: empty */
    uint64_t *stamp;    /* last use, for LRU */
    uint8_t *global;    /* TLBs: kept by a CR3 write */
    uint64_t clock;
} assoc_t;

static void assoc_init(assoc_t *a, const char *name, unsigned entries, unsigned ways)
{
    a->name = name;
    a->ways = ways;
    a->sets = entries / ways;
    a->tag = calloc((size_t)entries, sizeof *a->tag);
    a->stamp = calloc((size_t)entries, sizeof *a->stamp);
    a->global = calloc((size_t)entries, 1);
    a->clock = 0;
}

/* 1: hit; 0: miss (the key is then filled into the set's least recently used way) */
static int assoc_touch(assoc_t *a, uint64_t key, int global)
{
    uint64_t *tag = a->tag + (size_t)(key % a->sets) * a->ways;
    uint64_t *stamp = a->stamp + (tag - a->tag);
    unsigned victim = 0;
    a->clock++;
    for (unsigned w = 0; w < a->ways; w++) {
        if (tag[w] == key + 1) {
            stamp[w] = a->clock;
            return 1;
        }
        if (stamp[w] < stamp[victim])
            victim = w;
    }
    tag[victim] = key + 1;
    stamp[victim] = a->clock;
    a->global[(tag - a->tag) + victim] = (uint8_t)global;
    return 0;
}

static void assoc_flush(assoc_t *a, int keep_global)
{
    for (size_t i = 0; i < (size_t)a->sets * a->ways; i++)
        if (!(keep_global && a->global[i])) {
            a->tag[i] = 0;
            a->stamp[i] = 0;
        }
}

/* the distinct keys of one window: open addressing, emptied by a new generation */
#define SET_BITS 20
typedef struct {
    uint64_t key[1u << SET_BITS];
    uint32_t gen[1u << SET_BITS];
    uint32_t now;
    uint64_t n, full;
} keyset_t;

static void keyset_add(keyset_t *s, uint64_t key)
{
    uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> (64 - SET_BITS);
    for (unsigned probe = 0; probe < 64; probe++) {
        size_t i = (h + probe) & ((1u << SET_BITS) - 1);
        if (s->gen[i] != s->now) {
            s->gen[i] = s->now;
            s->key[i] = key;
            s->n++;
            return;
        }
        if (s->key[i] == key)
            return;
    }
    s->full++;   /* a window touching more than the set holds: reported (touch_overflow) */
}

/* ------------------------------------------------------------------ counters */

#define COUNTERS(X) X(insns) X(loads) X(stores) X(l1i_misses) X(l1d_misses) X(l2_misses) X(itlb_misses) \
    X(dtlb_misses) X(stlb_misses) X(cr3_writes) X(kernel_entries) X(syscalls) X(hypercalls) \
    X(hypervisor_entries) X(wrmsrs)
typedef struct {
#define FIELD(n) uint64_t n;
    COUNTERS(FIELD)
#undef FIELD
} counters_t;

static counters_t c, at_open;
static assoc_t l1i, l1d, l2, itlb, dtlb, stlb;
static keyset_t *lines, *pages;
static FILE *out;
static qemu_plugin_id_t self;
static int boundary_rdtsc, pollute, lazy = 1, modelling, in_window, rdtsc_half, window_modelled;
static enum { GLOBAL_UPPER, GLOBAL_IMAGE, GLOBAL_NONE } global_mode = GLOBAL_UPPER;
static uint64_t windows, last_iline = ~0ull, last_ipage = ~0ull;
static int prev_upper, prev_xen;

#define UPPER(va) ((va) >= 0x0000800000000000ull)
/* Xen's own part of the kernel half on x86-64 (below Linux's direct map at 0xffff888000000000) */
#define XEN_RANGE(va) ((va) >= 0xffff800000000000ull && (va) < 0xffff880000000000ull)
#define KERNEL_IMAGE(va) ((va) >= 0xffffffff80000000ull)
#define CODE_LINE (1ull << 62)   /* instruction lines are tagged by host address: never equal to a data line */

static int is_global(uint64_t va)
{
    return global_mode == GLOBAL_UPPER ? UPPER(va) : global_mode == GLOBAL_IMAGE ? KERNEL_IMAGE(va) : 0;
}

static void l2_touch(uint64_t line)
{
    if (!assoc_touch(&l2, line, 0))
        c.l2_misses++;
}

static void tlb_flush(int keep_global)
{
    assoc_flush(&itlb, keep_global);
    assoc_flush(&dtlb, keep_global);
    assoc_flush(&stlb, keep_global);
    last_ipage = last_iline = ~0ull;
}

/* ------------------------------------------------------------------ callbacks */

enum { F_SYSCALL = 1, F_HYPERCALL = 2, F_CR3 = 4, F_CR4 = 8, F_WRMSR = 16 };

typedef struct {
    uint64_t vaddr, hline;
    unsigned flags;
} insn_t;

static void on_insn(unsigned int vcpu, void *ud)
{
    const insn_t *in = ud;
    int upper = UPPER(in->vaddr), xen = XEN_RANGE(in->vaddr);
    c.insns++;
    if (upper && !prev_upper)
        c.kernel_entries++;
    if (xen && !prev_xen)
        c.hypervisor_entries++;
    prev_upper = upper;
    prev_xen = xen;
    uint64_t page = in->vaddr >> 12;
    if (page != last_ipage) {    /* the same page as the last fetch is the TLB's most recent: a hit */
        last_ipage = page;
        if (!assoc_touch(&itlb, page, is_global(in->vaddr))) {
            c.itlb_misses++;
            if (!assoc_touch(&stlb, page, is_global(in->vaddr)))
                c.stlb_misses++;
        }
    }
    if (in->hline != last_iline) {
        last_iline = in->hline;
        if (in_window) {
            keyset_add(lines, in->hline);
            keyset_add(pages, in->hline >> 6);
        }
        if (!assoc_touch(&l1i, in->hline, 0)) {
            c.l1i_misses++;
            l2_touch(in->hline);
        }
    }
    if (in->flags) {
        if (in->flags & F_SYSCALL) {
            if (upper)
                c.hypercalls++;
            else
                c.syscalls++;
        }
        if (in->flags & F_HYPERCALL)
            c.hypercalls++;
        if (in->flags & F_WRMSR)
            c.wrmsrs++;
        if (in->flags & F_CR3) {
            c.cr3_writes++;
            tlb_flush(1);
        }
        if (in->flags & F_CR4)
            tlb_flush(0);
    }
}

static void data_line(uint64_t line)
{
    if (in_window) {
        keyset_add(lines, line);
        keyset_add(pages, line >> 6);
    }
    if (!assoc_touch(&l1d, line, 0)) {
        c.l1d_misses++;
        l2_touch(line);
    }
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *ud)
{
    struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
    if (hw && qemu_plugin_hwaddr_is_io(hw))
        return;   /* a device register, not memory */
    uint64_t pa = hw ? qemu_plugin_hwaddr_phys_addr(hw) : vaddr;
    if (qemu_plugin_mem_is_store(info))
        c.stores++;
    else
        c.loads++;
    if (!assoc_touch(&dtlb, vaddr >> 12, is_global(vaddr))) {
        c.dtlb_misses++;
        if (!assoc_touch(&stlb, vaddr >> 12, is_global(vaddr)))
            c.stlb_misses++;
    }
    uint64_t size = 1ull << qemu_plugin_mem_size_shift(info);
    data_line(pa >> 6);
    if (((pa + size - 1) >> 6) != (pa >> 6))   /* an access across a line boundary touches both */
        data_line((pa + size - 1) >> 6);
}

static void open_window(void)
{
    if (pollute) {
        assoc_flush(&l1i, 0);
        assoc_flush(&l1d, 0);
        assoc_flush(&l2, 0);
        tlb_flush(0);
    }
    lines->now++;
    pages->now++;
    lines->n = pages->n = lines->full = pages->full = 0;
    at_open = c;
    window_modelled = modelling;
    in_window = 1;
}

static void close_window(void)
{
    if (!in_window)
        return;
    in_window = 0;
    windows++;
    if (!out)
        return;
    fprintf(out, "W window=%llu modelled=%d", (unsigned long long)windows, window_modelled && modelling);
#define PRINT(n) fprintf(out, " " #n "=%llu", (unsigned long long)(c.n - at_open.n));
    COUNTERS(PRINT)
#undef PRINT
    fprintf(out, " lines_touched=%llu pages_touched=%llu touch_overflow=%llu\n", (unsigned long long)lines->n,
            (unsigned long long)pages->n, (unsigned long long)(lines->full + pages->full));
    fflush(out);
}

static void on_begin(unsigned int vcpu, void *ud) { open_window(); }
static void on_end(unsigned int vcpu, void *ud) { close_window(); }

static int trace;
/* rdtsc mode: only the RDTSCs of the task's own code are boundaries (GRUB, which boots GNU Mach, reads the TSC
 * at low addresses too); 0..0: any of the user half */
static uint64_t text_lo, text_hi;

static void on_rdtsc(unsigned int vcpu, void *ud)
{
    if (trace && out)
        fprintf(out, "T rdtsc vaddr=%llx half=%d\n", (unsigned long long)(uintptr_t)ud, rdtsc_half);
    if (rdtsc_half)
        close_window();
    else
        open_window();
    rdtsc_half ^= 1;
}

/* the marker no-ops (probes/harness.h): nopl 0x42534f(%rax) and nopl 0x45534f(%rax) */
static const uint8_t MARK_BEGIN[] = {0x0f, 0x1f, 0x80, 0x4f, 0x53, 0x42, 0x00};
static const uint8_t MARK_END[] = {0x0f, 0x1f, 0x80, 0x4f, 0x53, 0x45, 0x00};

static int boundary_of(const uint8_t *b, size_t n, uint64_t va)
{
    if (boundary_rdtsc) {
        if (UPPER(va) || (text_hi && (va < text_lo || va >= text_hi)))
            return 0;
        if ((n == 2 && b[0] == 0x0f && b[1] == 0x31) || (n == 3 && b[0] == 0x0f && b[1] == 0x01 && b[2] == 0xf9))
            return 3;
        return 0;
    }
    if (n == sizeof MARK_BEGIN && !memcmp(b, MARK_BEGIN, n))
        return 1;
    if (n == sizeof MARK_END && !memcmp(b, MARK_END, n))
        return 2;
    return 0;
}

static unsigned flags_of(const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && ((b[i] & 0xf0) == 0x40 || b[i] == 0x66 || b[i] == 0xf2 || b[i] == 0xf3))
        i++;   /* REX and operand-size / repeat prefixes */
    if (i < n && b[i] == 0xcd)
        return F_SYSCALL;
    if (i + 1 >= n || b[i] != 0x0f)
        return 0;
    uint8_t op = b[i + 1];
    if (op == 0x05 || op == 0x34)
        return F_SYSCALL;
    if (op == 0x30)
        return F_WRMSR;
    if (op == 0x01 && i + 2 < n && (b[i + 2] == 0xc1 || b[i + 2] == 0xd9))
        return F_HYPERCALL;
    if (op == 0x22 && i + 2 < n) {
        unsigned reg = (b[i + 2] >> 3) & 7;
        return reg == 3 ? F_CR3 : reg == 4 ? F_CR4 : 0;
    }
    return 0;
}

static void on_first_user(unsigned int vcpu, void *ud);

static void instrument_boundaries(struct qemu_plugin_insn *in, const uint8_t *b, size_t n, uint64_t va)
{
    switch (boundary_of(b, n, va)) {
    case 1: qemu_plugin_register_vcpu_insn_exec_cb(in, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL); break;
    case 2: qemu_plugin_register_vcpu_insn_exec_cb(in, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL); break;
    case 3: qemu_plugin_register_vcpu_insn_exec_cb(in, on_rdtsc, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)va); break;
    }
}

static void trans_full(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        const uint8_t *b = qemu_plugin_insn_data(in);
        size_t sz = qemu_plugin_insn_size(in);
        insn_t *d = malloc(sizeof *d);
        d->vaddr = qemu_plugin_insn_vaddr(in);
        d->hline = ((uint64_t)(uintptr_t)qemu_plugin_insn_haddr(in) >> 6) | CODE_LINE;
        d->flags = flags_of(b, sz);
        /* the boundary first: a window opens before, and closes after, its marker's own events */
        int kind = boundary_of(b, sz, d->vaddr);
        if (kind == 1 || kind == 3)
            instrument_boundaries(in, b, sz, d->vaddr);
        qemu_plugin_register_vcpu_insn_exec_cb(in, on_insn, QEMU_PLUGIN_CB_NO_REGS, d);
        qemu_plugin_register_vcpu_mem_cb(in, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, d);
        if (kind == 2)
            instrument_boundaries(in, b, sz, d->vaddr);
    }
}

/* before the model starts: the boundaries only, and the first user-mode instruction starts it */
static void trans_idle(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        uint64_t va = qemu_plugin_insn_vaddr(in);
        instrument_boundaries(in, qemu_plugin_insn_data(in), qemu_plugin_insn_size(in), va);
        /* the model starts at the first of the task's code (rdtsc), or at the harness's first marker (marker:
         * GRUB, which boots Xen, runs at low addresses long before any user mode) */
        int start = boundary_rdtsc ? (i == 0 && !UPPER(va) && (!text_hi || (va >= text_lo && va < text_hi)))
                                   : boundary_of(qemu_plugin_insn_data(in), qemu_plugin_insn_size(in), va) == 1;
        if (start)
            qemu_plugin_register_vcpu_insn_exec_cb(in, on_first_user, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    if (out) {
        fprintf(out, "E windows=%llu insns=%llu\n", (unsigned long long)windows, (unsigned long long)c.insns);
        fclose(out);
        out = NULL;
    }
}

static void modelling_on(qemu_plugin_id_t id)
{
    modelling = 1;
    qemu_plugin_register_vcpu_tb_trans_cb(id, trans_full);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
}

static int reset_asked;
static void on_first_user(unsigned int vcpu, void *ud)
{
    if (!reset_asked) {
        reset_asked = 1;
        qemu_plugin_reset(self, modelling_on);   /* flushes the translations: every one is made again, instrumented */
    }
}

static const char *arg(const char *a, const char *key)
{
    size_t k = strlen(key);
    return strncmp(a, key, k) == 0 && a[k] == '=' ? a + k + 1 : NULL;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info, int argc, char **argv)
{
    const char *path = NULL, *v;
    self = id;
    for (int i = 0; i < argc; i++) {
        if ((v = arg(argv[i], "out")))
            path = v;
        else if ((v = arg(argv[i], "boundary")))
            boundary_rdtsc = strcmp(v, "rdtsc") == 0;
        else if ((v = arg(argv[i], "pollute")))
            pollute = atoi(v);
        else if ((v = arg(argv[i], "text"))) {   /* LO-HI, hex: the task's code */
            char *end;
            text_lo = strtoull(v, &end, 16);
            text_hi = *end == '-' ? strtoull(end + 1, NULL, 16) : 0;
        } else if ((v = arg(argv[i], "trace")))   /* a line per boundary RDTSC, for finding a guest's */
            trace = atoi(v);
        else if ((v = arg(argv[i], "lazy")))
            lazy = atoi(v);
        else if ((v = arg(argv[i], "global")))
            global_mode = strcmp(v, "image") == 0 ? GLOBAL_IMAGE : strcmp(v, "none") == 0 ? GLOBAL_NONE : GLOBAL_UPPER;
        else {
            fprintf(stderr, "osb_memsim: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    assoc_init(&l1i, "l1i", 512, 8);     /* 32 KiB of 64 B lines */
    assoc_init(&l1d, "l1d", 512, 8);
    assoc_init(&l2, "l2", 16384, 16);    /* 1 MiB */
    assoc_init(&itlb, "itlb", 64, 8);
    assoc_init(&dtlb, "dtlb", 64, 4);
    assoc_init(&stlb, "stlb", 1536, 12);
    lines = calloc(1, sizeof *lines);
    pages = calloc(1, sizeof *pages);
    out = path ? fopen(path, "w") : NULL;
    if (path && !out) {
        fprintf(stderr, "osb_memsim: cannot write %s\n", path);
        return -1;
    }
    if (out) {
        fprintf(out, "M line_bytes=64 page_bytes=4096 l1i=32KiB/8way l1d=32KiB/8way l2=1MiB/16way/unified "
                     "replacement=LRU itlb=64/8way dtlb=64/4way stlb=1536/12way/shared pcid=no "
                     "global=%s boundary=%s pollute=%d lazy=%d text=%llx-%llx\n",
                global_mode == GLOBAL_UPPER ? "upper" : global_mode == GLOBAL_IMAGE ? "image" : "none",
                boundary_rdtsc ? "rdtsc" : "marker", pollute, lazy, (unsigned long long)text_lo,
                (unsigned long long)text_hi);
        fflush(out);
    }
    if (lazy) {
        qemu_plugin_register_vcpu_tb_trans_cb(id, trans_idle);
        qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    } else {
        modelling_on(id);
    }
    return 0;
}
