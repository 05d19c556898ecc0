/* Entry point and GNU Mach x86_64 trap stubs of the osbench bootstrap task.
 *
 * GNU Mach's 64-bit user ABI (trixie's gnumach 1.8+git2025, x86_64/locore.S
 * syscall64): the `syscall` instruction with rax = the negative trap number,
 * arguments in rdi rsi rdx r10 r8 r9, the 7th (mach_msg's notify) read from
 * 8(%rsp), just above the return address: exactly where a C call leaves it,
 * so each stub is four instructions.  Keep this file as it is: the spike that
 * found this ABI (shared/reference/mach-spike) is its only documentation. */
	.text
	.globl _start
_start:
	mov	%rsp, %rdi		/* rdi -> argc, argv[], 0, envp[], 0 */
	and	$-16, %rsp
	call	osb_mach_main
1:	hlt				/* privileged: the kernel stops the task */
	jmp	1b

#define TRAP(name, num) \
	.globl name; .type name,@function; name: \
	movq $num, %rax; movq %rcx, %r10; syscall; ret

TRAP(mach_msg_trap, -25)
TRAP(mach_reply_port, -26)
TRAP(mach_thread_self, -27)
TRAP(mach_task_self, -28)
TRAP(mach_host_self, -29)
TRAP(null_port_trap, -10)	/* MACH_TRAP(null_port): returns MACH_PORT_NULL, does nothing else */
TRAP(swtch_pri, -59)		/* yield the CPU (a joiner parks here until it is terminated) */

	.globl mach_msg		/* what the MIG stubs call */
mach_msg:
	jmp	mach_msg_trap
	.section .note.GNU-stack,"",@progbits
