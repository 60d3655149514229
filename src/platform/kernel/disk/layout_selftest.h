/*
 * layout_selftest.h - the disk layout on real disks in test builds
 * (TERN_TEST_HOOKS): the kernel argument tern.test.layout=open|format runs
 * klayout_open through blkdisk on every disk fit for durable storage,
 * formatting a blank tern partition with "format", and prints what it
 * found, one line each: "tern: layout: DISK: NOTE", the partition and
 * generation, "tern: layout: DISK: REGION at LBA N, M blocks", or
 * "tern: layout: DISK: refused|blank|error: WHY"; then
 * "selftest layout-MODE: N disks opened". Production boots open the
 * layout from the store's start-up (issue 13), not from here.
 */
#ifndef TERN_DISK_LAYOUT_SELFTEST_H
#define TERN_DISK_LAYOUT_SELFTEST_H

void layout_selftest(const char *mode);

#endif
