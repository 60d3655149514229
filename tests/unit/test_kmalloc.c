/*
 * test_kmalloc.c - the kernel's hardened heap (mm/kmalloc.c) on the host:
 * pages come from aligned_alloc and are kept until the test ends (so a
 * stale header can be read after the heap gave its pages back), the
 * free-list secret is fixed, and the halt is a hook that records the
 * report and jumps back to the test instead of stopping the machine.
 * Checked: objects come out zeroed and distinct; a free wipes the whole
 * block; free-list links are not stored as plain pointers; a write after
 * free, a double free (small and large), an invalid free and a corrupted
 * free-list pointer or head each halt with a report that names the object
 * size and carries no address; a rekey keeps every free list usable and
 * changes how links read; an empty slab goes back zeroed. A heap of its
 * own over a bounded region (kheap_new, issue 18) returns NULL when the
 * region is used up, keeps a block whose growth failed, serves again once
 * objects are freed, wipes and checks as the kernel heap does, and halts
 * on a pointer from outside its region.
 */
#include "test.h"

#include <setjmp.h>
#include <stdlib.h>

#define KMALLOC_HOST_TEST 1
static void *pages_get(size_t n);
static void pages_put(void *p, size_t n);
static uint64_t boot_secret(void);
static _Noreturn void test_halt(const char *msg);
#define KMALLOC_HALT(msg) test_halt(msg)
#include "platform/kernel/mm/kmalloc.c"

enum { MAX_RUNS = 4096 }; /* every run stays allocated until heap_reset() */

/* Every run of pages handed to the heap, and whether it gave it back. */
static struct run {
    void *p;
    size_t n;
    int returned;
} runs[MAX_RUNS];
static size_t nruns;
static int pages_refused; /* set: the frame allocator's stand-in says no */

static void *pages_get(size_t n)
{
    if (nruns == MAX_RUNS || pages_refused)
        return NULL;
    void *p = aligned_alloc(PAGE_SIZE, n * PAGE_SIZE);
    if (!p)
        return NULL;
    memset(p, 0x77, n * PAGE_SIZE); /* frames are not handed out zeroed */
    runs[nruns++] = (struct run){p, n, 0};
    return p;
}

static void pages_put(void *p, size_t n)
{
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].p == p && runs[i].n == n && !runs[i].returned) {
            runs[i].returned = 1;
            return;
        }
    abort(); /* the heap gave back pages it never had */
}

static const struct run *run_of(const void *p)
{
    for (size_t i = 0; i < nruns; i++)
        if ((const char *)p >= (const char *)runs[i].p &&
            (const char *)p < (const char *)runs[i].p + runs[i].n * PAGE_SIZE)
            return &runs[i];
    return NULL;
}

static uint64_t test_secret = 0x0123456789abcdefull;
static uint64_t boot_secret(void) { return test_secret; }

static jmp_buf halt_env;
static char report[256];
static int halts;

static _Noreturn void test_halt(const char *msg)
{
    /* A real halt never returns; this one does, so it lets go of the heap
     * lock the halting call held (the heap goes on being tested). */
    if (spin_is_locked(&heap.lock))
        spin_unlock(&heap.lock);
    snprintf(report, sizeof report, "%s", msg);
    halts++;
    longjmp(halt_env, 1);
}

/* A fresh heap: the old one's pages freed, nothing recorded. */
static void heap_reset(void)
{
    for (size_t i = 0; i < nruns; i++)
        free(runs[i].p);
    nruns = 0;
    memset(&heap, 0, sizeof heap);
    report[0] = 0;
    halts = 0;
}

/* Run `stmt`, which must halt: the test fails if it returns. */
#define EXPECT_HALT(stmt)                                                       \
    do {                                                                        \
        if (setjmp(halt_env) == 0) {                                            \
            stmt;                                                               \
            test_fail(__FILE__, __LINE__, "no halt: " #stmt);                   \
            return;                                                             \
        }                                                                       \
    } while (0)

/* A production report names no address: no "0x", no long hex run. */
static int report_has_address(void)
{
    if (strstr(report, "0x"))
        return 1;
    int run = 0;
    for (const char *c = report; *c; c++) {
        int hex = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f');
        run = hex ? run + 1 : 0;
        if (run >= 8)
            return 1;
    }
    return 0;
}

static int all_bytes(const void *p, size_t n, uint8_t v)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != v)
            return 0;
    return 1;
}

TEST(kmalloc_objects_come_out_zeroed_distinct_and_are_reused)
{
    heap_reset();
    enum { N = 200 };
    static uint8_t *p[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            size_t size = (size_t)(i * 37 % 5000) + 1;
            p[i] = kmalloc(size);
            CHECK(p[i]);
            CHECK(kmalloc_usable_size(p[i]) >= size);
            CHECK(all_bytes(p[i], size, 0));
            memset(p[i], i, size);
        }
        for (int i = 0; i < N; i++)
            CHECK(all_bytes(p[i], (size_t)(i * 37 % 5000) + 1, (uint8_t)i));
        for (int i = 0; i < N; i += 2)
            kfree(p[i]);
        for (int i = 1; i < N; i += 2) {
            p[i] = krealloc(p[i], 3000);
            CHECK(p[i] && p[i][0] == (uint8_t)i);
            kfree(p[i]);
        }
    }
    struct kmalloc_stats st;
    kmalloc_get_stats(&st);
    CHECK_EQ(st.allocations, 0);
    CHECK_EQ(st.bytes_in_use, 0);
    CHECK_EQ(halts, 0);
    heap_reset();
}

TEST(kmalloc_free_wipes_the_whole_block_and_hides_the_link)
{
    heap_reset();
    uint8_t *a = kmalloc(64), *b = kmalloc(64), *keep = kmalloc(64);
    CHECK(a && b && keep);
    memset(a, 0x42, 64); /* "key material" */
    memset(b, 0x42, 64);
    kfree(a);
    kfree_sensitive(b);
    for (size_t i = 0; i < 64; i++)
        CHECK(a[i] != 0x42 && b[i] != 0x42);
    CHECK(all_bytes(a + LINK, 64 - LINK, POISON_BYTE));
    CHECK(all_bytes(b + LINK, 64 - LINK, POISON_BYTE));
    /* b's link names a, but not as a plain pointer. */
    uint64_t raw;
    memcpy(&raw, b, sizeof raw);
    CHECK(raw != (uint64_t)(uintptr_t)a);
    CHECK_EQ(link_get(heap.secret, b), (uint64_t)(uintptr_t)a);
    /* Reuse hands the block out zeroed again, LIFO. */
    uint8_t *c = kmalloc(64);
    CHECK(c == b);
    CHECK(all_bytes(c, 64, 0));
    kfree(c);
    kfree(keep);
    CHECK_EQ(halts, 0);
    heap_reset();
}

TEST(kmalloc_write_after_free_halts_at_the_next_reuse)
{
    heap_reset();
    uint8_t *a = kmalloc(64);
    CHECK(a);
    kfree(a);
    a[20] = 0; /* the stray write */
    void *volatile got = NULL;
    EXPECT_HALT(got = kmalloc(64));
    CHECK(got == NULL);
    CHECK(strstr(report, "write after free") != NULL);
    CHECK(strstr(report, "64-byte object") != NULL);
    CHECK(!report_has_address());
    heap_reset();
}

TEST(kmalloc_write_after_free_into_a_large_class_halts)
{
    heap_reset();
    uint8_t *a = kmalloc(2000);
    CHECK(a);
    kfree(a);
    a[2047] ^= 1; /* the last byte: the whole block is checked */
    EXPECT_HALT(kmalloc(1500));
    CHECK(strstr(report, "write after free (2048-byte object)") != NULL);
    heap_reset();
}

TEST(kmalloc_double_free_halts)
{
    heap_reset();
    void *a = kmalloc(32), *b = kmalloc(32);
    CHECK(a && b);
    kfree(a);
    EXPECT_HALT(kfree(a));
    CHECK(strstr(report, "double free (32-byte object)") != NULL);
    CHECK(!report_has_address());
    heap_reset();
}

TEST(kmalloc_double_free_of_a_large_object_halts)
{
    heap_reset();
    void *a = kmalloc(10000);
    CHECK(a);
    kfree(a);
    /* Its pages went back zeroed (kept readable here), magic included. */
    CHECK(run_of(a) && run_of(a)->returned);
    CHECK(all_bytes(run_of(a)->p, run_of(a)->n * PAGE_SIZE, 0));
    EXPECT_HALT(kfree(a));
    CHECK(strstr(report, "invalid free") != NULL);
    heap_reset();
}

TEST(kmalloc_free_of_an_interior_pointer_halts)
{
    heap_reset();
    uint8_t *a = kmalloc(128);
    CHECK(a);
    EXPECT_HALT(kfree(a + 8));
    CHECK(strstr(report, "invalid free (not an object's start) (128-byte object)") != NULL);
    heap_reset();
}

TEST(kmalloc_corrupted_free_list_pointer_halts_when_followed)
{
    heap_reset();
    uint8_t *a = kmalloc(128), *b = kmalloc(128), *live = kmalloc(128);
    CHECK(a && b && live);
    kfree(a);
    kfree(b); /* b is the head, its link names a */
    /* An overflow from the object below plants a plain pointer to a live
     * object (the classic attack); the poison after the link is intact. */
    uint64_t planted = (uint64_t)(uintptr_t)live;
    memcpy(b, &planted, sizeof planted);
    void *volatile got = NULL;
    EXPECT_HALT(got = kmalloc(128));
    CHECK(got == NULL);
    CHECK(strstr(report, "free-list pointer corrupted (128-byte object)") != NULL);
    CHECK(!report_has_address());
    heap_reset();
}

TEST(kmalloc_link_that_decodes_misaligned_halts)
{
    heap_reset();
    uint8_t *a = kmalloc(128), *b = kmalloc(128);
    CHECK(a && b);
    kfree(a);
    kfree(b);
    b[0] ^= 0x10; /* decodes 16 bytes into a: inside the slab, misaligned */
    EXPECT_HALT(kmalloc(128));
    CHECK(strstr(report, "free-list pointer corrupted") != NULL);
    heap_reset();
}

TEST(kmalloc_corrupted_slab_head_halts)
{
    heap_reset();
    uint8_t *a = kmalloc(256);
    CHECK(a);
    struct slab *s = slab_of(a);
    s->free_enc ^= 0x40; /* the head now decodes misaligned */
    EXPECT_HALT(kmalloc(256));
    CHECK(strstr(report, "free-list pointer corrupted (256-byte object)") != NULL);
    heap_reset();
}

TEST(kmalloc_rekey_keeps_free_lists_usable_and_changes_links)
{
    heap_reset();
    enum { N = 100 };
    static uint8_t *p[N];
    for (int i = 0; i < N; i++)
        CHECK((p[i] = kmalloc((size_t)16 << (i % 8))));
    for (int i = 0; i < N; i += 3)
        kfree(p[i]);
    uint64_t before, after;
    memcpy(&before, p[N - 1 - (N - 1) % 3], sizeof before);
    kmalloc_rekey(0xfeedfacecafebeefull);
    memcpy(&after, p[N - 1 - (N - 1) % 3], sizeof after);
    CHECK(before != after);
    CHECK_EQ(heap.secret, 0xfeedfacecafebeefull);
    /* Every freed object comes back without a halt, zeroed. */
    for (int i = 0; i < N; i += 3) {
        p[i] = kmalloc((size_t)16 << (i % 8));
        CHECK(p[i] && all_bytes(p[i], (size_t)16 << (i % 8), 0));
    }
    for (int i = 0; i < N; i++)
        kfree(p[i]);
    CHECK_EQ(halts, 0);
    heap_reset();
}

TEST(kmalloc_rekey_halts_on_a_corrupted_link)
{
    heap_reset();
    uint8_t *a = kmalloc(64), *b = kmalloc(64);
    CHECK(a && b);
    kfree(a);
    kfree(b);
    b[3] ^= 0x80;
    EXPECT_HALT(kmalloc_rekey(42));
    CHECK(strstr(report, "free-list pointer corrupted") != NULL);
    heap_reset();
}

TEST(kmalloc_empty_slab_goes_back_zeroed)
{
    heap_reset();
    /* Two slabs of the 1024-byte class (3 objects a slab). */
    void *p[6];
    for (int i = 0; i < 6; i++)
        CHECK((p[i] = kmalloc(1024)));
    const struct run *second = run_of(p[5]);
    CHECK(second && second != run_of(p[0]));
    for (int i = 3; i < 6; i++)
        kfree(p[i]);
    CHECK(second->returned);
    CHECK(all_bytes(second->p, PAGE_SIZE, 0));
    for (int i = 0; i < 3; i++)
        kfree(p[i]);
    CHECK(!run_of(p[0])->returned); /* the class's last slab stays */
    CHECK_EQ(halts, 0);
    heap_reset();
}

TEST(kmalloc_every_call_lets_go_of_the_heap_lock)
{
    heap_reset();
    void *a = kmalloc(40), *big = kmalloc(3 * PAGE_SIZE);
    CHECK(a && big && !spin_is_locked(&heap.lock));
    CHECK(kmalloc_usable_size(a) == 64 && !spin_is_locked(&heap.lock));
    CHECK((a = krealloc(a, 100)) && !spin_is_locked(&heap.lock));
    CHECK(kmalloc((size_t)UINT32_MAX) == NULL && !spin_is_locked(&heap.lock));
    struct kmalloc_stats st;
    kmalloc_get_stats(&st);
    CHECK(st.allocations == 2 && !spin_is_locked(&heap.lock));
    kmalloc_rekey(7);
    kfree(a);
    kfree(big);
    kfree(NULL);
    CHECK(!spin_is_locked(&heap.lock));
    /* A halt inside the heap leaves it held on the machine; the host hook
     * lets go, so the heap answers again after it. */
    char *p = kmalloc(32);
    kfree(p);
    EXPECT_HALT(kfree(p));
    CHECK(!spin_is_locked(&heap.lock) && kmalloc(16) != NULL);
    heap_reset();
}

/* Region heaps are leaked by these tests (their region is a run of
 * heap_reset's, freed with it; the header comes from the kernel heap). */
TEST(kheap_exhausted_region_returns_null_not_a_halt)
{
    heap_reset();
    enum { PAGES = 4 };
    struct kheap *k = kheap_new(PAGES, 0x55);
    CHECK(k != NULL);
    if (!k)
        return;
    /* 1024-byte objects: 3 per slab page (64-byte header), 4 pages. */
    void *p[16];
    size_t n = 0;
    while (n < 16 && (p[n] = kheap_alloc(k, 1000)) != NULL)
        n++;
    CHECK(n == 3 * PAGES);
    CHECK(halts == 0);
    /* A large object needs a run of pages: none left. */
    CHECK(kheap_alloc(k, 5000) == NULL);
    /* Growth that cannot be served fails and keeps the block. */
    memset(p[0], 0x3c, 1000);
    CHECK(kheap_realloc(k, p[0], 3000) == NULL);
    CHECK(all_bytes(p[0], 1000, 0x3c));
    struct kmalloc_stats st;
    kheap_get_stats(k, &st);
    CHECK(st.allocations == 3 * PAGES && st.pages == PAGES);
    /* Freed, the region serves again: a 2-page large object fits once two
     * slab pages went back (each class keeps its last slab). */
    for (size_t i = 0; i < n; i++)
        kheap_free(k, p[i]);
    void *big = kheap_alloc(k, 5000);
    CHECK(big != NULL && all_bytes(big, 5000, 0));
    CHECK(kheap_usable_size(k, big) == 2 * PAGE_SIZE - HDR);
    kheap_free(k, big);
    kheap_get_stats(k, &st);
    CHECK(st.allocations == 0 && st.bytes_in_use == 0);
    CHECK(halts == 0 && !spin_is_locked(&heap.lock));
    /* Its region is one run from the frame allocator's stand-in; the
     * kernel heap gave none for its objects. */
    struct kmalloc_stats ks;
    kmalloc_get_stats(&ks);
    CHECK(ks.allocations == 1); /* the region heap's own header */
    heap_reset();
}

TEST(kheap_wipes_on_free_and_halts_on_a_double_free)
{
    heap_reset();
    struct kheap *k = kheap_new(8, 0x99);
    CHECK(k != NULL);
    if (!k)
        return;
    uint8_t *a = kheap_alloc(k, 64), *b = kheap_alloc(k, 64);
    CHECK(a && b);
    memset(a, 0xee, 64);
    kheap_free(k, a);
    CHECK(!all_bytes(a + LINK, 64 - LINK, 0xee) && all_bytes(a + LINK, 64 - LINK, POISON_BYTE));
    EXPECT_HALT(kheap_free(k, a));
    CHECK(strstr(report, "double free (64-byte object)") != NULL);
    CHECK(!report_has_address());
    heap_reset(); /* k's lock stays held after the halt: k is not used again */
}

TEST(kheap_halts_on_a_pointer_from_outside_its_region)
{
    heap_reset();
    struct kheap *k = kheap_new(2, 0x77);
    void *theirs = kmalloc(64); /* a kernel heap object, a valid slab */
    CHECK(k && theirs);
    if (!k || !theirs)
        return;
    EXPECT_HALT(kheap_free(k, theirs));
    CHECK(strstr(report, "pointer is not from this heap") != NULL);
    heap_reset();
}

TEST(kheap_new_refuses_a_region_the_frames_cannot_give)
{
    heap_reset();
    CHECK(kheap_new(0, 1) == NULL);
    CHECK(kheap_new(SIZE_MAX / 2, 1) == NULL);
    void *keep = kmalloc(200); /* a slab for the header's class exists */
    pages_refused = 1;
    CHECK(kheap_new(16, 1) == NULL);
    pages_refused = 0;
    kfree(keep);
    struct kmalloc_stats ks;
    kmalloc_get_stats(&ks);
    CHECK(ks.allocations == 0); /* its header went back */
    heap_reset();
}

TEST(kheap_try_stats_does_not_wait_for_a_holder)
{
    heap_reset();
    struct kheap *k = kheap_new(2, 0x31);
    CHECK(k != NULL);
    if (!k)
        return;
    void *a = kheap_alloc(k, 100);
    struct kmalloc_stats st = {.allocations = 99};
    spin_lock(&k->h.lock); /* as the storage CPU inside a SQLite call */
    CHECK(kheap_try_stats(k, &st) == 0 && st.allocations == 99);
    spin_unlock(&k->h.lock);
    CHECK(kheap_try_stats(k, &st) == 1 && st.allocations == 1 && st.bytes_in_use == 128);
    kheap_free(k, a);
    heap_reset();
}
