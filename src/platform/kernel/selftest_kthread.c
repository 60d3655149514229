/*
 * selftest_kthread.c - test builds only: the cooperative threads under
 * QEMU (tests/kernel, tern.test=kthread...), since the context switch is
 * assembly no host unit test can run.
 *
 *   kthread           ping-pong between the main context and a thread:
 *                     every callee-saved register, MXCSR, the x87 control
 *                     word and stack contents survive each switch in both
 *                     directions; a thread waiting on a condition is not
 *                     resumed until it holds; kthread_yield_after hands the
 *                     CPU back within its slice.
 *   kthread-overflow  a thread recursing without end faults on its guard
 *                     page and is reported as a stack overflow.
 */
#include "selftest.h"

#include "clock.h"
#include "console.h"
#include "kthread.h"
#include "panic.h"

#include <string.h>

#ifdef TERN_TEST_HOOKS

/* switch_selftest.S */
uint64_t kthread_selftest_call(uint64_t seed, void (*fn)(void *), void *arg);

enum {
    ROUNDS = 1000,
    PATTERN_WORDS = 64,
    WAIT_RESUMES = 5,         /* resume attempts refused while waiting */
    SLICE_NS = 1000000,       /* kthread_yield_after's slice in the test */
    BUSY_NS = 30000000,       /* the thread's busy work, in slices */
    THREAD_STACK_PAGES = 4,
};

/* Seeds whose low bits give the two sides different rounding modes. */
#define THREAD_SEED(i) (0x7100000000000005ull + ((uint64_t)(i) << 8))
#define MAIN_SEED(i) (0x4D0000000000000Aull + ((uint64_t)(i) << 8))

struct pingpong {
    struct kthread *t;
    uint64_t bad_thread, bad_main; /* masks of what did not survive */
    unsigned rounds_thread;
    volatile bool flag;            /* the condition the thread waits for */
    bool waited;
    unsigned slices;
};

static void yield_fn(void *arg)
{
    (void)arg;
    kthread_yield();
}

static void resume_fn(void *arg)
{
    (void)kthread_resume(arg);
}

static bool flag_set(void *arg)
{
    return ((struct pingpong *)arg)->flag;
}

static void fill(volatile uint64_t *w, uint64_t seed)
{
    for (unsigned i = 0; i < PATTERN_WORDS; i++)
        w[i] = seed * (i + 1);
}

static bool intact(const volatile uint64_t *w, uint64_t seed)
{
    for (unsigned i = 0; i < PATTERN_WORDS; i++)
        if (w[i] != seed * (i + 1))
            return false;
    return true;
}

static void pingpong_thread(void *arg)
{
    struct pingpong *p = arg;
    volatile uint64_t words[PATTERN_WORDS];
    for (unsigned i = 0; i < ROUNDS; i++) {
        fill(words, THREAD_SEED(i));
        p->bad_thread |= kthread_selftest_call(THREAD_SEED(i), yield_fn, NULL);
        if (!intact(words, THREAD_SEED(i)))
            p->bad_thread |= 512;
        p->rounds_thread++;
    }
    kthread_wait_until(flag_set, p, NULL);
    p->waited = true;
    /* Busy work that gives the CPU back every slice. */
    uint64_t until = clock_mono_ns() + BUSY_NS;
    while (clock_mono_ns() < until)
        kthread_yield_after(SLICE_NS);
}

static void check_pingpong(void)
{
    static struct pingpong p;
    volatile uint64_t words[PATTERN_WORDS];
    p.t = kthread_create("selftest", THREAD_STACK_PAGES, pingpong_thread, &p);
    if (kthread_current() != NULL)
        panic("selftest kthread: the main context has a current thread");
    for (unsigned i = 0; i < ROUNDS; i++) {
        fill(words, MAIN_SEED(i));
        p.bad_main |= kthread_selftest_call(MAIN_SEED(i), resume_fn, p.t);
        if (!intact(words, MAIN_SEED(i)))
            p.bad_main |= 512;
    }
    if (p.bad_thread || p.bad_main) {
        kprintf("selftest kthread: lost across a switch: thread side mask %llu, main side "
                "mask %llu (1 rbx 2 rbp 4 r12 8 r13 16 r14 32 r15 64 MXCSR 128 x87 CW 256 "
                "slot 512 stack)\n",
                (unsigned long long)p.bad_thread, (unsigned long long)p.bad_main);
        panic("selftest kthread: registers or stack not preserved");
    }
    /* The first resume started the thread, so it now sits in its last
     * round's yield: one more resume ends that round and reaches the wait,
     * after which it must not be resumed until the flag is set. */
    if (p.rounds_thread != ROUNDS - 1)
        panic("selftest kthread: the thread did not run once per resume");
    if (!kthread_resume(p.t) || p.rounds_thread != ROUNDS)
        panic("selftest kthread: a ready thread was not resumed");
    for (unsigned i = 0; i < WAIT_RESUMES; i++)
        if (kthread_ready(p.t) || kthread_resume(p.t))
            panic("selftest kthread: a waiting thread was resumed");
    p.flag = true;
    if (!kthread_ready(p.t))
        panic("selftest kthread: the condition holds but the thread is not ready");
    struct kthread_stats st0;
    kthread_get_stats(p.t, &st0);
    while (kthread_resume(p.t))
        p.slices++;
    if (!p.waited || !kthread_finished(p.t))
        panic("selftest kthread: the thread did not finish after its wait");
    struct kthread_stats st;
    kthread_get_stats(p.t, &st);
    /* 30 ms of work in 1 ms slices: at least a handful of yields even when
     * TCG's clock jumps. */
    if (p.slices < 5)
        panic("selftest kthread: kthread_yield_after did not yield");
    kprintf("selftest kthread: ok (%u round trips, %llu resumes, %u slices of busy work, "
            "longest run %llu us)\n",
            ROUNDS, (unsigned long long)st.resumes, p.slices,
            (unsigned long long)(st.longest_run_ns / 1000));
}

static __attribute__((noinline)) unsigned deep(unsigned depth, unsigned limit)
{
    volatile char frame[512];
    frame[0] = (char)depth;
    if (depth == limit)
        return 0;
    return deep(depth + 1, limit) + (unsigned)frame[0];
}

static void overflow_thread(void *arg)
{
    (void)arg;
    volatile unsigned limit = ~0u; /* opaque: the recursion never ends */
    kprintf("%u\n", deep(0, limit));
}

int selftest_kthread(const char *name)
{
    if (!strcmp(name, "kthread")) {
        check_pingpong();
        return 1;
    }
    if (!strcmp(name, "kthread-overflow")) {
        struct kthread *t = kthread_create("overflow", THREAD_STACK_PAGES, overflow_thread,
                                           NULL);
        (void)kthread_resume(t);
        panic("selftest kthread-overflow: the thread's stack did not overflow");
    }
    return 0;
}

#endif
