/*
 * ring_stress.c - the cross-core rings (src/ring/spsc.h, mpsc.h) under
 * ThreadSanitizer: producers and consumers on different threads pass
 * millions of messages; every message carries plain (non-atomic) payload
 * written by its producer and checked by its consumer, and goes back to
 * its producer through a second ring, so any missing happens-before edge
 * in either direction is a data race TSan reports (the build uses
 * -fsanitize=thread and halt_on_error). Checked besides: nothing lost,
 * nothing duplicated, each producer's messages arrive in its order, and
 * full/empty and bad capacities behave.
 *
 * Broken on purpose once each (2026-12-02): spsc_pop's load of head, and
 * mpsc_pop's load of the slot's seq, made relaxed instead of acquire: both
 * times TSan reported a data race between the producer's slot write and
 * the consumer's read, and the run failed.
 *
 * Usage: ring-stress [messages]   (default 2,000,000 per test)
 */
#include "ring/mpsc.h"
#include "ring/spsc.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { CAP = 256, POOL = 512, PRODUCERS = 3 };

struct msg {
    unsigned producer;
    uint64_t seq;
    uint64_t check;     /* a function of seq, written plainly */
    char pad[40];       /* more plain bytes for TSan to watch */
};

static uint64_t mix(uint64_t x) { return x * 0x9E3779B97F4A7C15ull ^ (x >> 7); }

static void fail(const char *what)
{
    fprintf(stderr, "ring-stress: FAIL: %s\n", what);
    exit(1);
}

static void fill(struct msg *m, unsigned producer, uint64_t seq)
{
    m->producer = producer;
    m->seq = seq;
    m->check = mix(seq + producer);
    for (size_t i = 0; i < sizeof m->pad; i++)
        m->pad[i] = (char)(seq + i);
}

static void check(const struct msg *m)
{
    if (m->check != mix(m->seq + m->producer))
        fail("payload corrupted");
    for (size_t i = 0; i < sizeof m->pad; i++)
        if (m->pad[i] != (char)(m->seq + i))
            fail("payload padding corrupted");
}

/* ---- SPSC: one producer, one consumer, free messages come back on a
 * second SPSC ring (the consumer is its producer). ---- */

struct spsc_pair {
    struct spsc_ring work, back;
    void *work_slots[CAP], *back_slots[POOL];
    struct msg pool[POOL];
    uint64_t n;
};

static void *spsc_producer(void *arg)
{
    struct spsc_pair *p = arg;
    unsigned fresh = 0;
    for (uint64_t i = 0; i < p->n; i++) {
        void *v = NULL;
        if (fresh < POOL) {
            v = &p->pool[fresh++];
        } else {
            while (!spsc_pop(&p->back, &v))
                sched_yield();
        }
        fill(v, 0, i);
        while (!spsc_push(&p->work, v))
            sched_yield();
    }
    return NULL;
}

static void *spsc_consumer(void *arg)
{
    struct spsc_pair *p = arg;
    for (uint64_t i = 0; i < p->n; i++) {
        void *v;
        while (!spsc_pop(&p->work, &v))
            sched_yield();
        const struct msg *m = v;
        check(m);
        if (m->seq != i)
            fail("spsc: out of order, lost or duplicated");
        /* The back ring holds POOL: every message fits, even once the
         * producer has stopped taking them back. */
        if (!spsc_push(&p->back, v))
            fail("spsc: back ring full");
    }
    return NULL;
}

static void test_spsc_threads(uint64_t n)
{
    static struct spsc_pair p;
    if (spsc_init(&p.work, p.work_slots, CAP) || spsc_init(&p.back, p.back_slots, POOL))
        fail("spsc_init");
    p.n = n;
    pthread_t a, b;
    pthread_create(&b, NULL, spsc_consumer, &p);
    pthread_create(&a, NULL, spsc_producer, &p);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    void *v;
    if (spsc_pop(&p.work, &v))
        fail("spsc: a message left over");
    printf("ring-stress: spsc: %llu messages passed in order\n", (unsigned long long)n);
}

/* ---- MPSC: PRODUCERS producers, one consumer; each producer's messages
 * come back on its own SPSC ring (the consumer produces into each). ---- */

struct mpsc_world {
    struct mpsc_ring work;
    struct mpsc_slot work_slots[CAP];
    struct spsc_ring back[PRODUCERS];
    void *back_slots[PRODUCERS][POOL];
    struct msg pool[PRODUCERS][POOL];
    uint64_t n; /* per producer */
};

struct producer_arg {
    struct mpsc_world *w;
    unsigned id;
};

static void *mpsc_producer(void *arg)
{
    struct producer_arg *pa = arg;
    struct mpsc_world *w = pa->w;
    unsigned fresh = 0;
    for (uint64_t i = 0; i < w->n; i++) {
        void *v = NULL;
        if (fresh < POOL) {
            v = &w->pool[pa->id][fresh++];
        } else {
            while (!spsc_pop(&w->back[pa->id], &v))
                sched_yield();
        }
        fill(v, pa->id, i);
        while (!mpsc_push(&w->work, v))
            sched_yield();
    }
    return NULL;
}

static void *mpsc_consumer(void *arg)
{
    struct mpsc_world *w = arg;
    uint64_t next[PRODUCERS] = {0};
    for (uint64_t got = 0; got < w->n * PRODUCERS; got++) {
        void *v;
        while (!mpsc_pop(&w->work, &v))
            sched_yield();
        const struct msg *m = v;
        if (m->producer >= PRODUCERS)
            fail("mpsc: bad producer");
        check(m);
        if (m->seq != next[m->producer]++)
            fail("mpsc: a producer's messages out of order, lost or duplicated");
        /* Each back ring holds POOL: every message of that producer fits. */
        if (!spsc_push(&w->back[m->producer], v))
            fail("mpsc: back ring full");
    }
    return NULL;
}

static void test_mpsc_threads(uint64_t n)
{
    static struct mpsc_world w;
    if (mpsc_init(&w.work, w.work_slots, CAP))
        fail("mpsc_init");
    for (unsigned i = 0; i < PRODUCERS; i++)
        if (spsc_init(&w.back[i], w.back_slots[i], POOL))
            fail("spsc_init");
    w.n = n / PRODUCERS;
    pthread_t c, p[PRODUCERS];
    struct producer_arg args[PRODUCERS];
    pthread_create(&c, NULL, mpsc_consumer, &w);
    for (unsigned i = 0; i < PRODUCERS; i++) {
        args[i] = (struct producer_arg){ &w, i };
        pthread_create(&p[i], NULL, mpsc_producer, &args[i]);
    }
    for (unsigned i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    pthread_join(c, NULL);
    void *v;
    if (mpsc_pop(&w.work, &v))
        fail("mpsc: a message left over");
    printf("ring-stress: mpsc: %u producers x %llu messages passed in per-producer order\n",
           PRODUCERS, (unsigned long long)w.n);
}

/* ---- single-threaded edges ---- */

static void test_rings_refuse_bad_capacity_and_report_full_and_empty(void)
{
    struct spsc_ring s;
    void *ss[4];
    if (spsc_init(&s, ss, 3) != -1 || spsc_init(&s, ss, 1) != -1 || spsc_init(&s, ss, 0) != -1)
        fail("spsc accepted a capacity that is not a power of two >= 2");
    struct mpsc_ring m;
    struct mpsc_slot ms[4];
    if (mpsc_init(&m, ms, 6) != -1 || mpsc_init(&m, ms, 1) != -1)
        fail("mpsc accepted a capacity that is not a power of two >= 2");
    spsc_init(&s, ss, 4);
    mpsc_init(&m, ms, 4);
    int x[5];
    void *v;
    if (spsc_pop(&s, &v) || mpsc_pop(&m, &v))
        fail("an empty ring gave a message");
    for (int lap = 0; lap < 3; lap++) { /* across the index wrap of the slots */
        for (int i = 0; i < 4; i++)
            if (!spsc_push(&s, &x[i]) || !mpsc_push(&m, &x[i]))
                fail("a ring with room refused a message");
        if (spsc_push(&s, &x[4]) || mpsc_push(&m, &x[4]))
            fail("a full ring took a fifth message");
        for (int i = 0; i < 4; i++) {
            if (!spsc_pop(&s, &v) || v != &x[i])
                fail("spsc gave the wrong message");
            if (!mpsc_pop(&m, &v) || v != &x[i])
                fail("mpsc gave the wrong message");
        }
        if (spsc_pop(&s, &v) || mpsc_pop(&m, &v))
            fail("a drained ring gave a message");
    }
    printf("ring-stress: capacity, full and empty edges hold\n");
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    if (n < PRODUCERS)
        n = PRODUCERS;
    test_rings_refuse_bad_capacity_and_report_full_and_empty();
    test_spsc_threads(n);
    test_mpsc_threads(n);
    printf("ring-stress: ok\n");
    return 0;
}
