/*
 * trampoline.S - the first instructions of an application processor.
 * A started AP begins in 16-bit real mode at CS:IP = (page >> 4):0, where
 * page is the SIPI vector's 4 KiB page below 1 MiB. This blob is linked in
 * .rodata, never run where it is linked: smp.c copies it to that page
 * (found in the boot memory map, below 1 MiB, which the frame allocator
 * never hands out) and fills in the parameter block at its end. So every
 * address below is an offset from trampoline_start plus the page's base
 * (%ebx here), patched or computed at run time.
 *
 * Path: real mode -> lgdt a GDT inside the page -> 32-bit protected mode
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

#define OFF(x) ((x) - trampoline_start)

    .section .rodata.trampoline, "a"
    .balign 16
    .globl trampoline_start, trampoline_end, trampoline_params
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
    incl %esi
hold:                                    /* test builds: tern.test.aplate */
    cmpl %esi, OFF(p_hold)
    jne 1f
    pause
    jmp hold
1:
    movw %cs, %ax
    movzwl %ax, %ebx
    shll $4, %ebx                        /* ebx = the page's physical base */
    /* The GDT pointer's base and the far pointers hold offsets: add base. */
    addl %ebx, OFF(gdt_ptr) + 2
    addl %ebx, OFF(far32)
    addl %ebx, OFF(far64)
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
    .short gdt_end - gdt - 1
    .long OFF(gdt)                       /* + base at run time */
    .balign 8
far32:
    .long OFF(pm32)                      /* + base at run time */
    .short 0x10
    .balign 8
far64:
    .long OFF(lm64)                      /* + base at run time */
    .short 0x08

    /* Filled in by smp.c (struct trampoline_params) before each SIPI. */
    .balign 8
trampoline_params:
p_cr3:    .quad 0                        /* the trampoline PML4, below 4 GiB */
p_stack:  .quad 0                        /* the AP's stack top (higher half) */
p_percpu: .quad 0                        /* its struct percpu */
p_entry:  .quad 0                        /* smp_ap_entry */
p_hold:   .quad 0                        /* APIC id + 1 of a CPU held here */
trampoline_end:

    .section .note.GNU-stack, "", @progbits
