/*
 * selftest.c - deliberate faults and internal checks for tests/kernel/.
 * Each fault test must end in the fatal report; each check prints
 * "selftest NAME: ok" or panics with what went wrong.
 */
#include "selftest.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "console.h"
#include "mm/kmalloc.h"
#include "mm/pmm.h"
#include "panic.h"
#include "store/kvfs_selftest.h"

#include <stdint.h>
#include <string.h>

#ifdef TERN_TEST_HOOKS

/* Deep recursion with a frame the compiler cannot drop or turn into a loop. */
static __attribute__((noinline)) unsigned recurse(unsigned depth, unsigned limit)
{
    volatile char frame[512];
    frame[0] = (char)depth;
    if (depth == limit)
        return 0;
    unsigned r = recurse(depth + 1, limit);
    return r + (unsigned)frame[0];
}

static void heap_check(void)
{
    size_t free0 = pmm_free_count();
    enum { N = 300 };
    void *ptrs[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            size_t size = (size_t)(i * 37 % 5000) + 1;
            ptrs[i] = kmalloc(size);
            if (!ptrs[i])
                panic("selftest heap: allocation failed");
            if (kmalloc_usable_size(ptrs[i]) < size)
                panic("selftest heap: usable size too small");
            memset(ptrs[i], (int)i, size);
        }
        for (int i = 0; i < N; i++) {
            size_t size = (size_t)(i * 37 % 5000) + 1;
            const unsigned char *p = ptrs[i];
            for (size_t j = 0; j < size; j++)
                if (p[j] != (unsigned char)i)
                    panic("selftest heap: allocations overlap");
        }
        for (int i = 0; i < N; i += 2)
            kfree(ptrs[i]);
        for (int i = 1; i < N; i += 2) {
            ptrs[i] = krealloc(ptrs[i], 3000);
            if (!ptrs[i] || ((unsigned char *)ptrs[i])[0] != (unsigned char)i)
                panic("selftest heap: krealloc lost data");
            kfree(ptrs[i]);
        }
    }
    struct kmalloc_stats st;
    kmalloc_get_stats(&st);
    if (st.allocations != 0 || st.bytes_in_use != 0)
        panic("selftest heap: statistics do not return to zero");
    /* One slab per class may stay cached. */
    if (free0 - pmm_free_count() > 16)
        panic("selftest heap: pages leaked");
    uint64_t a = pmm_alloc_contig(8);
    if (!a || a % PAGE_SIZE)
        panic("selftest heap: contiguous frames");
    pmm_free_contig(a, 8);
    kprintf("selftest heap: ok\n");
}

void selftest_run(const char *name)
{
    kprintf("selftest %s: start\n", name);
    /* Addresses go through a volatile so the compiler cannot see them. */
    volatile uintptr_t addr;
    if (!strcmp(name, "pagefault")) {
        addr = 8;
        *(volatile uint64_t *)addr = 1;
    } else if (!strcmp(name, "gpfault")) {
        /* A non-canonical address: #GP, not #PF. */
        addr = 0x8000000000000000ull;
        *(volatile uint64_t *)addr = 1;
    } else if (!strcmp(name, "stackoverflow")) {
        volatile unsigned limit = ~0u; /* opaque to the compiler: never reached */
        kprintf("%u\n", recurse(0, limit));
    } else if (!strcmp(name, "write-text")) {
        addr = (uintptr_t)&selftest_run;
        *(volatile uint8_t *)addr = 0xC3;
    } else if (!strcmp(name, "write-pagetable")) {
        /* The top-level table through its direct-map alias, rewritten
         * with its own value: harmless if it were allowed. */
        addr = (uintptr_t)phys_to_virt(read_cr3() & ~0xfffull);
        *(volatile uint64_t *)addr = *(volatile uint64_t *)addr;
    } else if (!strcmp(name, "exec-data")) {
        static uint8_t ret_insn[16] = { 0xC3 };
        ((void (*)(void))(uintptr_t)ret_insn)();
    } else if (!strcmp(name, "panic")) {
        panic("selftest requested a panic");
    } else if (!strcmp(name, "heap")) {
        heap_check();
        return;
    } else if (!strcmp(name, "kvfs")) {
        kvfs_selftest();
        return;
    } else if (selftest_kthread(name)) {
        return;
    } else if (selftest_halloc(name)) {
        return;
    } else {
        kprintf("selftest %s: unknown test\n", name);
        return;
    }
    panic("selftest: the fault did not happen");
}

#endif
