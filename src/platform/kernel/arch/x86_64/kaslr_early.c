/*
 * kaslr_early.c - the boot-time half of KASLR (SPEC B5). boot.S calls
 * kaslr_early() in 64-bit mode, still on the identity map and before
 * anything of the higher half has run. It draws early entropy (RDSEED or
 * RDRAND when the CPU has them, else TSC jitter around CMOS reads mixed
 * with the RTC: there is no DRBG yet), picks the layout (kaslr_plan.c),
 * applies the relocation table to the image through the identity map,
 * and maps the image at its new address and the first 4 GiB of RAM at the
 * new direct-map base with 2 MiB pages for the rest of the boot (the
 * final tables come from mm/paging.c). Compiled position-independent and
 * linked into the fixed boot section, like kaslr_plan.c; no address is
 * ever printed from here.
 */
#include "arch/x86_64/cpu.h" /* inline only: compiled into this section */
#include "arch/x86_64/kaslr_plan.h"
#include "arch/x86_64/memlayout.h"

/* From boot.S: the early top-level table and spare zeroed table pages. */
extern uint64_t early_pml4[512];
extern uint64_t early_pool[][512];
/* From linker.ld: where the image ends (physical) and the table. */
extern const uint8_t __kernel_end_phys[], __kreloc_start[], __kreloc_end[];

enum { POOL_PAGES = 12, EARLY_MAP_2M = (int)(EARLY_MAP_BYTES / 0x200000) };
#define PTE_ADDR 0x000ffffffffff000ull

/* Called by boot.S; its result, read by kmain_early through its
 * physical address. */
void kaslr_early(void);
extern struct kaslr_layout kaslr_boot_layout;
struct kaslr_layout kaslr_boot_layout;
static unsigned pool_used;

/* A refusal on COM1 (the console is in the higher half, not mapped yet),
 * then halt: as boot.S's fail32. */
static _Noreturn void halt(const char *msg)
{
    for (const char *c = msg; *c; c++) {
        while (!(inb(0x3FD) & 0x20))
            ;
        outb(0x3F8, (uint8_t)*c);
    }
    for (;;)
        __asm__ volatile("cli; hlt");
}

/* One word from RDSEED (source 1) or RDRAND (source 2), 0 on failure. */
static int hw_word(enum kaslr_source src, uint64_t *v)
{
    for (int tries = 0; tries < 64; tries++) {
        unsigned char ok;
        if (src == KASLR_SRC_RDSEED)
            __asm__ volatile("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok));
        else
            __asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok));
        if (ok)
            return 1;
    }
    return 0;
}

static uint64_t mix(uint64_t s, uint64_t x)
{
    s ^= x;
    s *= 0x9E3779B97F4A7C15ull;
    return s ^ (s >> 29);
}

/* splitmix64's output function: independent-looking words from a state. */
static uint64_t next_word(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The fallback: the TSC's start value, the RTC's date and time, and 256
 * samples of how long a CMOS read takes (bus and emulation jitter). Weak
 * against an observer of the boot, but different on every boot; the
 * DRBG's own seeding comes later and does not rely on this. */
static uint64_t jitter_state(void)
{
    uint64_t s = mix(0, rdtsc());
    static const uint8_t rtc_regs[] = {0, 2, 4, 7, 8, 9};
    for (unsigned i = 0; i < sizeof rtc_regs; i++) {
        outb(0x70, rtc_regs[i]);
        s = mix(s, inb(0x71));
    }
    uint64_t last = rdtsc();
    for (int i = 0; i < 256; i++) {
        outb(0x70, (uint8_t)(i & 0x0f));
        (void)inb(0x71);
        uint64_t t = rdtsc();
        s = mix(s, t - last);
        last = t;
    }
    return s;
}

static enum kaslr_source draw(uint64_t rnd[4])
{
    uint32_t r[4];
    cpuid(0, 0, r);
    uint32_t max = r[0];
    int rdseed = 0, rdrand = 0;
    if (max >= 7) {
        cpuid(7, 0, r);
        rdseed = (r[1] >> 18) & 1;
    }
    cpuid(1, 0, r);
    rdrand = (r[2] >> 30) & 1;
    for (enum kaslr_source src = KASLR_SRC_RDSEED; src <= KASLR_SRC_RDRAND; src++) {
        if (!(src == KASLR_SRC_RDSEED ? rdseed : rdrand))
            continue;
        int ok = 1;
        for (int i = 0; i < 4 && ok; i++)
            ok = hw_word(src, &rnd[i]);
        if (ok)
            return src;
    }
    uint64_t s = jitter_state();
    for (int i = 0; i < 4; i++)
        rnd[i] = next_word(&s);
    return KASLR_SRC_JITTER;
}

static uint64_t *table_below(uint64_t *entry)
{
    if (!(*entry & 1)) {
        if (pool_used == POOL_PAGES)
            halt("tern: kaslr: out of early page tables; halted\r\n");
        *entry = (uint64_t)(uintptr_t)early_pool[pool_used++] | 3;
    }
    return (uint64_t *)(uintptr_t)(*entry & PTE_ADDR);
}

/* Map the 2 MiB page at va to pa, present and writable (for the boot only:
 * mm/paging.c builds the W^X tables). */
static void map_2m(uint64_t va, uint64_t pa)
{
    uint64_t *pdpt = table_below(&early_pml4[(va >> 39) & 511]);
    uint64_t *pd = table_below(&pdpt[(va >> 30) & 511]);
    pd[(va >> 21) & 511] = pa | 0x83;
}

/* A relocation site's link address to its bytes through the identity
 * map: the higher half lies at KERNEL_VMA + physical, the boot section at
 * its physical address; NULL outside the image. */
static uint8_t *site_at(void *ctx, uint64_t addr)
{
    uint64_t end = *(const uint64_t *)ctx;
    uint64_t pa = addr >= KERNEL_VMA ? addr - KERNEL_VMA : addr;
    if (pa < KERNEL_PHYS || pa > end - 8)
        return 0;
    return (uint8_t *)(uintptr_t)pa;
}

void kaslr_early(void)
{
    uint64_t t0 = rdtsc();
    uint64_t end = (uint64_t)(uintptr_t)__kernel_end_phys;
    uint64_t rnd[4];
    enum kaslr_source src = draw(rnd);
    struct kaslr_layout *l = &kaslr_boot_layout;
    if (kaslr_plan(rnd, end, l) != 0)
        halt("tern: kaslr: the image does not fit in the kernel window; halted\r\n");
    l->source = src;
    long n = kreloc_apply(__kreloc_start, (size_t)(__kreloc_end - __kreloc_start), l->slide,
                          site_at, &end);
    if (n < 0)
        halt("tern: kaslr: the relocation table is damaged; halted\r\n");
    l->reloc_count = (uint32_t)n;
    for (uint64_t pa = 0; pa < end; pa += 0x200000)
        map_2m(KERNEL_VMA + l->slide + pa, pa);
    for (uint64_t i = 0; i < (uint64_t)EARLY_MAP_2M; i++)
        map_2m(DMAP_BASE + l->dmap_off + i * 0x200000, i * 0x200000);
    l->tsc_cycles = rdtsc() - t0;
}
