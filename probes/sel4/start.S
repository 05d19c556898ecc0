/* Entry of osbench's seL4 root task (seL4 5.0.0, x86_64): the kernel starts
 * the initial thread at the ELF entry with the bootinfo pointer in rdi and no
 * stack; the IPC buffer is reached through %gs, which the kernel sets.
 * thread_entry starts every other thread of the task: the host sets rsp to
 * its stack, r12 to the C function and rdi to its argument (task.c,
 * start_thread). */
	.text
	.globl _start
_start:
	leaq	osb_stack_top(%rip), %rsp
	andq	$-16, %rsp
	call	osb_sel4_main
1:	jmp	1b

	.globl thread_entry
thread_entry:
	andq	$-16, %rsp
	call	*%r12
2:	jmp	2b

	.bss
	.balign 4096
	.space 32768
	.globl osb_stack_top
osb_stack_top:
	.section .note.GNU-stack,"",@progbits
