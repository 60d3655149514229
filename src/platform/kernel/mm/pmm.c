/*
 * pmm.c - page frame allocator over a bitmap (1 = in use), one bit per
 * 4 KiB frame up to the end of the highest usable region. The bitmap lives
 * in the first usable memory after the kernel image. Everything starts in
 * use; usable regions from the boot memory map are then freed, minus the
 * first 1 MiB (firmware data, future SMP trampoline), the kernel image and
 * the bitmap. A search hint makes the common case (next free frame) O(1);
 * allocation is lowest-address-first, which keeps the page tables built at
 * boot inside the early 4 GiB mapping. Freeing a free frame is a fatal bug.
 *
 * Shared by every CPU (the heap on the storage CPU takes slab pages here):
 * alloc and free run under a ticket spinlock (arch/x86_64/spinlock.h). It
 * is the innermost lock: the heap's is taken before it, never after, and
 * nothing here takes another. The counters are read without it (a
 * snapshot for reports). pmm_init runs before any other CPU starts.
 */
#include "mm/pmm.h"

#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/spinlock.h"
#include "panic.h"

#include <string.h>

extern char __kernel_end[];

struct pmm {
    uint64_t *bitmap;
    size_t frames;      /* frames covered by the bitmap */
    size_t free;        /* frames currently free */
    size_t total;       /* frames that were ever free */
    size_t hint;        /* no free frame below this index */
    struct spinlock lock; /* held by alloc and free (see the top) */
};

/* The one frame allocator, shared by the CPUs under pmm.lock. */
static struct pmm pmm;

static int is_used(size_t f) { return (pmm.bitmap[f / 64] >> (f % 64)) & 1; }
static void set_used(size_t f) { pmm.bitmap[f / 64] |= 1ull << (f % 64); }
static void set_free(size_t f) { pmm.bitmap[f / 64] &= ~(1ull << (f % 64)); }

static uint64_t round_up(uint64_t x) { return (x + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1); }
static uint64_t round_down(uint64_t x) { return x & ~(uint64_t)(PAGE_SIZE - 1); }

void pmm_init(const struct boot_info *bi)
{
    uint64_t limit = 0;
    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type == MEM_USABLE && r->base + r->len > limit)
            limit = r->base + r->len;
    }
    pmm.frames = round_down(limit) / PAGE_SIZE;
    size_t bitmap_bytes = round_up((pmm.frames + 63) / 64 * 8);

    /* The kernel image occupies [KERNEL_PHYS, kernel_end); the bitmap goes in
     * the first usable place above it that the early mapping reaches. */
    uint64_t kernel_end = round_up(kimage_to_phys(__kernel_end));
    uint64_t bitmap_phys = 0;
    for (unsigned i = 0; i < bi->nregions && !bitmap_phys; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type != MEM_USABLE)
            continue;
        uint64_t start = round_up(r->base > kernel_end ? r->base : kernel_end);
        uint64_t end = round_down(r->base + r->len);
        /* Not over the second boot module (the install payload) either. */
        if (bi->module2_len && start < bi->module2_phys + bi->module2_len &&
            start + bitmap_bytes > bi->module2_phys)
            start = round_up(bi->module2_phys + bi->module2_len);
        if (start < end && end - start >= bitmap_bytes && start + bitmap_bytes <= EARLY_MAP_BYTES)
            bitmap_phys = start;
    }
    if (!bitmap_phys)
        panic("no room for the page frame bitmap");
    pmm.bitmap = phys_to_virt(bitmap_phys);
    memset(pmm.bitmap, 0xFF, bitmap_bytes);

    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type != MEM_USABLE)
            continue;
        uint64_t start = round_up(r->base), end = round_down(r->base + r->len);
        for (uint64_t a = start; a < end; a += PAGE_SIZE) {
            if (a < 0x100000)
                continue;
            if (a >= KERNEL_PHYS && a < kernel_end)
                continue;
            if (a >= bitmap_phys && a < bitmap_phys + bitmap_bytes)
                continue;
            if (a + PAGE_SIZE > bi->module2_phys && a < bi->module2_phys + bi->module2_len)
                continue;
            size_t f = a / PAGE_SIZE;
            if (is_used(f)) {
                set_free(f);
                pmm.free++;
            }
        }
    }
    pmm.total = pmm.free;
    pmm.hint = 0;
}

/* pmm_alloc with the lock held. */
static uint64_t alloc_one(void)
{
    for (size_t w = pmm.hint / 64; w < (pmm.frames + 63) / 64; w++) {
        if (pmm.bitmap[w] == ~0ull)
            continue;
        size_t f = w * 64 + (size_t)__builtin_ctzll(~pmm.bitmap[w]);
        if (f >= pmm.frames)
            break;
        set_used(f);
        pmm.free--;
        pmm.hint = f + 1;
        return (uint64_t)f * PAGE_SIZE;
    }
    return 0;
}

uint64_t pmm_alloc(void)
{
    spin_lock(&pmm.lock);
    uint64_t pa = alloc_one();
    spin_unlock(&pmm.lock);
    return pa;
}

/* pmm_alloc_contig with the lock held. */
static uint64_t alloc_run(size_t pages)
{
    if (pages == 1)
        return alloc_one();
    size_t run = 0;
    for (size_t f = pmm.hint; f < pmm.frames; f++) {
        if (is_used(f)) {
            run = 0;
            continue;
        }
        if (++run == pages) {
            size_t first = f + 1 - pages;
            for (size_t i = first; i <= f; i++)
                set_used(i);
            pmm.free -= pages;
            return (uint64_t)first * PAGE_SIZE;
        }
    }
    return 0;
}

uint64_t pmm_alloc_contig(size_t pages)
{
    if (pages == 0)
        return 0;
    spin_lock(&pmm.lock);
    uint64_t pa = alloc_run(pages);
    spin_unlock(&pmm.lock);
    return pa;
}

/* pmm_free with the lock held. */
static void free_one(uint64_t phys)
{
    size_t f = phys / PAGE_SIZE;
    if (phys % PAGE_SIZE || f >= pmm.frames || !is_used(f) || phys < 0x100000)
        panic("page frame allocator: invalid or double free");
    set_free(f);
    pmm.free++;
    if (f < pmm.hint)
        pmm.hint = f;
}

void pmm_free(uint64_t phys)
{
    spin_lock(&pmm.lock);
    free_one(phys);
    spin_unlock(&pmm.lock);
}

void pmm_free_contig(uint64_t phys, size_t pages)
{
    spin_lock(&pmm.lock);
    for (size_t i = 0; i < pages; i++)
        free_one(phys + i * PAGE_SIZE);
    spin_unlock(&pmm.lock);
}

void pmm_lock_stats(struct spin_stats *out)
{
    spin_stats_read(&pmm.lock, out);
}

size_t pmm_free_count(void) { return pmm.free; }
size_t pmm_total_count(void) { return pmm.total; }
uint64_t pmm_limit(void) { return (uint64_t)pmm.frames * PAGE_SIZE; }
