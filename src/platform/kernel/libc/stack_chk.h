/*
 * stack_chk.h - the stack protector's guard value and failure hook.
 */
#ifndef TERN_KLIBC_STACK_CHK_H
#define TERN_KLIBC_STACK_CHK_H

#include <stdint.h>

extern uintptr_t __stack_chk_guard;
_Noreturn void __stack_chk_fail(void);

#endif
