/*
 * stdlib.c - atoi for lwIP's interface-name parsing. Decimal, optional
 * sign after leading white space; overflow wraps rather than being
 * undefined (computed in unsigned arithmetic).
 */
#include <ctype.h>
#include <stdlib.h>

int atoi(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    int neg = 0;
    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    unsigned v = 0;
    while (isdigit((unsigned char)*s))
        v = v * 10u + (unsigned)(*s++ - '0');
    return (int)(neg ? 0u - v : v);
}
