/*
 * stack_chk.c - support for -fstack-protector-strong with a global guard
 * (-mstack-protector-guard=global: there is no TLS in the kernel). The guard
 * starts as a fixed value and is replaced from the CPU's random number
 * instructions or the TSC as soon as the kernel starts (main.c).
 */
#include "libc/stack_chk.h"

#include "panic.h"

uintptr_t __stack_chk_guard = 0x595e9fbd94fda766ull;

_Noreturn void __stack_chk_fail(void)
{
    panic("stack smashing detected (stack protector)");
}
