/*
 * paging.c - builds and edits the 4-level page tables. Table pages come from
 * the frame allocator and are reached through the direct map. paging_init
 * runs on the early tables from boot.S (which map the first 4 GiB at
 * DMAP_BASE), so the frames it allocates must lie below 4 GiB; the
 * allocator's lowest-first order guarantees that on any sensible VM and it
 * is checked. After the switch, the low identity mapping is gone: a null
 * pointer faults, and the boot code is no longer reachable.
 *
 * Page tables are read-only (SPEC B5): every table page's direct-map alias
 * is mapped without W (a 2 MiB direct-map page holding one is split into
 * 4 KiB pages for that), from the switch onwards, so a stray or hostile
 * write through the direct map cannot redirect a mapping. The few edits
 * after boot (stacks for kernel threads, MMIO windows, short-lived
 * mappings) go through a write window: interrupts off and CR0.WP clear
 * for the edit only.
 */
#include "mm/paging.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/kaslr.h"
#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/smp.h"
#include "mm/pmm.h"
#include "panic.h"

#include <string.h>

enum {
    PTE_P = 1 << 0, PTE_W = 1 << 1, PTE_PWT = 1 << 3, PTE_PCD = 1 << 4,
    PTE_PS = 1 << 7, PTE_G = 1 << 8,
};
#define PTE_NX (1ull << 63)
#define PTE_ADDR 0x000ffffffffff000ull
#define LARGE_PAGE 0x200000ull

extern char __text_start[], __text_end[], __rodata_start[], __rodata_end[];
extern char __data_start[], __kernel_end[];

/* Boot-CPU paging state: the top-level table, the MMIO window cursor,
 * whether new table pages are made read-only (from paging_init's switch)
 * and how deep the write window is open. */
static uint64_t *pml4;
static uint64_t mmio_next;
static int tables_ro;
static unsigned window_depth;
static uint64_t window_rflags;
/* Set once another CPU runs kernel work (paging_share): from then on a
 * mapping may be added, never removed or changed, except at CPU 0's own
 * addresses (vm_unmap_private): no other CPU can hold a stale TLB entry,
 * so no shootdown is needed (ADR-064). */
static int shared;

#define CR0_WP (1ull << 16)

/* Open the write window: supervisor writes ignore W while CR0.WP is
 * clear, so interrupts stay off until it closes (nothing else may write
 * through it). Nests. */
static void window_open(void)
{
    /* Only CPU 0 edits: why no TLB shootdown is needed yet is argued in
     * arch/x86_64/smp.c; an edit elsewhere would break that argument. */
    if (smp_cpu_id() != 0)
        panic("paging: a page-table edit on an application processor (no TLB shootdown yet)");
    if (window_depth++)
        return;
    uint64_t f, cr0;
    __asm__ volatile("pushfq; popq %0; cli" : "=r"(f) : : "memory");
    window_rflags = f;
    __asm__ volatile("mov %%cr0, %0" : "=r"(cr0));
    __asm__ volatile("mov %0, %%cr0" : : "r"(cr0 & ~CR0_WP) : "memory");
}

static void window_close(void)
{
    if (--window_depth)
        return;
    uint64_t cr0;
    __asm__ volatile("mov %%cr0, %0" : "=r"(cr0));
    __asm__ volatile("mov %0, %%cr0" : : "r"(cr0 | CR0_WP) : "memory");
    if (window_rflags & (1u << 9))
        __asm__ volatile("sti" : : : "memory");
}
/* PAT entry 1 (PWT alone) is write-combining once paging_init set it. */
static int pat_wc;

/* The power-on PAT with entry 1 changed from write-through to
 * write-combining: WB, WC, UC-, UC, WB, WT, UC-, UC. Nothing maps with PWT
 * alone before this, so no mapping changes type under the CPU. Every
 * other CPU loads the same value (paging_cpu_init) before it runs. */
#define PAT_VALUE 0x0007040600070106ull
#define MSR_PAT 0x277

static uint64_t *raw_table(void)
{
    uint64_t pa = pmm_alloc();
    if (!pa)
        panic("out of memory for page tables");
    if (!tables_ro && pa >= EARLY_MAP_BYTES)
        panic("page table frame above 4 GiB during boot");
    uint64_t *t = phys_to_virt(pa);
    memset(t, 0, PAGE_SIZE);
    return t;
}

/* The 4 KiB direct-map entry of physical page pa, splitting the 2 MiB
 * page that holds it if need be (the new table's own frame goes to
 * *split, to be protected in turn); NULL where RAM is not mapped. */
static uint64_t *dmap_entry(uint64_t pa, uint64_t *split)
{
    uint64_t va = kernel_dmap_base + pa;
    uint64_t *t = pml4;
    for (int l = 3; l > 0; l--) {
        uint64_t *e = &t[(va >> (12 + 9 * l)) & 511];
        if (!(*e & PTE_P))
            return NULL;
        if (*e & PTE_PS) {
            if (l != 1)
                panic("paging: a 1 GiB page in the direct map");
            uint64_t *pt = raw_table();
            uint64_t base = *e & PTE_ADDR & ~(LARGE_PAGE - 1);
            uint64_t bits = *e & ~PTE_ADDR & ~(uint64_t)PTE_PS;
            for (int i = 0; i < 512; i++)
                pt[i] = (base + (uint64_t)i * PAGE_SIZE) | bits;
            *e = virt_to_phys(pt) | PTE_P | PTE_W;
            invlpg(va & ~(LARGE_PAGE - 1));
            *split = virt_to_phys(pt);
        }
        t = phys_to_virt(*e & PTE_ADDR);
    }
    return &t[(va >> 12) & 511];
}

/* Make the direct-map alias of table page pa read-only, and that of any
 * table made to split a large page on the way. Ends: each split turns
 * one more 2 MiB page into 4 KiB pages. */
static void protect_table(uint64_t pa)
{
    while (pa) {
        uint64_t split = 0;
        uint64_t *e = dmap_entry(pa, &split);
        if (e && (*e & PTE_W)) {
            *e &= ~(uint64_t)PTE_W;
            invlpg(kernel_dmap_base + pa);
        }
        pa = split;
    }
}

static uint64_t *new_table(void)
{
    uint64_t *t = raw_table();
    if (tables_ro)
        protect_table(virt_to_phys(t));
    return t;
}

/* Every table page under t (level 3 = PML4), t included. */
static void protect_tree(uint64_t *t, int level)
{
    protect_table(virt_to_phys(t));
    if (level == 0)
        return;
    for (int i = 0; i < 512; i++)
        if ((t[i] & PTE_P) && !(t[i] & PTE_PS))
            protect_tree(phys_to_virt(t[i] & PTE_ADDR), level - 1);
}

int vm_is_page_table(uint64_t va)
{
    if (!pml4 || va < kernel_dmap_base || va - kernel_dmap_base >= pmm_limit())
        return 0;
    uint64_t pa = (va - kernel_dmap_base) & PTE_ADDR;
    /* The tree is small (tens of pages): a walk is fine on a fault path. */
    const uint64_t *stack[4] = {pml4};
    unsigned idx[4] = {0};
    int level = 3;
    if (virt_to_phys(pml4) == pa)
        return 1;
    while (level <= 3) {
        const uint64_t *t = stack[3 - level];
        if (idx[3 - level] == 512 || level == 0) {
            level++;
            continue;
        }
        uint64_t e = t[idx[3 - level]++];
        if (!(e & PTE_P) || (e & PTE_PS))
            continue;
        if ((e & PTE_ADDR) == pa)
            return 1;
        level--;
        stack[3 - level] = phys_to_virt(e & PTE_ADDR);
        idx[3 - level] = 0;
    }
    return 0;
}

/* The entry for va at `level` (3 = PML4 ... 0 = PT), creating tables above
 * it. Panics if a large page is in the way: the kernel never splits one. */
static uint64_t *walk(uint64_t va, int level)
{
    uint64_t *t = pml4;
    for (int l = 3; l > level; l--) {
        uint64_t *e = &t[(va >> (12 + 9 * l)) & 511];
        if (!(*e & PTE_P)) {
            uint64_t *n = new_table();
            /* Upper levels allow everything; the leaf decides W and NX. */
            *e = virt_to_phys(n) | PTE_P | PTE_W;
        } else if (*e & PTE_PS) {
            panic("paging: mapping over a large page");
        }
        t = phys_to_virt(*e & PTE_ADDR);
    }
    return &t[(va >> (12 + 9 * level)) & 511];
}

static uint64_t leaf_bits(unsigned flags)
{
    if ((flags & VM_WRITE) && (flags & VM_EXEC))
        panic("paging: W^X violation requested");
    uint64_t b = PTE_P | PTE_G;
    if (flags & VM_WRITE)
        b |= PTE_W;
    if (!(flags & VM_EXEC))
        b |= PTE_NX;
    if (flags & VM_UNCACHED)
        b |= PTE_PCD | PTE_PWT;
    else if (flags & VM_WRITE_COMBINE)
        b |= pat_wc ? PTE_PWT : PTE_PCD | PTE_PWT;
    return b;
}

void vm_map(uint64_t va, uint64_t pa, size_t len, unsigned flags)
{
    if ((va | pa | len) % PAGE_SIZE)
        panic("paging: unaligned mapping");
    uint64_t bits = leaf_bits(flags);
    window_open();
    for (size_t off = 0; off < len; off += PAGE_SIZE) {
        uint64_t *e = walk(va + off, 0);
        uint64_t v = ((pa + off) & PTE_ADDR) | bits;
        if (shared && (*e & PTE_P) && *e != v)
            panic("paging: a mapping changed while another CPU runs (no TLB shootdown)");
        *e = v;
        invlpg(va + off);
    }
    window_close();
}

void paging_share(void)
{
    shared = 1;
}

static void unmap(uint64_t va, size_t len)
{
    window_open();
    for (size_t off = 0; off < len; off += PAGE_SIZE) {
        uint64_t *e = walk(va + off, 0);
        *e = 0;
        invlpg(va + off);
    }
    window_close();
}

void vm_unmap(uint64_t va, size_t len)
{
    if (shared)
        panic("paging: a mapping removed while another CPU runs (no TLB shootdown)");
    unmap(va, len);
}

void vm_unmap_private(uint64_t va, size_t len)
{
    unmap(va, len);
}

static void *map_window(uint64_t pa, size_t len, unsigned type)
{
    if (len && pa % LARGE_PAGE == 0 && len % LARGE_PAGE == 0) {
        /* In a 2 MiB entry PAT's index bit moves to bit 12; it stays 0. */
        uint64_t bits = leaf_bits(VM_WRITE | type) | PTE_PS;
        uint64_t va = (mmio_next + LARGE_PAGE - 1) & ~(LARGE_PAGE - 1);
        window_open();
        for (size_t off = 0; off < len; off += LARGE_PAGE) {
            uint64_t *e = walk(va + off, 1);
            if (*e & PTE_P)
                panic("paging: MMIO window reused");
            *e = (pa + off) | bits;
            invlpg(va + off);
        }
        window_close();
        mmio_next = va + len + PAGE_SIZE;
        return (void *)va;
    }
    uint64_t off = pa % PAGE_SIZE;
    uint64_t start = pa - off;
    size_t size = (len + off + PAGE_SIZE - 1) & ~(size_t)(PAGE_SIZE - 1);
    uint64_t va = mmio_next;
    vm_map(va, start, size, VM_WRITE | type);
    /* One unmapped page between windows catches overruns. */
    mmio_next += size + PAGE_SIZE;
    return (void *)(va + off);
}

void *vm_map_mmio(uint64_t pa, size_t len) { return map_window(pa, len, VM_UNCACHED); }

void *vm_map_mmio_wc(uint64_t pa, size_t len) { return map_window(pa, len, VM_WRITE_COMBINE); }

uint64_t vm_window_reserve(size_t len)
{
    uint64_t va = mmio_next;
    mmio_next += ((len + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1)) + PAGE_SIZE;
    return va;
}

int vm_is_mapped(uint64_t va)
{
    const uint64_t *t = pml4;
    for (int l = 3; l >= 0; l--) {
        uint64_t e = t[(va >> (12 + 9 * l)) & 511];
        if (!(e & PTE_P))
            return 0;
        if (l == 0 || (e & PTE_PS))
            return 1;
        t = phys_to_virt(e & PTE_ADDR);
    }
    return 0;
}

/* Direct-map [start, end) of physical memory: 2 MiB pages where possible. */
static void map_direct(uint64_t start, uint64_t end)
{
    uint64_t bits = leaf_bits(VM_WRITE);
    uint64_t a = start;
    while (a < end) {
        if (a % LARGE_PAGE == 0 && end - a >= LARGE_PAGE) {
            uint64_t *e = walk(kernel_dmap_base + a, 1);
            if (!(*e & PTE_P))
                *e = a | bits | PTE_PS;
            a += LARGE_PAGE;
        } else {
            uint64_t *e = walk(kernel_dmap_base + a, 0);
            *e = a | bits;
            a += PAGE_SIZE;
        }
    }
}

static void map_image(const char *start, const char *end, unsigned flags)
{
    vm_map((uint64_t)start, kimage_to_phys(start), (size_t)(end - start), flags);
}

void paging_init(const struct boot_info *bi)
{
    uint32_t id[4];
    cpuid(1, 0, id);
    if (id[3] & (1u << 16)) {
        wrmsr(MSR_PAT, PAT_VALUE);
        pat_wc = 1;
    }
    pml4 = new_table();
    mmio_next = kaslr_mmio_base();

    map_image(__text_start, __text_end, VM_EXEC);
    map_image(__rodata_start, __rodata_end, VM_READ);
    map_image(__data_start, __kernel_end, VM_WRITE);

    /* RAM at DMAP_BASE, except the kernel image: its text must have no
     * writable alias. Firmware-reserved ranges stay unmapped until a driver
     * maps what it needs. */
    uint64_t kstart = KERNEL_PHYS, kend = kimage_to_phys(__kernel_end);
    if (pmm_limit() > STACK_BASE - kernel_dmap_base)
        panic("paging: more RAM than the direct map's window holds");
    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type != MEM_USABLE && r->type != MEM_ACPI_RECLAIM && r->type != MEM_ACPI_NVS)
            continue;
        uint64_t start = r->base & ~(uint64_t)(PAGE_SIZE - 1);
        uint64_t end = (r->base + r->len + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
        if (start < kstart)
            map_direct(start, end < kstart ? end : kstart);
        if (end > kend)
            map_direct(start > kend ? start : kend, end);
    }

    /* From here the tables are read-only: those built so far now, each
     * later one as it is made (new_table). Still on the early tables,
     * whose direct map is writable, so the splits need no window. */
    protect_tree(pml4, 3);
    tables_ro = 1;

    /* Global pages survive CR3 reloads; all kernel mappings are global. */
    uint64_t cr4;
    __asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
    __asm__ volatile("mov %0, %%cr4" : : "r"(cr4 | (1 << 7)));
    write_cr3(virt_to_phys(pml4));
}

void paging_cpu_init(void)
{
    if (pat_wc)
        wrmsr(MSR_PAT, PAT_VALUE);
    uint64_t cr4;
    __asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
    __asm__ volatile("mov %0, %%cr4" : : "r"(cr4 | (1 << 7)));
}
