/*
 * limits.h - the C library's part of <limits.h>. GCC's own limits.h
 * (first on the include path) defines CHAR_BIT, INT_MAX and the rest and
 * then includes the C library's with #include_next; the kernel's adds
 * only what POSIX puts there and portable code (wolfSSL) may test.
 */
#ifndef TERN_KLIBC_LIMITS_H
#define TERN_KLIBC_LIMITS_H

#ifndef SSIZE_MAX
#define SSIZE_MAX __LONG_MAX__
#endif

#endif
