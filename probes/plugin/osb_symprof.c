/* osb-symprof: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) counting every executed guest
 * instruction by its address, within windows the guest marks by executing two addresses of its own
 * (environments/symprofile.py: the harness's call of the probe loop, and the instruction after it).
 *
 *   -plugin osb-symprof.so,start=0xADDR,end=0xADDR,out=FILE
 *
 * Every instruction gets its own counter, incremented inline (an exact count, whatever the kernel does
 * between the marks: interrupts, other processes, the probe's partner).  At `start` the counters are
 * snapshot; at `end` the plugin appends to FILE one window:
 *   W <index>
 *   <vaddr hex> <instructions executed in the window>      (every address with a non-zero count)
 * Python (symprofile.py) names each address by the kernel's symbols (/proc/kallsyms of the same boot
 * command line) or the init's (nm), and divides by the batch's iterations.
 *
 * The declarations below are those of QEMU's include/qemu/qemu-plugin.h for API version 1 that this
 * file uses (Debian's qemu-system-x86 does not ship the header). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op, void *ptr,
                                                uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

typedef struct slot {
    uint64_t vaddr, count, snap;
} slot;

/* the counters of one translated block, never moved (the inline adds hold their addresses) */
typedef struct chunk {
    struct chunk *next;
    size_t n;
    slot s[];
} chunk;

static chunk *chunks;
static uint64_t mark_start, mark_end;
static FILE *out;
static bool open_window;
static unsigned windows;

static void on_start(unsigned int vcpu, void *u)
{
    for (chunk *c = chunks; c; c = c->next)
        for (size_t i = 0; i < c->n; i++)
            c->s[i].snap = c->s[i].count;
    open_window = true;
}

static void on_end(unsigned int vcpu, void *u)
{
    if (!open_window)
        return;
    open_window = false;
    fprintf(out, "W %u\n", windows++);
    for (chunk *c = chunks; c; c = c->next)
        for (size_t i = 0; i < c->n; i++)
            if (c->s[i].count != c->s[i].snap)
                fprintf(out, "%" PRIx64 " %" PRIu64 "\n", c->s[i].vaddr, c->s[i].count - c->s[i].snap);
    fflush(out);
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    chunk *c = calloc(1, sizeof *c + n * sizeof(slot));
    if (!c)
        abort();
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t va = qemu_plugin_insn_vaddr(insn);
        c->s[i].vaddr = va;
        /* the mark's callbacks run before the instruction: `start` before the call, so the call itself
         * and everything up to `end` (the instruction after the call, not counted) are in the window */
        if (va == mark_start)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_start, QEMU_PLUGIN_CB_NO_REGS, NULL);
        if (va == mark_end)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &c->s[i].count, 1);
    }
    c->next = chunks;
    chunks = c;
}

static void on_atexit(qemu_plugin_id_t id, void *u)
{
    if (out) {
        fprintf(out, "E %u\n", windows);
        fclose(out);
        out = NULL;
    }
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "start=", 6))
            mark_start = strtoull(argv[i] + 6, NULL, 0);
        else if (!strncmp(argv[i], "end=", 4))
            mark_end = strtoull(argv[i] + 4, NULL, 0);
        else if (!strncmp(argv[i], "out=", 4))
            path = argv[i] + 4;
    }
    if (!mark_start || !mark_end || !path) {
        qemu_plugin_outs("osb-symprof: needs start=ADDR,end=ADDR,out=FILE\n");
        return -1;
    }
    out = fopen(path, "w");
    if (!out)
        return -1;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
    return 0;
}
