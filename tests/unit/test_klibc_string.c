/*
 * test_klibc_string.c - the kernel's string.c compiled for the host under
 * renamed symbols (klibc_*), checked against the host C library across
 * sizes, alignments and overlaps, under ASan/UBSan.
 */
/* strnlen, strcasecmp: POSIX, used as the reference. */
#define _DEFAULT_SOURCE
#include "test.h"

#include <stdlib.h>
#include <strings.h>

/* The kernel's definitions, renamed so they do not replace the host's. */
#define memcpy klibc_memcpy
#define memmove klibc_memmove
#define memset klibc_memset
#define memcmp klibc_memcmp
#define memchr klibc_memchr
#define strlen klibc_strlen
#define strnlen klibc_strnlen
#define strcmp klibc_strcmp
#define strncmp klibc_strncmp
#define strchr klibc_strchr
#define strrchr klibc_strrchr
#define strstr klibc_strstr
#define strpbrk klibc_strpbrk
#define strspn klibc_strspn
#define strcspn klibc_strcspn
#define strncpy klibc_strncpy
#define strncat klibc_strncat
#define strcasecmp klibc_strcasecmp
#define strncasecmp klibc_strncasecmp
void *klibc_memcpy(void *restrict dst, const void *restrict src, size_t n);
void *klibc_memmove(void *dst, const void *src, size_t n);
void *klibc_memset(void *dst, int c, size_t n);
int klibc_memcmp(const void *a, const void *b, size_t n);
void *klibc_memchr(const void *s, int c, size_t n);
size_t klibc_strlen(const char *s);
size_t klibc_strnlen(const char *s, size_t max);
int klibc_strcmp(const char *a, const char *b);
int klibc_strncmp(const char *a, const char *b, size_t n);
char *klibc_strchr(const char *s, int c);
char *klibc_strrchr(const char *s, int c);
char *klibc_strstr(const char *haystack, const char *needle);
char *klibc_strpbrk(const char *s, const char *accept);
size_t klibc_strspn(const char *s, const char *accept);
size_t klibc_strcspn(const char *s, const char *reject);
char *klibc_strncpy(char *restrict dst, const char *restrict src, size_t n);
char *klibc_strncat(char *restrict dst, const char *restrict src, size_t n);
int klibc_strcasecmp(const char *a, const char *b);
int klibc_strncasecmp(const char *a, const char *b, size_t n);
#include "platform/kernel/libc/string.c"
#undef memcpy
#undef memmove
#undef memset
#undef memcmp
#undef memchr
#undef strlen
#undef strnlen
#undef strcmp
#undef strncmp
#undef strchr
#undef strrchr
#undef strstr
#undef strpbrk
#undef strspn
#undef strcspn
#undef strncpy
#undef strncat
#undef strcasecmp
#undef strncasecmp

static int sign(int v) { return (v > 0) - (v < 0); }

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 3));
}

enum { BUF = 600 };

TEST(klibc_memcpy_sizes_and_alignments)
{
    unsigned char src[BUF], dst[BUF], want[BUF];
    for (size_t so = 0; so < 8; so++)
        for (size_t doff = 0; doff < 8; doff++)
            for (size_t n = 0; n < 300; n += (n < 40 ? 1 : 13)) {
                fill(src, BUF, (unsigned)(so + n));
                memset(dst, 0xAA, BUF);
                memset(want, 0xAA, BUF);
                memcpy(want + doff, src + so, n);
                CHECK(klibc_memcpy(dst + doff, src + so, n) == dst + doff);
                CHECK_MEM(dst, want, BUF);
            }
}

TEST(klibc_memset_sizes_and_alignments)
{
    unsigned char dst[BUF], want[BUF];
    for (size_t off = 0; off < 16; off++)
        for (size_t n = 0; n < 500; n += (n < 40 ? 1 : 17)) {
            memset(dst, 0x11, BUF);
            memset(want, 0x11, BUF);
            memset(want + off, 0x1C5, n); /* only the low byte counts */
            CHECK(klibc_memset(dst + off, 0x1C5, n) == dst + off);
            CHECK_MEM(dst, want, BUF);
        }
}

TEST(klibc_memmove_overlaps)
{
    unsigned char buf[BUF], want[BUF];
    for (size_t src = 0; src < 40; src += 3)
        for (size_t dst = 0; dst < 40; dst += 5)
            for (size_t n = 0; n < 200; n += 7) {
                fill(buf, BUF, (unsigned)n);
                memcpy(want, buf, BUF);
                memmove(want + dst, want + src, n);
                CHECK(klibc_memmove(buf + dst, buf + src, n) == buf + dst);
                CHECK_MEM(buf, want, BUF);
            }
}

TEST(klibc_memcmp_memchr)
{
    unsigned char a[64], b[64];
    fill(a, sizeof a, 1);
    memcpy(b, a, sizeof b);
    CHECK_EQ(klibc_memcmp(a, b, sizeof a), 0);
    CHECK_EQ(klibc_memcmp(a, b, 0), 0);
    for (size_t i = 0; i < sizeof a; i++) {
        b[i] = (unsigned char)(a[i] + 1);
        CHECK_EQ(sign(klibc_memcmp(a, b, sizeof a)), sign(memcmp(a, b, sizeof a)));
        CHECK_EQ(sign(klibc_memcmp(b, a, sizeof a)), sign(memcmp(b, a, sizeof a)));
        CHECK_EQ(klibc_memcmp(a, b, i), 0);
        b[i] = a[i];
    }
    /* Bytes compare as unsigned. */
    CHECK(klibc_memcmp("\x80", "\x01", 1) > 0);
    CHECK(klibc_memchr(a, a[10], sizeof a) == memchr(a, a[10], sizeof a));
    CHECK(klibc_memchr(a, 0x100 + a[5], sizeof a) == memchr(a, 0x100 + a[5], sizeof a));
    CHECK(klibc_memchr(a, a[10], 10) == memchr(a, a[10], 10));
}

static const char *const words[] = {
    "", "a", "b", "ab", "abc", "abd", "ABC", "aBc", "abcdefghijklmnop", "\x80x", "\x7fx",
    "mqtt/topic/#", "mqtt/topic", "Hello, World", "hello, world",
};
enum { NWORDS = sizeof words / sizeof words[0] };

TEST(klibc_string_compare)
{
    for (size_t i = 0; i < NWORDS; i++) {
        CHECK_EQ(klibc_strlen(words[i]), strlen(words[i]));
        for (size_t n = 0; n < 20; n++)
            CHECK_EQ(klibc_strnlen(words[i], n), strnlen(words[i], n));
        for (size_t j = 0; j < NWORDS; j++) {
            const char *a = words[i], *b = words[j];
            CHECK_EQ(sign(klibc_strcmp(a, b)), sign(strcmp(a, b)));
            CHECK_EQ(sign(klibc_strcasecmp(a, b)), sign(strcasecmp(a, b)));
            for (size_t n = 0; n < 6; n++) {
                CHECK_EQ(sign(klibc_strncmp(a, b, n)), sign(strncmp(a, b, n)));
                CHECK_EQ(sign(klibc_strncasecmp(a, b, n)), sign(strncasecmp(a, b, n)));
            }
            CHECK(klibc_strstr(a, b) == strstr(a, b));
            CHECK(klibc_strpbrk(a, b) == strpbrk(a, b));
            CHECK_EQ(klibc_strspn(a, b), strspn(a, b));
            CHECK_EQ(klibc_strcspn(a, b), strcspn(a, b));
        }
    }
}

TEST(klibc_string_search_and_copy)
{
    const char *s = "mqtt/topic/level";
    /* strpbrk as the broker's ACL uses it: is a value free of '/', '+', '#'? */
    const char *vals[] = { "", "client-1", "a/b", "+", "x#", "\x80/" };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        CHECK(klibc_strpbrk(vals[i], "/+#") == strpbrk(vals[i], "/+#"));
    for (int c = 0; c < 256; c++) {
        CHECK(klibc_strchr(s, c) == strchr(s, c));
        CHECK(klibc_strrchr(s, c) == strrchr(s, c));
    }
    char a[24], b[24];
    for (size_t n = 0; n < sizeof a; n++) {
        memset(a, 'x', sizeof a);
        memset(b, 'x', sizeof b);
        CHECK(klibc_strncpy(a, "hello", n) == a);
        strncpy(b, "hello", n);
        CHECK_MEM(a, b, sizeof a);
    }
}

TEST(klibc_strncat_appends_at_most_n_and_terminates)
{
    const char *tails[] = {"", "\n", "hello", "0123456789"};
    char a[32], b[32];
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
        for (size_t n = 0; n < 12; n++) {
            memset(a, 'x', sizeof a);
            memset(b, 'x', sizeof b);
            strcpy(a, "head");
            strcpy(b, "head");
            CHECK(klibc_strncat(a, tails[t], n) == a);
            strncat(b, tails[t], n);
            CHECK_MEM(a, b, sizeof a);
        }
    }
}
