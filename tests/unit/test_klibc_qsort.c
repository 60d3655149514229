/*
 * test_klibc_qsort.c - the kernel's qsort (libc/qsort.c) compiled for the
 * host under a renamed symbol: sorted output equal to the C library's for
 * random, sorted, reversed and constant inputs of many lengths and element
 * sizes, under ASan/UBSan.
 */
#include "test.h"

#include <stdlib.h>

#define qsort klibc_qsort
void klibc_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
#include "platform/kernel/libc/qsort.c"
#undef qsort

struct rec {
    uint32_t key;
    uint8_t pad[3]; /* an odd element size */
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_rec(const void *a, const void *b)
{
    uint32_t x = ((const struct rec *)a)->key, y = ((const struct rec *)b)->key;
    return x < y ? -1 : x > y;
}

TEST(klibc_qsort_matches_libc)
{
    uint64_t r = 12345;
    for (size_t n = 0; n < 300; n += (n < 20 ? 1 : 37)) {
        for (int shape = 0; shape < 4; shape++) {
            uint64_t *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
            for (size_t i = 0; i < n; i++) {
                r = r * 6364136223846793005ull + 1;
                a[i] = shape == 0 ? r >> 40 : shape == 1 ? i : shape == 2 ? n - i : 7;
            }
            memcpy(b, a, n * sizeof *a);
            klibc_qsort(a, n, sizeof *a, cmp_u64);
            qsort(b, n, sizeof *b, cmp_u64);
            int same = n == 0 || memcmp(a, b, n * sizeof *a) == 0;
            free(a);
            free(b);
            CHECK(same);
        }
    }
}

TEST(klibc_qsort_odd_element_size)
{
    struct rec v[101];
    for (uint32_t i = 0; i < 101; i++)
        v[i] = (struct rec){(i * 7919u) % 101u, {1, 2, 3}};
    klibc_qsort(v, 101, sizeof v[0], cmp_rec);
    for (uint32_t i = 0; i < 101; i++) {
        CHECK_EQ(v[i].key, i);
        CHECK(v[i].pad[0] == 1 && v[i].pad[2] == 3);
    }
}
