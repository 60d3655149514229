/*
 * kthread.h - cooperative kernel threads, each CPU with its own: the main
 * loop (the CPU's "main context", the stack it runs its loop on; kmain's on
 * CPU 0) resumes a thread of that CPU, the thread
 * runs until it yields, and control comes back to the main loop right
 * after its kthread_resume(). Nothing preempts a thread: interrupt
 * handlers only set flags, so between two yields a thread owns the CPU
 * and needs no locks against the main loop.
 *
 * Made for the store (issue 13): SQLite runs on a thread and yields while
 * the disk works or after a slice of CPU time, and the main loop keeps
 * serving the network meanwhile. Only the main context touches the broker.
 *
 * Each thread runs on its own stack from mm/stack.h, above an unmapped
 * guard: an overflow faults and is reported as a stack overflow.
 * Interrupts arrive on whatever stack is running (except the faults with
 * their own IST stacks), so a thread's stack has room for a trap frame
 * besides its own deepest call.
 *
 * Threads live as long as the kernel (a unikernel does not tear down its
 * subsystems); a thread whose function returns is finished and is never
 * resumed again, its stack is not reused.
 */
#ifndef TERN_KTHREAD_H
#define TERN_KTHREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kthread;

typedef void (*kthread_fn)(void *arg);
/* A condition a thread waits for; evaluated on the main context. */
typedef bool (*kthread_pred)(void *arg);

/* Create a thread that will run fn(arg) on a fresh guarded stack of
 * stack_pages pages; it first runs at the first kthread_resume(). The
 * vector unit must be on (simd_enable): the switch saves MXCSR. Panics
 * when out of memory (boot-time use only). */
struct kthread *kthread_create(const char *name, size_t stack_pages, kthread_fn fn, void *arg);

/* Main context only: run t until it yields or returns, if it is ready
 * (not finished and not waiting for a condition that is still false).
 * Returns true when t ran. */
bool kthread_resume(struct kthread *t);
/* Not finished and not waiting on a false condition (main context). */
bool kthread_ready(const struct kthread *t);
bool kthread_finished(const struct kthread *t);

/* The running thread, or NULL on the main context. */
struct kthread *kthread_current(void);

/* From a thread: back to the main context; returns at the next resume. */
void kthread_yield(void);
/* From a thread: yield if it has run for slice_ns or more since it was
 * resumed (a long computation's bound on how long the main loop waits).
 * No-op on the main context. */
void kthread_yield_after(uint64_t slice_ns);

/*
 * Wait until done(arg) is true. On a thread: yields, and the main loop
 * resumes it only once done(arg) holds (checked by kthread_ready, so a
 * waiting thread costs no switches). On the main context (boot code, e.g.
 * opening the store before the loop runs): calls poll() (may be NULL)
 * until done(arg), relaxing the CPU between tries. done must become true
 * through the main loop's work or an interrupt, never through the waiter.
 */
void kthread_wait_until(kthread_pred done, void *arg, int (*poll)(void));

/* Counters for the console and tests. */
struct kthread_stats {
    uint64_t resumes;       /* switches into the thread */
    uint64_t longest_run_ns; /* the longest stretch between a resume and the
                                thread's yield: how long it held the CPU */
};
void kthread_get_stats(const struct kthread *t, struct kthread_stats *out);

#endif
