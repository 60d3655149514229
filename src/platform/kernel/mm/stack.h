/*
 * stack.h - kernel stacks, each directly above an unmapped guard region so
 * an overflow faults (and is reported as such) instead of corrupting memory.
 */
#ifndef TERN_MM_STACK_H
#define TERN_MM_STACK_H

#include <stddef.h>
#include <stdint.h>

/* Allocate a stack of `pages` pages; returns its top (initial RSP). */
uint64_t stack_alloc(size_t pages);
/* 1 if addr lies in the guard region below some stack. */
int stack_is_guard(uint64_t addr);

#endif
