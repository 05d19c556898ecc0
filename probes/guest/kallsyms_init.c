/* osbench-kallsyms-init: PID 1 of a boot that only names the kernel's functions
 * (environments/symprofile.py).  Debian's image packages hold no System.map (a
 * placeholder; the real one is in the -dbg package, about 1 GB), so the kernel's
 * own /proc/kallsyms, read by PID 1 (CAP_SYSLOG: real addresses), is written to
 * QEMU's debug console (I/O port 0xe9, -debugcon: one port write a byte, no UART
 * or tty in the way, and nothing on the serial console the runner parses)
 * between two marker lines, text symbols only ("ADDR NAME"), by a child; then it execs
 * /osb-guest-init (osbench-guest-init, which stays PID 1 and runs the boot's
 * jobs) where the initramfs has it, else powers the guest off.  nokaslr: the
 * addresses are those of every boot of the kernel. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/io.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(const char *s)
{
    for (; *s; s++)
        outb((unsigned char)*s, 0xe9);
}

/* the dump, in a child of its own: a process granted I/O ports keeps an I/O bitmap that every later
 * return to user space copies into the TSS (about 35 instructions a system call in Linux 5.10), and the
 * ordinary init that PID 1 becomes must not inherit it */
static void dump(void)
{
    FILE *f = fopen("/proc/kallsyms", "r");
    if (ioperm(0xe9, 1, 1) != 0)
        _exit(1);
    put("OSB kallsyms begin\n");
    char line[512], addr[32], type[4], name[400];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%31s %3s %399s", addr, type, name) == 3 && (type[0] == 't' || type[0] == 'T')) {
            put(addr);
            put(" ");
            put(name);
            put("\n");
        }
    put("OSB kallsyms end\n");
    _exit(0);
}

int main(void)
{
    mount("proc", "/proc", "proc", 0, NULL);
    pid_t child = fork();
    if (child == 0)
        dump();
    if (child > 0)
        waitpid(child, NULL, 0);
    umount("/proc");
    char *args[] = {"/init", NULL};
    execv("/osb-guest-init", args);
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
