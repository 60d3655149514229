/*
 * printf.c - vsnprintf/snprintf for the kernel: integers, characters,
 * strings and pointers; no floating point (the kernel runs without SSE).
 * Output is always NUL-terminated when size > 0 and the return value is the
 * length the full output would have had, as in C17.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct out {
    char *buf;
    size_t size;
    size_t len;
};

static void put(struct out *o, char c)
{
    if (o->len + 1 < o->size)
        o->buf[o->len] = c;
    o->len++;
}

static void put_padding(struct out *o, char c, int n)
{
    while (n-- > 0)
        put(o, c);
}

enum { F_LEFT = 1, F_ZERO = 2, F_PLUS = 4, F_SPACE = 8, F_ALT = 16 };

static void put_number(struct out *o, uint64_t v, int negative, unsigned base, int upper,
                       int flags, int width, int prec)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = digits[v % base];
        v /= base;
    } while (v);
    if (prec == 0 && n == 1 && tmp[0] == '0')
        n = 0;
    int zeros = prec > n ? prec - n : 0;
    char sign = negative ? '-' : (flags & F_PLUS) ? '+' : (flags & F_SPACE) ? ' ' : 0;
    const char *prefix = (flags & F_ALT) && base == 16 ? (upper ? "0X" : "0x") : "";
    int prefix_len = (int)strlen(prefix);
    int total = n + zeros + (sign ? 1 : 0) + prefix_len;
    if ((flags & F_ZERO) && !(flags & F_LEFT) && prec < 0 && width > total) {
        zeros += width - total;
        total = width;
    }
    if (!(flags & F_LEFT))
        put_padding(o, ' ', width - total);
    if (sign)
        put(o, sign);
    for (int i = 0; i < prefix_len; i++)
        put(o, prefix[i]);
    put_padding(o, '0', zeros);
    while (n)
        put(o, tmp[--n]);
    if (flags & F_LEFT)
        put_padding(o, ' ', width - total);
}

int vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap)
{
    struct out o = { buf, size, 0 };
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            put(&o, *p);
            continue;
        }
        p++;
        int flags = 0;
        for (;; p++) {
            if (*p == '-')
                flags |= F_LEFT;
            else if (*p == '0')
                flags |= F_ZERO;
            else if (*p == '+')
                flags |= F_PLUS;
            else if (*p == ' ')
                flags |= F_SPACE;
            else if (*p == '#')
                flags |= F_ALT;
            else
                break;
        }
        int width = 0;
        if (*p == '*') {
            width = va_arg(ap, int);
            if (width < 0) {
                flags |= F_LEFT;
                width = -width;
            }
            p++;
        } else {
            while (*p >= '0' && *p <= '9')
                width = width * 10 + (*p++ - '0');
        }
        int prec = -1;
        if (*p == '.') {
            p++;
            prec = 0;
            if (*p == '*') {
                prec = va_arg(ap, int);
                p++;
            } else {
                while (*p >= '0' && *p <= '9')
                    prec = prec * 10 + (*p++ - '0');
            }
        }
        int lng = 0; /* -2 hh, -1 h, 0 int, 1 long, 2 long long / size_t */
        if (*p == 'h') {
            lng = -1;
            if (*++p == 'h') {
                lng = -2;
                p++;
            }
        } else if (*p == 'l') {
            lng = 1;
            if (*++p == 'l') {
                lng = 2;
                p++;
            }
        } else if (*p == 'z') {
            lng = 2;
            p++;
        }
        switch (*p) {
        case 'd':
        case 'i': {
            int64_t v = lng >= 1 ? (lng == 1 ? va_arg(ap, long) : va_arg(ap, long long))
                                 : va_arg(ap, int);
            if (lng == -1)
                v = (short)v;
            else if (lng == -2)
                v = (signed char)v;
            uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            put_number(&o, mag, v < 0, 10, 0, flags, width, prec);
            break;
        }
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            uint64_t v = lng >= 1 ? (lng == 1 ? va_arg(ap, unsigned long)
                                              : va_arg(ap, unsigned long long))
                                  : va_arg(ap, unsigned);
            if (lng == -1)
                v = (unsigned short)v;
            else if (lng == -2)
                v = (unsigned char)v;
            unsigned base = *p == 'o' ? 8 : *p == 'u' ? 10 : 16;
            put_number(&o, v, 0, base, *p == 'X', flags, width, prec);
            break;
        }
        case 'p':
            put_number(&o, (uintptr_t)va_arg(ap, void *), 0, 16, 0, flags | F_ALT, width,
                       prec);
            break;
        case 'c': {
            char c = (char)va_arg(ap, int);
            if (!(flags & F_LEFT))
                put_padding(&o, ' ', width - 1);
            put(&o, c);
            if (flags & F_LEFT)
                put_padding(&o, ' ', width - 1);
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            int n = (int)(prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s));
            if (!(flags & F_LEFT))
                put_padding(&o, ' ', width - n);
            for (int i = 0; i < n; i++)
                put(&o, s[i]);
            if (flags & F_LEFT)
                put_padding(&o, ' ', width - n);
            break;
        }
        case '%':
            put(&o, '%');
            break;
        case '\0':
            p--; /* a lone '%' at the end: stop at the terminator */
            break;
        default:
            put(&o, '%');
            put(&o, *p);
            break;
        }
    }
    if (size)
        buf[o.len < size ? o.len : size - 1] = '\0';
    return (int)o.len;
}

int snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}
