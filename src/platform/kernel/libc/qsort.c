/*
 * qsort.c - qsort for portable code (the store sorts its commit-latency
 * window). Heapsort: O(n log n) at worst, no recursion and no allocation,
 * so its stack use is fixed whatever the input; not stable, as qsort need
 * not be.
 */
#include <stdlib.h>

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
    while (size-- > 0) {
        unsigned char t = *a;
        *a++ = *b;
        *b++ = t;
    }
}

/* Move element i down the heap of n elements until its children are not
 * larger. */
static void sift_down(unsigned char *base, size_t i, size_t n, size_t size,
                      int (*cmp)(const void *, const void *))
{
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            return;
        if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size) < 0)
            child++;
        if (cmp(base + i * size, base + child * size) >= 0)
            return;
        swap_bytes(base + i * size, base + child * size, size);
        i = child;
    }
}

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    unsigned char *b = base;

    if (n < 2 || size == 0)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(b, i, n, size, cmp);
    for (size_t end = n - 1; end > 0; end--) {
        swap_bytes(b, b + end * size, size);
        sift_down(b, 0, end, size, cmp);
    }
}
