/*
 * kthread.c - the cooperative scheduler (see kthread.h). A resume switches
 * from the main context's stack to the thread's, a yield switches back:
 * arch/x86_64/switch.S saves and restores the callee-saved registers. There
 * is no run queue: the main loop decides whom to resume and when.
 * Each CPU has its own main context: the running thread and the main
 * context's saved stack pointer live in its struct percpu (percpu.h), so
 * a CPU resumes and yields only its own threads (the storage threads run
 * on CPU 1's loop when there is one: store/kstorecpu.h, ADR-064).
 */
#include "kthread.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/percpu.h"
#include "arch/x86_64/smp.h"
#include "clock.h"
#include "mm/kmalloc.h"
#include "mm/stack.h"
#include "panic.h"

#include <string.h>

/* switch.S */
void kthread_switch(uint64_t *save_rsp, uint64_t next_rsp);
void kthread_start(void);
/* Called by kthread_start on the new stack; never returns. */
_Noreturn void kthread_entry(void);

enum {
    MXCSR_DEFAULT = 0x1F80, /* all SIMD exceptions masked, round to nearest */
    FCW_DEFAULT = 0x037F,   /* x87: all exceptions masked, 64-bit precision, nearest */
};

struct kthread {
    uint64_t rsp;          /* saved stack pointer while not running */
    kthread_fn fn;
    void *arg;
    const char *name;
    kthread_pred wait;     /* waiting until wait(wait_arg); NULL when not */
    void *wait_arg;
    bool finished;
    uint64_t resumed_at_ns;
    struct kthread_stats stats;
};


struct kthread *kthread_create(const char *name, size_t stack_pages, kthread_fn fn, void *arg)
{
    struct kthread *t = kmalloc(sizeof *t);
    if (!t)
        panic("out of memory for a kernel thread");
    memset(t, 0, sizeof *t);
    t->fn = fn;
    t->arg = arg;
    t->name = name;
    /* The first switch into t pops this frame (switch.S's layout) and
     * returns into kthread_start with rsp = top - 16, 16-byte aligned. */
    uint64_t top = stack_alloc(stack_pages);
    uint64_t *sp = (uint64_t *)(top - 16);
    *--sp = (uint64_t)kthread_start;             /* return address */
    for (int i = 0; i < 6; i++)
        *--sp = 0;                                /* rbp, rbx, r12..r15 */
    *--sp = 0;                                    /* padding */
    *--sp = (uint64_t)FCW_DEFAULT << 32 | MXCSR_DEFAULT;
    t->rsp = (uint64_t)sp;
    return t;
}

_Noreturn void kthread_entry(void)
{
    struct kthread *t = smp_this_cpu()->current;
    t->fn(t->arg);
    t->finished = true;
    kthread_switch(&t->rsp, smp_this_cpu()->main_rsp);
    panic("a finished kernel thread was resumed");
}

bool kthread_ready(const struct kthread *t)
{
    return !t->finished && (!t->wait || t->wait(t->wait_arg));
}

bool kthread_finished(const struct kthread *t)
{
    return t->finished;
}

bool kthread_resume(struct kthread *t)
{
    struct percpu *c = smp_this_cpu();
    if (c->current)
        panic("kthread_resume called from a kernel thread");
    if (!kthread_ready(t))
        return false;
    t->wait = NULL;
    t->wait_arg = NULL;
    c->current = t;
    t->stats.resumes++;
    t->resumed_at_ns = clock_mono_ns();
    kthread_switch(&c->main_rsp, t->rsp);
    c->current = NULL;
    uint64_t ran = clock_mono_ns() - t->resumed_at_ns;
    if (ran > t->stats.longest_run_ns)
        t->stats.longest_run_ns = ran;
    return true;
}

struct kthread *kthread_current(void)
{
    return smp_this_cpu()->current;
}

void kthread_yield(void)
{
    struct percpu *c = smp_this_cpu();
    struct kthread *t = c->current;
    if (!t)
        panic("kthread_yield called on the main context");
    kthread_switch(&t->rsp, c->main_rsp);
}

void kthread_yield_after(uint64_t slice_ns)
{
    struct kthread *t = kthread_current();
    if (t && clock_mono_ns() - t->resumed_at_ns >= slice_ns)
        kthread_yield();
}

void kthread_wait_until(kthread_pred done, void *arg, int (*poll)(void))
{
    struct kthread *t = kthread_current();
    if (t) {
        /* kthread_ready checks the condition before every resume. */
        while (!done(arg)) {
            t->wait = done;
            t->wait_arg = arg;
            kthread_yield();
        }
        return;
    }
    while (!done(arg))
        if (!poll || !poll())
            cpu_relax();
}

void kthread_get_stats(const struct kthread *t, struct kthread_stats *out)
{
    *out = t->stats;
}
