/*
 * switch.S - the context switch of the kernel's cooperative threads
 * (kthread.c). A switch happens only through a function call, so by the
 * SysV ABI the caller has already saved every register the callee may
 * clobber (rax, rcx, rdx, rsi, rdi, r8-r11, every XMM/YMM register, the
 * x87 stack); what a callee must preserve is rbx, rbp, r12-r15, rsp, and
 * the control bits of MXCSR and the x87 control word. Those are saved on
 * the stack being left and restored from the stack being entered.
 *
 * MXCSR and the x87 control word are saved even though tern's own code
 * never changes them: third-party code running on these stacks (SQLite's
 * floating point, wolfSSL's assembly) may, and a rounding mode or
 * exception mask left by one context must not leak into the other. It
 * costs two stores and two loads per switch.
 *
 * Frame on a stack that is not running (low to high address):
 *   [rsp+0]  MXCSR (4 bytes), x87 control word (2 bytes), padding
 *   [rsp+8]  padding, so the six registers keep rsp 16-byte aligned
 *   [rsp+16] r15, r14, r13, r12, rbx, rbp
 *   [rsp+64] return address
 */

    .text

/* void kthread_switch(uint64_t *save_rsp, uint64_t next_rsp) */
    .globl kthread_switch
    .type kthread_switch, @function
kthread_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $16, %rsp
    stmxcsr 0(%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr 0(%rsp)
    fldcw 4(%rsp)
    addq $16, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size kthread_switch, . - kthread_switch

/* Where a new thread's first switch returns to (kthread.c builds the
 * frame): rsp is 16-byte aligned here, as a call needs. rbp is zero, so a
 * frame-pointer walk ends at the thread's first frame. kthread_entry never
 * returns. */
    .globl kthread_start
    .type kthread_start, @function
kthread_start:
    xorl %ebp, %ebp
    call kthread_entry
    ud2
    .size kthread_start, . - kthread_start

    .section .note.GNU-stack, "", @progbits
