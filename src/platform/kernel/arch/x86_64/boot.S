/*
 * boot.S - the first instructions. One ELF serves two loaders:
 *   - GRUB multiboot2 (the ISO, BIOS and UEFI): header below, entry mb2_entry,
 *     EAX = 0x36d76289, EBX = physical address of the boot information;
 *   - PVH (qemu -kernel, later Firecracker): a Xen ELF note (type 18) names
 *     pvh_entry, EBX = physical address of struct hvm_start_info.
 * Both arrive in 32-bit protected mode with paging off. This file checks for
 * long mode and NX, builds throw-away page tables (the first 4 GiB mapped at
 * 0), enters 64-bit mode and calls kaslr_early() (kaslr_early.c), which
 * picks the random layout, relocates the higher half and maps it and the
 * direct map at their random bases; then it jumps to the higher half and
 * calls kmain_early(). Proper W^X page tables are built in C (mm/paging.c)
 * from the boot memory map.
 * Everything in .boot.* is linked and run at its physical address.
 */
#include "arch/x86_64/memlayout.h"

#define MB2_MAGIC 0xE85250D6
#define MB2_BOOT_MAGIC 0x36d76289
#define CR0_PG (1 << 31)
#define CR0_WP (1 << 16)
#define CR4_PAE (1 << 5)
#define EFER_LME (1 << 8)
#define EFER_NXE (1 << 11)

    .section .multiboot2, "a"
    .balign 8
mb2_header:
    .long MB2_MAGIC
    .long 0                                 /* architecture: i386 protected mode */
    .long mb2_header_end - mb2_header
    .long -(MB2_MAGIC + 0 + (mb2_header_end - mb2_header))
    /* Framebuffer request (type 5), optional (flags bit 0): a 1024x768
     * 32-bit linear framebuffer if the loader can set one, text or nothing
     * otherwise. Tags are 8-byte aligned, so 4 bytes of padding follow. */
    .short 5, 1
    .long 20
    .long 1024, 768, 32
    .long 0
    /* End tag. */
    .short 0, 0
    .long 8
mb2_header_end:

    /* PVH entry note: name "Xen", type 18 (XEN_ELFNOTE_PHYS32_ENTRY). */
    .section .note.tern.pvh, "a", @note
    .balign 4
    .long 4                                 /* name size */
    .long 4                                 /* descriptor size */
    .long 18
    .asciz "Xen"
    .long pvh_entry

    .section .boot.text, "ax"
    .code32
    .globl mb2_entry
mb2_entry:
    cli
    cmpl $MB2_BOOT_MAGIC, %eax
    jne no_loader
    movl $BOOT_KIND_MULTIBOOT2, boot_kind
    movl %ebx, boot_info_phys
    jmp common32

    .globl pvh_entry
pvh_entry:
    cli
    movl $BOOT_KIND_PVH, boot_kind
    movl %ebx, boot_info_phys
    jmp common32

no_loader:
    movl $msg_no_loader, %esi
    jmp fail32

common32:
    movl $boot_stack32_top, %esp
    cld
    /* Long mode (bit 29) and NX (bit 20) in CPUID 0x80000001 EDX. */
    movl $0x80000000, %eax
    cpuid
    cmpl $0x80000001, %eax
    jb no_long_mode
    movl $0x80000001, %eax
    cpuid
    testl $(1 << 29), %edx
    jz no_long_mode
    testl $(1 << 20), %edx
    jz no_long_mode

    /* Clear the early tables and the pool kaslr_early() maps from. */
    movl $early_tables, %edi
    movl $((early_tables_end - early_tables) / 4), %ecx
    xorl %eax, %eax
    rep stosl

    /* Four page directories of 2 MiB pages cover 0..4 GiB. */
    movl $early_pd, %edi
    xorl %ecx, %ecx                          /* ecx = 2 MiB page index */
1:  movl %ecx, %eax
    shll $21, %eax
    orl $0x83, %eax                          /* present, writable, 2 MiB */
    movl %eax, (%edi,%ecx,8)
    movl %ecx, %eax
    shrl $11, %eax                           /* bits 32+ of the address */
    movl %eax, 4(%edi,%ecx,8)
    incl %ecx
    cmpl $2048, %ecx
    jne 1b

    /* Low PDPT: entries 0..3 -> the four directories. */
    movl $early_pdpt_low, %edi
    movl $early_pd, %eax
    orl $0x3, %eax
    movl %eax, 0(%edi)
    addl $4096, %eax
    movl %eax, 8(%edi)
    addl $4096, %eax
    movl %eax, 16(%edi)
    addl $4096, %eax
    movl %eax, 24(%edi)
    /* PML4: identity (0) only; kaslr_early() adds the kernel and the
     * direct map where it places them. */
    movl $early_pml4, %edi
    movl $early_pdpt_low, %eax
    orl $0x3, %eax
    movl %eax, 0(%edi)

    movl $early_pml4, %eax
    movl %eax, %cr3
    movl %cr4, %eax
    orl $CR4_PAE, %eax
    movl %eax, %cr4
    movl $0xC0000080, %ecx          /* EFER */
    rdmsr
    orl $(EFER_LME | EFER_NXE), %eax
    wrmsr
    movl %cr0, %eax
    orl $(CR0_PG | CR0_WP | 1), %eax
    movl %eax, %cr0
    lgdt early_gdt_ptr
    ljmp $0x08, $long_low

no_long_mode:
    movl $msg_no_long_mode, %esi
    /* fall through */

/* Print the NUL-terminated string at ESI on COM1 and halt. */
fail32:
1:  movb (%esi), %al
    testb %al, %al
    jz 3f
    movw $0x3FD, %dx                         /* line status */
2:  inb %dx, %al
    testb $0x20, %al
    jz 2b
    movb (%esi), %al
    movw $0x3F8, %dx
    outb %al, %dx
    incl %esi
    jmp 1b
3:  cli
    hlt
    jmp 3b

    .code64
long_low:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movw %ax, %fs
    movw %ax, %gs
    movl $boot_stack32_top, %esp
    call kaslr_early
    movq %cr3, %rax                           /* new mappings: flush the TLB */
    movq %rax, %cr3
    /* kaslr_early() has relocated this immediate with the rest. */
    movabsq $long_high, %rax
    jmp *%rax

    .section .boot.data, "aw"
    .balign 8
early_gdt:
    .quad 0
    .quad 0x00209A0000000000                 /* 0x08: 64-bit code */
    .quad 0x0000920000000000                 /* 0x10: data */
early_gdt_end:
early_gdt_ptr:
    .short early_gdt_end - early_gdt - 1
    .long early_gdt
boot_kind:
    .long 0
boot_info_phys:
    .long 0
msg_no_loader:
    .asciz "tern: not started by a multiboot2 or PVH loader; halted\r\n"
msg_no_long_mode:
    .asciz "tern: this CPU lacks 64-bit long mode or NX; halted\r\n"

    .section .boot.bss, "aw", @nobits
    .balign 4096
    .globl early_pml4, early_pool
early_tables:
early_pml4:      .skip 4096
early_pdpt_low:  .skip 4096
early_pd:        .skip 4 * 4096
early_pool:      .skip 12 * 4096                /* kaslr_early.c: POOL_PAGES */
early_tables_end:
boot_stack32:    .skip 4096                     /* also kaslr_early()'s */
boot_stack32_top:


    /* From here on: linked in the higher half. */
    .text
long_high:
    /* Zero .bss (the loaders should, but not every one is trusted to). */
    movabsq $__bss_start, %rdi
    movabsq $__bss_end, %rcx
    subq %rdi, %rcx
    shrq $3, %rcx
    xorl %eax, %eax
    rep stosq
    movabsq $boot_stack_top, %rsp
    xorl %ebp, %ebp
    movl boot_kind, %edi
    movl boot_info_phys, %esi
    movl $kaslr_boot_layout, %edx
    call kmain_early
1:  cli
    hlt
    jmp 1b

    .bss
    .balign 4096
boot_stack:
    .skip 16384
boot_stack_top:

    .section .note.GNU-stack, "", @progbits
