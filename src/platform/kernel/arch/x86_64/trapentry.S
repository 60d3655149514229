/*
 * trapentry.S - one small stub per interrupt vector. Each stub makes the
 * stack look the same (a dummy error code where the CPU pushes none, then the
 * vector number), saves the general registers into a struct trap_frame
 * (arch/x86_64/trap.h) and calls trap_dispatch(frame). The table
 * trap_stubs[] holds the stubs' addresses for idt.c.
 */


    .text
    .altmacro
    .macro STUB v
    .balign 16
trap_stub_\v:
    .if ((\v == 8) || ((\v >= 10) && (\v <= 14)) || (\v == 17) || (\v == 21) || (\v == 29) || (\v == 30))
    .else
    pushq $0
    .endif
    pushq $\v
    jmp trap_common
    .endm

    .set i, 0
    .rept 256
    STUB %i
    .set i, i + 1
    .endr

trap_common:
    pushq %rax
    pushq %rbx
    pushq %rcx
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rbp
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    cld
    movq %rsp, %rdi
    /* Align the stack for C; the frame pointer is kept in rbx (callee-saved). */
    movq %rsp, %rbx
    andq $-16, %rsp
    call trap_dispatch
    movq %rbx, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rbp
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rbx
    popq %rax
    addq $16, %rsp                          /* vector and error code */
    iretq

    .macro STUBADDR v
    .quad trap_stub_\v
    .endm

    .section .rodata
    .balign 8
    .globl trap_stubs
trap_stubs:
    .set i, 0
    .rept 256
    STUBADDR %i
    .set i, i + 1
    .endr

    .section .note.GNU-stack, "", @progbits
