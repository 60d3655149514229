/*
 * stack_chk.h - the stack protector's guard value and failure hook, and
 * the one place that decides how a fresh guard is formed.
 */
#ifndef TERN_KLIBC_STACK_CHK_H
#define TERN_KLIBC_STACK_CHK_H

#include <stdint.h>

extern uintptr_t __stack_chk_guard;
_Noreturn void __stack_chk_fail(void);

/* Make a guard from 64 random bits (the low byte cleared, so a string
 * overflow cannot write a copy of it) and install it; returns the guard it
 * replaced. Every protected frame live at the moment holds the old value
 * and fails its check on return: callers may use it only where no such
 * frame will ever return, and must not be protected themselves (main.c
 * says where its two calls are and why they are safe). */
uintptr_t stack_guard_replace(uint64_t random);

#ifdef TERN_TEST_HOOKS
/* Test builds: overrun a local buffer on purpose so that the function's
 * canary check fails (the panic's report proves the guard in use still
 * catches a smashed frame). Does not return. */
void stack_guard_smash_selftest(void);
#endif

#endif
