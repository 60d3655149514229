/*
 * trampoline.S - the first instructions of an application processor.
 * A started AP begins in 16-bit real mode at CS:IP = (page >> 4):0, where
 * page is the SIPI vector's 4 KiB page below 1 MiB. This blob is linked in
 * .rodata, never run where it is linked: smp.c copies it to that page
 * (found in the boot memory map, below 1 MiB, which the frame allocator
 * never hands out) once, and fills in the parameter block at its end
 * before each SIPI. So every address below is an offset from
 * trampoline_start plus the page's base (%ebx here): the three that hold
 * one (the GDT pointer, the far jumps) smp.c patches as it copies the
 * blob; the rest are computed here. The blob never writes itself: a CPU
 * that comes too late may run it while the next CPU starts from it.
 *
 * Path: real mode -> the claim (below: only the CPU being started goes
 * on; a late one halts here) -> lgdt a GDT inside the page -> 32-bit protected mode
 * -> PAE, EFER.LME|NXE, CR3 = a small PML4 smp.c built after the blob
 * (identity map of the low 2 MiB, the kernel's higher-half entries
 * copied, so KASLR's slide is already in them) -> long mode -> jump to
 * the higher half: smp_ap_entry with RSP = the AP's own guarded stack and
 * RDI = its struct percpu. The same for SeaBIOS, OVMF and PVH boots: it
 * depends on nothing the firmware leaves behind.
 */
#define CR0_PE (1 << 0)
#define CR0_WP (1 << 16)
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define EFER_LME (1 << 8)
#define EFER_NXE (1 << 11)
#define CLAIMED 0x80000000               /* smp.c's TRAMP_CLAIMED */

#define OFF(x) ((x) - trampoline_start)

    .section .rodata.trampoline, "a"
    .balign 16
    .globl trampoline_start, trampoline_end, trampoline_params
    .globl trampoline_gdt_ptr, trampoline_far32, trampoline_far64
    .code16
trampoline_start:
    cli
    cld
    movw %cs, %ax
    movw %ax, %ds
    movl $1, %eax
    cpuid
    shrl $24, %ebx
    movl %ebx, %esi                      /* esi = this CPU's initial APIC id */
    leal 1(%esi), %edi                   /* edi = its claim: APIC id + 1 */
    /* p_hold is 0 but in test builds: tern.test.aplate=N makes it CPU N's
     * APIC id + 1 (held here, before its claim, until CPU 0 lets it go),
     * tern.test.apslow=N that | CLAIMED (held after its claim until CPU 0
     * gives up on it: below). */
hold:
    cmpl %edi, OFF(p_hold)
    jne claim
    pause
    jmp hold
    /* The claim, before this CPU reads a parameter or writes anything
     * else: only the CPU being started (claim = its APIC id + 1) may take
     * it, and only until CPU 0 gives up waiting (it then sets claim to 0
     * and may reuse the slot, the stacks and this page for the next CPU).
     * A CPU that loses (it comes after CPU 0 gave up on it) marks itself
     * in the late bitmap for CPU 0 to report and halts here for good. */
claim:
    movl %edi, %eax
    movl %edi, %edx
    orl $CLAIMED, %edx
    lock cmpxchgl %edx, OFF(p_claim)
    je claimed
    lock btsl %esi, OFF(p_late)
late:
    hlt
    jmp late
claimed:
    movl %edx, %eax
    cmpl %eax, OFF(p_hold)
    jne 2f
1:  cmpl $0, OFF(p_claim)
    je 2f
    pause
    jmp 1b
2:
    movw %cs, %ax
    movzwl %ax, %ebx
    shll $4, %ebx                        /* ebx = the page's physical base */
    lgdtl OFF(gdt_ptr)
    movl %cr0, %eax
    orl $CR0_PE, %eax
    movl %eax, %cr0
    ljmpl *OFF(far32)

    .code32
pm32:
    movw $0x18, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl %cr4, %eax
    orl $CR4_PAE, %eax
    movl %eax, %cr4
    movl OFF(p_cr3)(%ebx), %eax
    movl %eax, %cr3
    movl $0xC0000080, %ecx               /* EFER */
    rdmsr
    orl $(EFER_LME | EFER_NXE), %eax
    wrmsr
    movl %cr0, %eax
    orl $(CR0_PG | CR0_WP), %eax
    movl %eax, %cr0
    ljmpl *OFF(far64)(%ebx)

    .code64
lm64:
    movw $0x18, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movq OFF(p_stack)(%rbx), %rsp
    movq OFF(p_percpu)(%rbx), %rdi
    movq OFF(p_entry)(%rbx), %rax
    xorl %ebp, %ebp
    jmp *%rax                            /* into the higher half; never returns */

    .balign 8
gdt:
    .quad 0
    .quad 0x00209A0000000000             /* 0x08: 64-bit code */
    .quad 0x00CF9A000000FFFF             /* 0x10: 32-bit code, flat */
    .quad 0x00CF92000000FFFF             /* 0x18: data, flat */
gdt_end:
gdt_ptr:
trampoline_gdt_ptr:
    .short gdt_end - gdt - 1
    .long OFF(gdt)                       /* + base: smp.c patches the copy */
    .balign 8
far32:
trampoline_far32:
    .long OFF(pm32)                      /* + base: smp.c patches the copy */
    .short 0x10
    .balign 8
far64:
trampoline_far64:
    .long OFF(lm64)                      /* + base: smp.c patches the copy */
    .short 0x08

    /* Filled in by smp.c (struct trampoline_params) before each SIPI;
     * late (a bitmap by APIC id) only by CPUs that lost the claim. */
    .balign 8
trampoline_params:
p_cr3:    .quad 0                        /* the trampoline PML4, below 4 GiB */
p_stack:  .quad 0                        /* the AP's stack top (higher half) */
p_percpu: .quad 0                        /* its struct percpu */
p_entry:  .quad 0                        /* smp_ap_entry */
p_hold:   .long 0                        /* test builds: APIC id + 1 of a CPU held */
p_claim:  .long 0                        /* APIC id + 1 of the CPU to start, |CLAIMED */
p_late:   .fill 8, 4, 0                  /* 256 bits: CPUs that came too late */
trampoline_end:

    .section .note.GNU-stack, "", @progbits
