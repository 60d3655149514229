/*
 * ksqlite.c - SQLite's operating-system hooks in the kernel (ksqlite.h):
 * sqlite3_os_init/end, the allocator over kmalloc, the memory bound, and
 * the services the store VFS needs from the kernel.
 *
 * Memory bound, and why a soft heap limit: each connection's page cache is
 * capped by SQLITE_DEFAULT_CACHE_SIZE (store/sqlite.mk), but the store
 * opens up to three connections at once (the database, a backup slot, a
 * restore source), and statements, the WAL index and sort buffers come on
 * top. sqlite3_soft_heap_limit64() bounds everything SQLite allocates
 * together: past it SQLite frees clean cache pages before allocating more,
 * so the store runs in a known amount of memory whatever it does, and it
 * never fails an allocation for it (a hard limit would turn a large
 * transaction into a failed commit). The kernel store thread may pass its
 * configured cache size here.
 *
 * SQLite's heap (issue 18): SQLite allocates and frees at nearly every
 * step of a commit, and with the storage core (kstorecpu.h) it runs on
 * CPU 1 while CPU 0 serves the network from the kernel heap; sharing that
 * heap's lock made the two CPUs meet on it at each of those calls. So
 * SQLite gets a heap of its own (mm/kmalloc.h's kheap: the same hardened
 * heap, its own lock and secret) over a region taken once, here, before
 * SQLite's first allocation: KSQLITE_HEAP_FACTOR times the soft limit,
 * room for the limit's overshoots (SQLite exceeds a soft limit when it
 * must) and the heap's own rounding. SQLite counts what it holds by the
 * heap's usable sizes, so the limit already sees the size classes. The
 * region is a hard bound: an allocation it cannot serve returns NULL,
 * which SQLite reports as SQLITE_NOMEM and the store as a failed commit
 * (its failing path: acknowledgements withheld, retried), never a crash.
 * SQLite runs on CPU 0 until the hand-over (the store's open) and on
 * CPU 1 after it; the heap's lock orders the two, and CPU 0 takes it
 * after that only to read the heap's counters for $SYS. When the region's
 * frames cannot be had (a cache configured larger than the machine can
 * set aside in one piece) SQLite allocates from the kernel heap, as
 * before, and the console says so.
 */
#include "ksqlite.h"

#include "../clock.h"
#include "../console.h"
#include "../mm/kmalloc.h"
#include "../rng/entropy.h"
#include "../wallclock.h"

#include <sqlite3.h>
#include <string.h>

/* ---- the allocator ------------------------------------------------------- */

/* SQLite's heap, made once by ksqlite_init (NULL: the kernel heap's). */
static struct kheap *sql_heap;
/* Its counters as the main loop last read them (ksqlite_heap_add). */
static struct kmalloc_stats sql_heap_seen;

static void *mem_malloc(int n)
{
    return n > 0 ? kheap_alloc(sql_heap, (size_t)n) : NULL;
}

static void mem_free(void *p)
{
    kheap_free(sql_heap, p);
}

static void *mem_realloc(void *p, int n)
{
    return n > 0 ? kheap_realloc(sql_heap, p, (size_t)n) : NULL;
}

static int mem_size(void *p)
{
    return p != NULL ? (int)kheap_usable_size(sql_heap, p) : 0;
}

static void *kmem_malloc(int n)
{
    return n > 0 ? kmalloc((size_t)n) : NULL;
}

static void kmem_free(void *p)
{
    kfree(p);
}

static void *kmem_realloc(void *p, int n)
{
    return n > 0 ? krealloc(p, (size_t)n) : NULL;
}

static int kmem_size(void *p)
{
    return p != NULL ? (int)kmalloc_usable_size(p) : 0;
}

static int mem_roundup(int n)
{
    return (n + 7) & ~7;
}

static int mem_init(void *ctx)
{
    (void)ctx;
    return SQLITE_OK;
}

static void mem_shutdown(void *ctx)
{
    (void)ctx;
}

static const sqlite3_mem_methods kheap_methods = {
    mem_malloc, mem_free, mem_realloc, mem_size, mem_roundup, mem_init, mem_shutdown, NULL,
};

static const sqlite3_mem_methods kmalloc_methods = {
    kmem_malloc, kmem_free, kmem_realloc, kmem_size, mem_roundup, mem_init, mem_shutdown, NULL,
};

#ifdef TERN_TEST_HOOKS
static uint32_t test_heap_kib; /* tern.test.sqlheap_kib; 0: none */

void ksqlite_test_heap_kib(uint32_t kib)
{
    test_heap_kib = kib;
}
#endif

/* SQLite's own heap for soft_limit (see the top), or NULL (said). */
static struct kheap *heap_for(uint64_t soft_limit)
{
    uint64_t bytes = soft_limit * KSQLITE_HEAP_FACTOR;
#ifdef TERN_TEST_HOOKS
    if (test_heap_kib)
        bytes = (uint64_t)test_heap_kib * 1024;
#endif
    size_t pages = (size_t)((bytes + 4095) / 4096);
    uint64_t secret = (uint64_t)rng_u32_nonkey() << 32 | rng_u32_nonkey();
    struct kheap *h = kheap_new(pages, secret);
    if (!h)
        kprintf("tern: store: no %llu MiB in one piece for SQLite's own heap: it shares the "
                "kernel heap\n", (unsigned long long)(bytes >> 20));
    return h;
}

/* ---- SQLITE_OS_OTHER ------------------------------------------------------ */

int sqlite3_os_init(void)
{
    return SQLITE_OK; /* the store's VFS registers itself (kvfs_register) */
}

int sqlite3_os_end(void)
{
    return SQLITE_OK;
}

int ksqlite_init(uint64_t soft_limit)
{
    if (soft_limit == 0)
        soft_limit = KSQLITE_SOFT_LIMIT;
    if (!sql_heap)
        sql_heap = heap_for(soft_limit);
    int rc = sqlite3_config(SQLITE_CONFIG_MALLOC, sql_heap ? &kheap_methods : &kmalloc_methods);

    if (rc == SQLITE_OK)
        rc = sqlite3_initialize();
    if (rc == SQLITE_OK)
        (void)sqlite3_soft_heap_limit64((sqlite3_int64)soft_limit);
    return rc;
}

void ksqlite_heap_add(struct kmalloc_stats *st)
{
    if (!sql_heap)
        return;
    /* The main loop must not wait for the storage CPU's SQLite call to
     * end (issue 18: a wait of tens of ms, counted): when it holds the
     * lock, the last figures stand in, a $SYS interval old at most. */
    (void)kheap_try_stats(sql_heap, &sql_heap_seen);
    st->bytes_in_use += sql_heap_seen.bytes_in_use;
    st->pages += sql_heap_seen.pages;
    st->allocations += sql_heap_seen.allocations;
}

int ksqlite_heap_stats(struct kmalloc_stats *st, struct spin_stats *lock)
{
    if (!sql_heap)
        return 0;
    if (st)
        kheap_get_stats(sql_heap, st);
    if (lock)
        kheap_lock_stats(sql_heap, lock);
    return 1;
}

uint64_t ksqlite_memory_used(void)
{
    return (uint64_t)sqlite3_memory_used();
}

/* ---- services for the VFS ------------------------------------------------- */

/* WAL salts and SQLite's other random choices need no secrecy, but they
 * run on the storage core, where the DRBG may not be used (it is CPU 0's:
 * rng/entropy.c): a splitmix64 stream of SQLite's own, seeded from the
 * DRBG (or the pool and the clock) on CPU 0 by ksqlite_env, before the
 * store thread exists; from then on only the thread that runs SQLite
 * draws from it. */
static uint64_t sql_stream;

static uint64_t stream_next(void)
{
    uint64_t z = (sql_stream += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void env_random(void *ctx, void *buf, size_t n)
{
    uint8_t *p = buf;

    (void)ctx;
    while (n > 0) {
        uint64_t v = stream_next();
        size_t k = n < sizeof v ? n : sizeof v;

        memcpy(p, &v, k);
        p += k;
        n -= k;
    }
}

static int64_t env_now_ms(void *ctx)
{
    (void)ctx;
    return (int64_t)wallclock_now() * 1000;
}

static void env_sleep_us(void *ctx, uint64_t us)
{
    (void)ctx;
    delay_ms((uint32_t)((us + 999) / 1000));
}

static void env_log(void *ctx, const char *line)
{
    (void)ctx;
    kprintf("tern: %s\n", line);
}

void ksqlite_env(struct kvfs_env *env)
{
    memset(env, 0, sizeof *env);
    sql_stream = (uint64_t)rng_u32_nonkey() << 32 | rng_u32_nonkey();
    env->random = env_random;
    env->now_ms = env_now_ms;
    env->sleep_us = env_sleep_us;
    env->log = env_log;
}
