/*
 * math.h - the classification macros, constants and fabs that portable
 * code includes math.h for (SQLite), from the compiler's builtins. No
 * out-of-line functions: the kernel's own code has no floating point, and
 * SQLite is built without its math functions.
 */
#ifndef TERN_KLIBC_MATH_H
#define TERN_KLIBC_MATH_H

#define HUGE_VAL (__builtin_huge_val())
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
/* Expanded inline where used (SQLite compiles with SSE; the kernel does
 * not, so no out-of-line double function can live in libc). */
#define fabs(x) __builtin_fabs(x)

#endif
