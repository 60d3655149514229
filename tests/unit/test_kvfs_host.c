/*
 * test_kvfs_host.c - the kernel's store VFS (platform/kernel/store/kvfs*.c,
 * region.c) compiled for the host tests, against the fake disk: blk.h's
 * blk_submit, blk_poll_all and blk_status_text are renamed to the fake's,
 * so the VFS's code is exactly the kernel's and needs no block layer; with
 * it the page checksum stack (kcksum.c, pagesum.c; SQLite's cksumvfs is
 * linked from build/deps, src/store/store.mk). No tests here: test_kvfs.c and test_kvfs_store.c use it through kvfs.h.
 */
#define blk_submit fake_blk_submit
#define blk_poll_all fake_blk_poll_all
#define blk_status_text fake_blk_status_text

#include "fake_blk.h"

#include "platform/kernel/store/region.c"
#include "platform/kernel/store/kvfs_io.c"
#include "platform/kernel/store/kvfs.c"
#include "platform/kernel/store/pagesum.c"
#include "platform/kernel/store/kcksum.c"
