/*
 * blk_selftest.h - disk checks of test builds (TERN_TEST_HOOKS), selected
 * with the kernel argument tern.test.disk=write|verify and run after the
 * disks are probed, on every disk fit for durable storage. "write" writes
 * a pattern (at the start through a misaligned buffer that crosses pages,
 * in the middle, in the last block), flushes, reads it back, checks the
 * largest transfer and the refusals beyond the capacity and the transfer
 * limit, and tries write-zeroes and discard where offered. "verify" reads
 * the pattern back after a reboot. Each disk ends with a line
 * "selftest disk-NAME: ok: DISK" or "selftest disk-NAME: FAILED: DISK: why".
 */
#ifndef TERN_DEV_BLK_SELFTEST_H
#define TERN_DEV_BLK_SELFTEST_H

void blk_selftest(const char *name);

#endif
