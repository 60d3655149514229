/*
 * bytes.c - growable byte FIFOs: the simulated network's pipes. Aborts on
 * out-of-memory, which in the simulator is a harness failure, not a finding.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

void bq_push(bytes_q *q, const uint8_t *p, size_t n)
{
    if (q->len + n > q->cap) {
        size_t cap = q->cap ? q->cap : 256;
        while (cap < q->len + n)
            cap *= 2;
        uint8_t *np = realloc(q->p, cap);
        if (!np)
            abort();
        q->p = np;
        q->cap = cap;
    }
    if (n)
        memcpy(q->p + q->len, p, n);
    q->len += n;
}

void bq_pop(bytes_q *q, size_t n)
{
    if (n > q->len)
        abort();
    if (n == 0)
        return;
    memmove(q->p, q->p + n, q->len - n);
    q->len -= n;
}

void bq_free(bytes_q *q)
{
    free(q->p);
    q->p = NULL;
    q->len = q->cap = 0;
}
