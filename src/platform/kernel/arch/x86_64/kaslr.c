/*
 * kaslr.c - the kernel proper's view of the random layout (kaslr.h).
 * kernel_slide and kernel_dmap_base are boot structures, written once by
 * kaslr_adopt before any address conversion.
 */
#include "arch/x86_64/kaslr.h"

#include "arch/x86_64/kaslr_plan.h"
#include "arch/x86_64/memlayout.h"
#include "console.h"

#include <stdio.h>

uint64_t kernel_slide;
uint64_t kernel_dmap_base = DMAP_BASE;
static struct kaslr_layout layout;

void kaslr_adopt(uint64_t layout_phys)
{
    layout = *(const struct kaslr_layout *)(uintptr_t)layout_phys;
    kernel_slide = layout.slide;
    kernel_dmap_base = DMAP_BASE + layout.dmap_off;
}

uint64_t kaslr_stack_base(void) { return STACK_BASE + layout.stack_off; }

uint64_t kaslr_mmio_base(void) { return MMIO_BASE + layout.mmio_off; }

static const char *source_name(uint32_t s)
{
    switch (s) {
    case KASLR_SRC_RDSEED: return "rdseed";
    case KASLR_SRC_RDRAND: return "rdrand";
    case KASLR_SRC_JITTER: return "tsc jitter and rtc, no rdrand";
    default: return "unknown";
    }
}

void kaslr_describe(char *buf, size_t len)
{
    snprintf(buf, len, "kernel %u bits, heap %u bits, stacks %u bits, mmio %u bits (%s)",
             layout.kernel_bits, layout.dmap_bits, layout.stack_bits, layout.mmio_bits,
             source_name(layout.source));
}

#ifdef TERN_TEST_HOOKS
void kaslr_show_bases(void)
{
    extern char __text_start[];
    kprintf("tern: kaslr: test build: kernel base %llx heap base %llx stack base %llx "
            "mmio base %llx (%u relocations)\n",
            (unsigned long long)(uintptr_t)__text_start, (unsigned long long)kernel_dmap_base,
            (unsigned long long)kaslr_stack_base(), (unsigned long long)kaslr_mmio_base(),
            layout.reloc_count);
}

void kaslr_show_cost(uint64_t tsc_hz)
{
    if (tsc_hz)
        kprintf("tern: kaslr: test build: layout, %u relocations and early maps took %llu us\n",
                layout.reloc_count,
                (unsigned long long)(layout.tsc_cycles * 1000000 / tsc_hz));
}
#endif
