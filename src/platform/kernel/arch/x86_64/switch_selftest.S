/*
 * switch_selftest.S - test builds only: proves that a thread switch keeps
 * every register the SysV ABI says a call preserves (selftest_kthread.c).
 *
 * uint64_t kthread_selftest_call(uint64_t seed, void (*fn)(void *), void *arg)
 *
 * Loads rbx, rbp, r12-r15 with values made from seed, sets MXCSR's and the
 * x87 control word's rounding modes from seed's low bits, writes a stack
 * slot, calls fn(arg) (which switches threads), and returns a bit mask of
 * what changed across the call: 1 rbx, 2 rbp, 4 r12, 8 r13, 16 r14,
 * 32 r15, 64 MXCSR, 128 x87 control word, 256 the stack slot. The caller's
 * registers, MXCSR and control word are restored before returning.
 */
#ifdef TERN_TEST_HOOKS

    .text
    .globl kthread_selftest_call
    .type kthread_selftest_call, @function
kthread_selftest_call:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $40, %rsp                  /* 16-byte aligned again for the call */
    movq %rdi, 0(%rsp)              /* seed */
    stmxcsr 8(%rsp)                 /* the caller's MXCSR and control word */
    fnstcw 12(%rsp)
    movq %rdi, %rax                 /* MXCSR rounding (bits 13-14) = seed & 3 */
    andl $3, %eax
    shll $13, %eax
    orl $0x1F80, %eax
    movl %eax, 16(%rsp)
    movq %rdi, %rax                 /* x87 rounding (bits 10-11) = seed >> 2 & 3 */
    shrq $2, %rax
    andl $3, %eax
    shll $10, %eax
    orl $0x037F, %eax
    movw %ax, 20(%rsp)
    ldmxcsr 16(%rsp)
    fldcw 20(%rsp)
    movq %rdi, %rax
    notq %rax
    movq %rax, 24(%rsp)             /* the stack slot: ~seed */
    movq %rsi, %rax
    movq %rdx, %rdi
    movq 0(%rsp), %rbx
    leaq 1(%rbx), %rbp
    leaq 2(%rbx), %r12
    leaq 3(%rbx), %r13
    leaq 4(%rbx), %r14
    leaq 5(%rbx), %r15
    call *%rax
    xorl %eax, %eax
    movq 0(%rsp), %rdx
    cmpq %rdx, %rbx
    je 1f
    orl $1, %eax
1:  leaq 1(%rdx), %rcx
    cmpq %rcx, %rbp
    je 2f
    orl $2, %eax
2:  leaq 2(%rdx), %rcx
    cmpq %rcx, %r12
    je 3f
    orl $4, %eax
3:  leaq 3(%rdx), %rcx
    cmpq %rcx, %r13
    je 4f
    orl $8, %eax
4:  leaq 4(%rdx), %rcx
    cmpq %rcx, %r14
    je 5f
    orl $16, %eax
5:  leaq 5(%rdx), %rcx
    cmpq %rcx, %r15
    je 6f
    orl $32, %eax
6:  stmxcsr 32(%rsp)                /* compare without the sticky status flags */
    movl 32(%rsp), %ecx
    andl $~0x3F, %ecx
    movl 16(%rsp), %esi
    andl $~0x3F, %esi
    cmpl %esi, %ecx
    je 7f
    orl $64, %eax
7:  fnstcw 36(%rsp)
    movzwl 36(%rsp), %ecx
    movzwl 20(%rsp), %esi
    cmpl %esi, %ecx
    je 8f
    orl $128, %eax
8:  movq 24(%rsp), %rcx
    notq %rcx
    cmpq %rdx, %rcx
    je 9f
    orl $256, %eax
9:  ldmxcsr 8(%rsp)
    fldcw 12(%rsp)
    addq $40, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size kthread_selftest_call, . - kthread_selftest_call

#endif

    .section .note.GNU-stack, "", @progbits
