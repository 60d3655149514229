/*
 * ctcmp.c - the constant-time comparison of secrets (passwd.h): alone in
 * its file so the constant-time tests (tests/ct) time exactly this code,
 * compiled as they compile it.
 */
#include "broker/passwd.h"

bool broker_ct_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    /* OR of XORs over every byte: no branch on the data, no early exit.
     * volatile keeps the compiler from turning the loop back into one. */
    volatile uint8_t diff = 0;
    for (size_t i = 0; i < n; i++)
        diff = (uint8_t)(diff | (a[i] ^ b[i]));
    return diff == 0;
}
