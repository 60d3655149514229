/*
 * base64.h - the RFC 4648 base64 alphabet, header-only: the one table for
 * every piece that reads or writes base64 (PEM certificates in
 * config/certdate.c, password-file salts and keys in broker/passwd.c, the
 * WebSocket key and accept value in conn/wsupgrade.c). Each caller keeps
 * its own framing (line breaks, padding rules, fixed lengths).
 */
#ifndef TERN_TEXT_BASE64_H
#define TERN_TEXT_BASE64_H

/* The 64 characters in value order. */
static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The value (0..63) of base64 character c, or -1 for any other byte,
 * '=' and NUL included. */
static inline int base64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

#endif
