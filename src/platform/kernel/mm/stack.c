/*
 * stack.c - stacks in their own virtual window (from STACK_BASE plus a
 * random offset, arch/x86_64/kaslr.h). Each slot is a
 * 64 KiB unmapped guard followed by the stack's pages, mapped RW + NX. The
 * guard is larger than one page so that a function with a large frame cannot
 * jump over it into the stack below. The window only grows: stacks in a
 * unikernel live as long as the CPU that owns them.
 */
#include "mm/stack.h"

#include "arch/x86_64/kaslr.h"
#include "arch/x86_64/memlayout.h"
#include "mm/paging.h"
#include "mm/pmm.h"
#include "panic.h"

#include <string.h>

enum { GUARD_BYTES = 64 * 1024 };

/* Boot-CPU state: the window's random base (KASLR) and its next free
 * address; 0 until the first stack. */
static uint64_t stack_start, stack_next;

uint64_t stack_alloc(size_t pages)
{
    if (!stack_next)
        stack_start = stack_next = kaslr_stack_base();
    uint64_t base = stack_next + GUARD_BYTES;
    for (size_t i = 0; i < pages; i++) {
        uint64_t pa = pmm_alloc();
        if (!pa)
            panic("out of memory for a kernel stack");
        memset(phys_to_virt(pa), 0, PAGE_SIZE);
        vm_map(base + i * PAGE_SIZE, pa, PAGE_SIZE, VM_WRITE);
    }
    stack_next = base + pages * PAGE_SIZE;
    return stack_next;
}

int stack_is_guard(uint64_t addr)
{
    /* Inside the window, every unmapped address is guard. */
    return stack_next && addr >= stack_start && addr < stack_next && !vm_is_mapped(addr);
}
