/*
 * config_text.c - the config parser's messages, assembled by hand in the
 * caller's buffer (no snprintf: the unikernel's libc needs no formatted
 * output for this module), and the blank-trimming of views into the text.
 */
#include <string.h>

#include "config/config_internal.h"

/* Values longer than this are cut in messages so the line stays readable. */
enum { SHOWN_MAX = 40 };

void msg_putc(msgbuf *m, char ch)
{
    if (m->size == 0)
        return;
    if (m->len + 1 < m->size)
        m->buf[m->len++] = ch;
    m->buf[m->len] = '\0';
}

void msg_str(msgbuf *m, const char *s)
{
    while (*s)
        msg_putc(m, *s++);
}

void msg_uint(msgbuf *m, uint64_t v)
{
    char digits[20];
    size_t n = 0;

    do {
        digits[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    while (n > 0)
        msg_putc(m, digits[--n]);
}

/* Untrusted text between quotes: control and non-ASCII bytes become '?' so
 * the message stays one printable line; long text is cut with "...". */
void msg_quoted(msgbuf *m, span s)
{
    size_t shown = s.n > SHOWN_MAX ? SHOWN_MAX : s.n;

    msg_putc(m, '\'');
    for (size_t i = 0; i < shown; i++) {
        unsigned char ch = (unsigned char)s.p[i];

        msg_putc(m, ch >= 0x20 && ch < 0x7f ? (char)ch : '?');
    }
    if (shown < s.n)
        msg_str(m, "...");
    msg_putc(m, '\'');
}

/* Starts every message: "FILE:LINE: ". */
void msg_begin(msgbuf *m, const char *file, size_t line)
{
    m->len = 0;
    if (m->size > 0)
        m->buf[0] = '\0';
    msg_str(m, file ? file : "<config>");
    msg_putc(m, ':');
    msg_uint(m, line);
    msg_str(m, ": ");
}

bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

span trim(span s)
{
    while (s.n > 0 && is_blank(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n > 0 && is_blank(s.p[s.n - 1]))
        s.n--;
    return s;
}

bool span_is(span s, const char *word)
{
    size_t n = strlen(word);

    return s.n == n && memcmp(s.p, word, n) == 0;
}
