/*
 * string.c - memory and string functions for the kernel. memcpy/memset use
 * "rep movsb/stosb", which modern x86 CPUs (ERMS) run at full cache-line
 * speed and which costs no SSE state; the other functions are plain C.
 * Also compiled into the host unit tests under renamed symbols
 * (tests/unit/test_klibc_string.c), so it includes nothing kernel-specific.
 * Built with -fno-tree-loop-distribute-patterns so the compiler never turns
 * these loops back into calls to themselves.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
    void *ret = dst;
#if defined(__x86_64__)
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--)
        *d++ = *s++;
#endif
    return ret;
}

void *memset(void *dst, int c, size_t n)
{
    void *ret = dst;
#if defined(__x86_64__)
    __asm__ volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(c) : "memory");
#else
    unsigned char *d = dst;
    while (n--)
        *d++ = (unsigned char)c;
#endif
    return ret;
}

void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    /* Forward copy is safe unless dst starts inside [src, src + n). The
     * comparison is done on integers: the pointers may be unrelated. */
    if ((uintptr_t)d - (uintptr_t)s >= n)
        return memcpy(dst, src, n);
    /* Overlapping with dst above src: copy backwards, 8 bytes at a time
     * while at least 8 remain. */
    typedef uint64_t __attribute__((may_alias, aligned(1))) u64_unaligned;
    while (n >= 8) {
        n -= 8;
        uint64_t w = *(const u64_unaligned *)(s + n);
        *(u64_unaligned *)(d + n) = w;
    }
    while (n) {
        n--;
        d[n] = s[n];
    }
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

void *memchr(const void *s, int c, size_t n)
{
    const unsigned char *p = s;
    for (size_t i = 0; i < n; i++)
        if (p[i] == (unsigned char)c)
            return (void *)(p + i);
    return NULL;
}

size_t strlen(const char *s)
{
    const char *p = s;
    while (*p)
        p++;
    return (size_t)(p - s);
}

size_t strnlen(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n])
        n++;
    return n;
}

int strcmp(const char *a, const char *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    while (*x && *x == *y) {
        x++;
        y++;
    }
    return (*x > *y) - (*x < *y);
}

int strncmp(const char *a, const char *b, size_t n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (; n; n--, x++, y++) {
        if (*x != *y)
            return *x < *y ? -1 : 1;
        if (!*x)
            break;
    }
    return 0;
}

char *strchr(const char *s, int c)
{
    for (;; s++) {
        if (*s == (char)c)
            return (char *)s;
        if (!*s)
            return NULL;
    }
}

char *strrchr(const char *s, int c)
{
    const char *last = NULL;
    for (;; s++) {
        if (*s == (char)c)
            last = s;
        if (!*s)
            return (char *)last;
    }
}

char *strstr(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (!n)
        return (char *)haystack;
    for (; *haystack; haystack++)
        if (*haystack == *needle && !strncmp(haystack, needle, n))
            return (char *)haystack;
    return NULL;
}

/* The first character of s that is also in accept (the broker's ACL checks
 * a substituted value for '/', '+' and '#'). */
char *strpbrk(const char *s, const char *accept)
{
    for (; *s; s++)
        if (strchr(accept, *s))
            return (char *)s;
    return NULL;
}

size_t strspn(const char *s, const char *accept)
{
    size_t n = 0;
    while (s[n] && strchr(accept, s[n]))
        n++;
    return n;
}

size_t strcspn(const char *s, const char *reject)
{
    size_t n = 0;
    while (s[n] && !strchr(reject, s[n]))
        n++;
    return n;
}

char *strncpy(char *restrict dst, const char *restrict src, size_t n)
{
    size_t i = 0;
    for (; i < n && src[i]; i++)
        dst[i] = src[i];
    for (; i < n; i++)
        dst[i] = '\0';
    return dst;
}

/* wolfSSL's PEM writer (wc_DerToPem, certificate generation) needs it. */
char *strncat(char *restrict dst, const char *restrict src, size_t n)
{
    char *end = dst + strlen(dst);
    size_t i = 0;
    for (; i < n && src[i]; i++)
        end[i] = src[i];
    end[i] = '\0';
    return dst;
}

int strncasecmp(const char *a, const char *b, size_t n)
{
    for (; n; n--, a++, b++) {
        int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
        if (x != y)
            return x < y ? -1 : 1;
        if (!x)
            break;
    }
    return 0;
}

int strcasecmp(const char *a, const char *b)
{
    return strncasecmp(a, b, SIZE_MAX);
}
