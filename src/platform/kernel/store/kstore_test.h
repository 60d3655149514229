/*
 * kstore_test.h - test builds only (TERN_TEST_HOOKS): a store double for
 * the kernel tests, so the store thread, its queue and the broker's held
 * acknowledgements run under QEMU before the kernel has a disk. Chosen
 * with tern.teststore=SPEC on the kernel command line:
 *   wait:MS  every commit waits MS milliseconds the way a disk request
 *            does (kthread_wait_until: the CPU goes back to the main loop)
 *   cpu:MS   every commit computes for MS milliseconds, calling the
 *            store's progress hook (kstore_progress) the way SQLite's
 *            virtual machine does
 * It keeps nothing: a reboot starts empty. Production builds have none of
 * this.
 */
#ifndef TERN_KSTORE_TEST_H
#define TERN_KSTORE_TEST_H

#include <stddef.h>

#include "store/queue.h"

#ifdef TERN_TEST_HOOKS
/* The double for spec, or NULL with the reason in err. */
const squeue_store *kstore_test_store(const char *spec, char *err, size_t err_size);
#endif

#endif
