/*
 * kvfs_selftest.h - the store on SQLite through the kernel's VFS, in a
 * test build (TERN_TEST_HOOKS), on a RAM disk: "tern.test=kvfs".
 */
#ifndef TERN_KSTORE_KVFS_SELFTEST_H
#define TERN_KSTORE_KVFS_SELFTEST_H

/* Prints "selftest kvfs: ok: ..." or panics with what failed. */
void kvfs_selftest(void);

#endif
