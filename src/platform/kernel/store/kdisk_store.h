/*
 * kdisk_store.h - the unikernel's durable store on its own disk (issue 13):
 * picks the disk store.disk names among the block devices, reads its GPT
 * and layout v3 (formatting a blank tern partition), lays SQLite's files
 * onto the partition's regions (kvfs) and opens the daemon's store
 * (src/store) through them. What the broker then restores from and commits
 * to through the store thread (kstore.h).
 *
 * Every refusal (a named disk that is missing, a disk without flush, a
 * foreign or newer layout, two unusable superblocks, a database that fails
 * its check with no valid backup) is said on the console with its reason
 * and halts the machine: a broker configured to keep its data must not
 * quietly run from RAM. Nothing is written before the layout is accepted.
 */
#ifndef TERN_KSTORE_KDISK_STORE_H
#define TERN_KSTORE_KDISK_STORE_H

#include "config/config.h"
#include "store/queue.h"

/*
 * Open the store on the disk cfg->store_disk selects (the block devices
 * must be registered). Returns the store for kstore_start(), or NULL when
 * there is none to use: store.disk = none, or auto with no disk holding a
 * tern data partition and no blank disk (said on the console: RAM only).
 * integrity: also run PRAGMA integrity_check and print its result (test
 * builds' tern.test.integrity; quick_check runs at every open).
 */
const squeue_store *kdisk_store_open(const tern_config *cfg, int integrity);

/* The disk scrubber kdisk_store_open started (store.scrub_rate), or NULL;
 * the store thread runs it (kstore_set_scrub). */
struct kscrub;
struct kscrub *kdisk_store_scrubber(void);

/* 1 when d is a disk of the kind (or at the PCI address) want names; every
 * disk for auto and none. The installer picks its target with it. */
struct blk_dev;
int kdisk_store_disk_matches(const struct blk_dev *d, const tern_config_disk *want);

#endif
