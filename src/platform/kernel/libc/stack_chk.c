/*
 * stack_chk.c - support for -fstack-protector-strong with a global guard
 * (-mstack-protector-guard=global: there is no TLS in the kernel). The guard
 * starts as a fixed value, is replaced from the CPU's random number
 * instructions or the TSC as soon as the kernel starts, and again from the
 * DRBG once that is seeded (main.c, which says why both places are safe).
 */
#include "libc/stack_chk.h"

#include "panic.h"

#include <stddef.h>

uintptr_t __stack_chk_guard = 0x595e9fbd94fda766ull;

_Noreturn void __stack_chk_fail(void)
{
    panic("stack smashing detected (stack protector)");
}

/* Not protected: it has no array or address-taken local today, and the
 * attribute keeps it so even if one is added (its own canary would be
 * checked against the new guard). */
__attribute__((no_stack_protector)) uintptr_t stack_guard_replace(uint64_t random)
{
    uintptr_t old = __stack_chk_guard;
    /* A zero low byte stops string overflows from reproducing the guard. */
    __stack_chk_guard = (uintptr_t)(random & ~0xFFull);
    return old;
}

#ifdef TERN_TEST_HOOKS
/* The buffer is written through a pointer laundered by a volatile, and the
 * length is volatile too, so the compiler neither sees nor "optimises" the
 * overrun; 'A' bytes over the canary can never equal a guard whose low
 * byte is zero. Four words past the buffer reach the canary whatever the
 * padding; what lies beyond it (saved registers, the return address) is
 * only used after the check has failed. noinline: the check must be this
 * function's own. */
__attribute__((noinline)) void stack_guard_smash_selftest(void)
{
    volatile char buf[16];
    char *volatile p = (char *)(uintptr_t)buf;
    volatile size_t n = sizeof buf + 4 * sizeof(uintptr_t);
    for (size_t i = 0; i < n; i++)
        p[i] = 'A';
    (void)buf[0];
}
#endif
