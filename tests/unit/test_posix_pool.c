/*
 * test_posix_pool.c - the daemon's small-block pool
 * (src/platform/posix/pool.c): size classes, reuse, malloc's blocks passing
 * through, realloc across classes and sources, empty slabs given back only
 * by trim, and the slab address set staying right as slabs come and go.
 */
#include "test.h"

#include "platform/posix/pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uintptr_t slab_base(const void *p)
{
    return (uintptr_t)p & ~(uintptr_t)(TERN_POOL_SLAB - 1);
}

TEST(pool_blocks_of_one_class_share_a_slab_and_are_8_aligned)
{
    tern_pool *p = tern_pool_create();
    char *b[100];

    CHECK(p != NULL);
    for (int i = 0; i < 100; i++) {
        b[i] = tern_pool_alloc(p, 248);
        CHECK(b[i] != NULL);
        CHECK_EQ((uintptr_t)b[i] % 8u, 0u);
        memset(b[i], i, 248); /* ASan: every requested byte is usable */
    }
    for (int i = 1; i < 100; i++) {
        CHECK_EQ(slab_base(b[i]), slab_base(b[0]));
        CHECK((size_t)(b[i] - b[i - 1]) >= 248u); /* no overlap: they follow in order */
    }
    for (int i = 0; i < 100; i++)
        CHECK_EQ((unsigned char)b[i][247], (unsigned)i);
    tern_pool_stats st = tern_pool_get_stats(p);
    CHECK_EQ(st.slabs, 1u);
    CHECK_EQ(st.blocks, 100u);
    for (int i = 0; i < 100; i++)
        tern_pool_free(p, b[i]);
    st = tern_pool_get_stats(p);
    CHECK_EQ(st.blocks, 0u);
    CHECK_EQ(st.empty_slabs, 1u);
    tern_pool_destroy(p);
}

TEST(pool_sizes_in_one_step_share_a_class_and_the_next_step_does_not)
{
    tern_pool *p = tern_pool_create();

    CHECK(p != NULL);
    void *a = tern_pool_alloc(p, 113), *b = tern_pool_alloc(p, 120), *c = tern_pool_alloc(p, 121);
    CHECK(a != NULL && b != NULL && c != NULL);
    CHECK_EQ(slab_base(a), slab_base(b));
    CHECK(slab_base(c) != slab_base(a));
    CHECK_EQ(tern_pool_get_stats(p).slabs, 2u);
    void *z = tern_pool_alloc(p, 0); /* a unique block, like malloc(0) may give */
    CHECK(z != NULL && z != a && z != b && z != c);
    tern_pool_free(p, a);
    tern_pool_free(p, b);
    tern_pool_free(p, c);
    tern_pool_free(p, z);
    tern_pool_free(p, NULL);
    CHECK_EQ(tern_pool_get_stats(p).blocks, 0u);
    tern_pool_destroy(p);
}

TEST(pool_freed_block_is_handed_out_again_before_new_memory)
{
    tern_pool *p = tern_pool_create();

    CHECK(p != NULL);
    void *a = tern_pool_alloc(p, 64), *b = tern_pool_alloc(p, 64);
    tern_pool_free(p, a);
    void *c = tern_pool_alloc(p, 60);
    CHECK(c == a);
    tern_pool_free(p, b);
    tern_pool_free(p, c);
    tern_pool_destroy(p);
}

TEST(pool_large_blocks_come_from_malloc_and_free_through_the_pool)
{
    tern_pool *p = tern_pool_create();

    CHECK(p != NULL);
    char *big = tern_pool_alloc(p, TERN_POOL_MAX + 1);
    CHECK(big != NULL);
    memset(big, 7, TERN_POOL_MAX + 1);
    tern_pool_stats st = tern_pool_get_stats(p);
    CHECK_EQ(st.slabs, 0u);
    CHECK_EQ(st.blocks, 0u);
    char *small = tern_pool_alloc(p, TERN_POOL_MAX);
    CHECK(small != NULL);
    CHECK_EQ(tern_pool_get_stats(p).blocks, 1u);
    tern_pool_free(p, big); /* ASan would report a wild free if it went to a slab */
    tern_pool_free(p, small);
    CHECK_EQ(tern_pool_get_stats(p).blocks, 0u);
    tern_pool_destroy(p);
}

TEST(pool_realloc_keeps_contents_across_classes_and_sources)
{
    tern_pool *p = tern_pool_create();

    CHECK(p != NULL);
    char *a = tern_pool_realloc(p, NULL, 20); /* NULL: an allocation */
    CHECK(a != NULL);
    memcpy(a, "abcdefghijklmnopqrs", 20);
    char *same = tern_pool_realloc(p, a, 24); /* same class (17..24) */
    CHECK(same == a);
    char *grown = tern_pool_realloc(p, a, 300); /* another class */
    CHECK(grown != NULL && grown != a);
    CHECK_MEM(grown, "abcdefghijklmnopqrs", 20);
    char *huge = tern_pool_realloc(p, grown, 4096); /* to malloc */
    CHECK(huge != NULL);
    CHECK_MEM(huge, "abcdefghijklmnopqrs", 20);
    CHECK_EQ(tern_pool_get_stats(p).blocks, 0u);
    char *back = tern_pool_realloc(p, huge, 10); /* malloc's block stays malloc's */
    CHECK(back != NULL);
    CHECK_MEM(back, "abcdefghij", 10);
    CHECK_EQ(tern_pool_get_stats(p).blocks, 0u);
    tern_pool_free(p, back);
    char *s = tern_pool_alloc(p, 200);
    memcpy(s, "xyz", 4);
    char *shrunk = tern_pool_realloc(p, s, 8);
    CHECK(shrunk != NULL);
    CHECK_MEM(shrunk, "xyz", 4);
    tern_pool_free(p, shrunk);
    CHECK_EQ(tern_pool_get_stats(p).blocks, 0u);
    tern_pool_destroy(p);
}

TEST(pool_empty_slabs_stay_until_trim_gives_them_back)
{
    tern_pool *p = tern_pool_create();
    enum { N = 300 }; /* 512-byte blocks: three slabs */
    void *b[N];

    CHECK(p != NULL);
    for (int i = 0; i < N; i++)
        CHECK((b[i] = tern_pool_alloc(p, 512)) != NULL);
    CHECK_EQ(tern_pool_get_stats(p).slabs, 3u);
    CHECK_EQ(tern_pool_trim(p), 0u); /* none empty */
    for (int i = 0; i < N; i++)
        tern_pool_free(p, b[i]);
    tern_pool_stats st = tern_pool_get_stats(p);
    CHECK_EQ(st.slabs, 3u); /* freeing never unmaps: a flood would map and unmap */
    CHECK_EQ(st.empty_slabs, 3u);
    CHECK_EQ(tern_pool_trim(p), 3u);
    st = tern_pool_get_stats(p);
    CHECK_EQ(st.slabs, 0u);
    CHECK_EQ(st.empty_slabs, 0u);
    void *again = tern_pool_alloc(p, 512);
    CHECK(again != NULL);
    CHECK_EQ(tern_pool_get_stats(p).slabs, 1u);
    tern_pool_free(p, again);
    tern_pool_destroy(p);
}

/* Many slabs (the address set grows past its first size), half of them
 * emptied and unmapped (entries deleted from the middle of probe runs):
 * every block still left must still be found as the pool's, which the
 * block count reaching 0 shows (a block not found would go to free(),
 * which ASan and glibc both catch). */
TEST(pool_finds_every_slab_after_many_come_and_half_go)
{
    tern_pool *p = tern_pool_create();
    enum { PER = (TERN_POOL_SLAB - 64) / 512, SLABS = 40, N = PER * SLABS };
    void **b = calloc(N, sizeof *b);

    CHECK(p != NULL && b != NULL);
    for (int i = 0; i < N; i++)
        CHECK((b[i] = tern_pool_alloc(p, 512)) != NULL);
    CHECK_EQ(tern_pool_get_stats(p).slabs, (size_t)SLABS);
    /* Empty every other slab, in address order of first use. */
    uintptr_t bases[SLABS];
    int nbases = 0;
    for (int i = 0; i < N; i++) {
        uintptr_t s = slab_base(b[i]);
        int k = 0;
        while (k < nbases && bases[k] != s)
            k++;
        if (k == nbases)
            bases[nbases++] = s;
        if (k % 2 == 0) {
            tern_pool_free(p, b[i]);
            b[i] = NULL;
        }
    }
    CHECK_EQ(nbases, SLABS);
    CHECK_EQ(tern_pool_trim(p), (size_t)SLABS / 2);
    CHECK_EQ(tern_pool_get_stats(p).slabs, (size_t)SLABS / 2);
    char *m = malloc(100); /* still told apart from the slabs */
    tern_pool_free(p, m);
    for (int i = 0; i < N; i++)
        tern_pool_free(p, b[i]);
    CHECK_EQ(tern_pool_get_stats(p).blocks, 0u);
    CHECK_EQ(tern_pool_trim(p), (size_t)SLABS / 2);
    free(b);
    tern_pool_destroy(p);
}
