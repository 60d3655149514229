/*
 * panic.h - fatal errors (SPEC A5): a clear report on every console, held
 * for TERN_FATAL_HOLD_MS (60 s in production, short in test builds), then a
 * reset. Production builds print no register values or addresses; debug
 * builds (TERN_DEBUG) add a register dump.
 */
#ifndef TERN_PANIC_H
#define TERN_PANIC_H

struct trap_frame;

_Noreturn void panic(const char *msg);
_Noreturn void fatal_trap(const struct trap_frame *tf);

#endif
