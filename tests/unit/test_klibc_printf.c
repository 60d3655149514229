/*
 * test_klibc_printf.c - the kernel's vsnprintf (libc/printf.c) compiled for
 * the host as klibc_snprintf and compared with glibc's snprintf for every
 * conversion the kernel supports, including truncation.
 */
/* strnlen, strcasecmp: POSIX, used as the reference. */
#define _DEFAULT_SOURCE
#include "test.h"

/* Truncation is what some of these cases test. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <limits.h>
#include <stdarg.h>

#define vsnprintf klibc_vsnprintf
#define snprintf klibc_snprintf
int klibc_vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap);
int klibc_snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...);
#include "platform/kernel/libc/printf.c"
#undef vsnprintf
#undef snprintf

/* Format with both implementations into buffers of several sizes. */
#define SAME(...)                                                                  \
    do {                                                                           \
        for (size_t sz_ = 0; sz_ <= 64; sz_ += (sz_ < 8 ? 1 : 28)) {               \
            char got_[64], want_[64];                                              \
            memset(got_, '#', sizeof got_);                                        \
            memset(want_, '#', sizeof want_);                                      \
            int g_ = klibc_snprintf(got_, sz_, __VA_ARGS__);                       \
            int w_ = snprintf(want_, sz_, __VA_ARGS__);                            \
            CHECK_EQ(g_, w_);                                                      \
            CHECK_MEM(got_, want_, sizeof got_);                                   \
        }                                                                          \
    } while (0)

TEST(klibc_printf_integers)
{
    SAME("%d %i %d", 0, -1, INT_MIN);
    SAME("%d|%5d|%-5d|%05d|%+d|% d", 42, 42, 42, -42, 42, 42);
    SAME("%u %x %X %o", 4000000000u, 0xdeadbeefu, 0xabcu, 8u);
    SAME("%#x %#X %08x %.3d %.0d|%5.3d", 255u, 255u, 0x1234u, 7, 0, -7);
    SAME("%ld %lu %lx", LONG_MIN, ULONG_MAX, 0x123456789abcdefUL);
    SAME("%lld %llu %llx", LLONG_MIN, ULLONG_MAX, 0xfedcba9876543210ULL);
    SAME("%zu %zx", (size_t)12345678901ULL, (size_t)0xffff);
    SAME("%hd %hu %hhd %hhu", 70000, 70000, 300, 300);
    SAME("%*d|%-*d|%.*d", 6, 1, 6, 2, 4, 3);
}

TEST(klibc_printf_text)
{
    SAME("plain text, no conversions");
    SAME("%s|%10s|%-10s|%.2s|%c|%3c|%-3c|%%", "abc", "abc", "abc", "abc", 'x', 'y', 'z');
    SAME("%s", "");
    SAME("%p", (void *)0x1234);
    SAME("0123456789012345678901234567890123456789012345678901234567890123456789");
}
