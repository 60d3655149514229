/*
 * heap_stress.c - the kernel heap (src/platform/kernel/mm/kmalloc.c, built
 * for the host as tests/unit/test_kmalloc.c builds it) used from several
 * threads at once under ThreadSanitizer, as the network CPU and the
 * storage CPU use it (issue 18, ADR-063): each thread allocates objects of
 * every size class and large ones, fills them with its own pattern, keeps
 * a window of them live, checks the pattern before freeing, and reallocs
 * some. Any heap state touched outside the heap lock is a data race TSan
 * reports (halt_on_error); two threads handed the same object show as a
 * broken pattern; a corrupted free list halts through the heap's own
 * checks. At the end every object is freed and the heap's counters must
 * say so.
 *
 * Broken on purpose once (2026-12-02): kfree without the lock: TSan
 * reported a data race on the class lists (kmalloc reading what a
 * concurrent kfree wrote) and the run failed.
 *
 * Usage: heap-stress [rounds per thread]   (default 50,000)
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KMALLOC_HOST_TEST 1
#define SPIN_RELAX() sched_yield() /* preemptible threads: spinlock.h */
static void *pages_get(size_t n);
static void pages_put(void *p, size_t n);
static uint64_t boot_secret(void) { return 0x1234567890abcdefull; }
static _Noreturn void halt(const char *msg)
{
    fprintf(stderr, "heap-stress: FAIL: the heap halted: %s\n", msg);
    exit(1);
}
#define KMALLOC_HALT(msg) halt(msg)
#include "platform/kernel/mm/kmalloc.c"

#include <pthread.h>

enum { THREADS = 3, WINDOW = 64 }; /* more threads than the kernel's two heap users */

static uint64_t rounds = 50000;

/* The frame allocator's stand-in: malloc is thread-safe, as pmm.c is with
 * its own lock. */
static void *pages_get(size_t n) { return aligned_alloc(PAGE_SIZE, n * PAGE_SIZE); }
static void pages_put(void *p, size_t n)
{
    (void)n;
    free(p);
}

static void fail(const char *what)
{
    fprintf(stderr, "heap-stress: FAIL: %s\n", what);
    exit(1);
}

struct obj {
    uint8_t *p;
    size_t n;
    uint8_t tag;
};

/* The pattern goes in the first and last bytes only: a byte loop over
 * every object is minutes under TSan, and an object handed out twice
 * is overwritten (zeroed by the heap) from its start. */
enum { EDGE = 16 };

static void fill(struct obj *o)
{
    size_t k = o->n < EDGE ? o->n : EDGE;
    memset(o->p, o->tag, k);
    memset(o->p + o->n - k, o->tag, k);
}

static void check(const struct obj *o)
{
    size_t k = o->n < EDGE ? o->n : EDGE;
    for (size_t i = 0; i < k; i++)
        if (o->p[i] != o->tag || o->p[o->n - 1 - i] != o->tag)
            fail("an object changed under its owner (handed out twice?)");
}

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    struct obj live[WINDOW];
    memset(live, 0, sizeof live);
    uint64_t x = 0x9E3779B97F4A7C15ull * (id + 1);
    for (uint64_t r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        struct obj *o = &live[x % WINDOW];
        if (o->p) {
            check(o);
            if ((x >> 8) % 4 == 0) { /* grow or shrink in place of a free */
                o->n = 1 + (size_t)((x >> 16) % 3000);
                if (!(o->p = krealloc(o->p, o->n)))
                    fail("krealloc failed");
                o->tag = (uint8_t)(id * 64 + r);
                fill(o);
                continue;
            }
            kfree(o->p);
            o->p = NULL;
            continue;
        }
        /* Mostly small classes, one in 64 a large object. */
        o->n = (x >> 20) % 64 == 0 ? PAGE_SIZE + (size_t)((x >> 32) % 9000)
                                   : 1 + (size_t)((x >> 32) % 2048);
        if (!(o->p = kmalloc(o->n)))
            fail("kmalloc failed");
        o->tag = (uint8_t)(id * 64 + r);
        fill(o);
    }
    for (unsigned i = 0; i < WINDOW; i++)
        if (live[i].p) {
            check(&live[i]);
            kfree(live[i].p);
        }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = strtoull(argv[1], NULL, 10);
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i))
            fail("pthread_create");
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    struct kmalloc_stats st;
    kmalloc_get_stats(&st);
    if (st.allocations != 0 || st.bytes_in_use != 0)
        fail("the heap's counters say objects are still live after every free");
    printf("heap-stress: %u threads x %llu rounds: ok\n", THREADS, (unsigned long long)rounds);
    return 0;
}
