/*
 * kstorecpu.h - the storage core (issue 18, ADR-064): with two or more
 * CPUs, the store's kernel threads - the store thread (kstore.h) and the
 * telemetry writer (ktele.h), everything that runs SQLite or touches the
 * data disk after boot - run on CPU 1, the CPU the boot gave the storage
 * role (percpu.h), so a commit never takes CPU 0 from the network.
 *
 * CPU 1 owns the disks from the hand-over on (blk_set_owner: it alone
 * submits and polls; their MSI-X messages are aimed at its local APIC),
 * resumes the threads from its own loop, and sleeps in hlt when none is
 * ready and no disk interrupt waits. CPU 0 wakes it with an IPI when it
 * queues work (kstorecpu_run); the store thread wakes CPU 0 the same way
 * when a group commit finished (kstorecpu_notify_main), so a halted main
 * loop reports the acknowledgements at once. What the two CPUs share
 * (the store queue, the telemetry queue, the scrubber's status) is under
 * each owner's spinlock (kstore.c, ktele.c, kscrub.c).
 *
 * With one CPU nothing changes: kstorecpu_run resumes the thread on the
 * main loop as before, and the notifications are no-ops.
 */
#ifndef TERN_KSTORE_KSTORECPU_H
#define TERN_KSTORE_KSTORECPU_H

#include <stdbool.h>

struct kthread;

enum {
    KSTORECPU_THREADS = 2, /* the store thread and the telemetry writer */
};

/* Boot, CPU 0: t is a storage thread (created, never resumed yet). */
void kstorecpu_add(struct kthread *t);

/* Boot, CPU 0, once the store and the journal are open and before the
 * main loop: hand the disks, their interrupts and the threads to the
 * storage CPU when there is one. 1 when they run there from now on (the
 * boot log says so), 0 when they stay on CPU 0's main loop (one CPU, or
 * no storage thread). */
int kstorecpu_start(void);

/* Main loop: let t run. One CPU: resume it (kthread_resume's result).
 * Storage core: wake CPU 1 if news (work was just queued for it) and
 * return 0 (nothing ran here). */
int kstorecpu_run(struct kthread *t, bool news);

/* Main side: wake the storage CPU to look at its threads' conditions
 * again (a console request); no-op with one CPU. */
void kstorecpu_wake(void);

/* A storage thread: results wait for the main loop; wake CPU 0 in case
 * it sleeps. No-op with one CPU (the main loop resumed the thread and
 * looks next). */
void kstorecpu_notify_main(void);

#endif
