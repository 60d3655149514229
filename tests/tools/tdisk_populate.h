/*
 * tdisk_populate.h - fills a disk for tern-disk's tests (the fixture that
 * makes image files, the migration's cut harness that works on a fake
 * disk): the kernel's layout code formats it, the daemon's store writes
 * rows through kvfs, the kernel's journal writer adds telemetry.
 */
#ifndef TERN_TEST_TDISK_POPULATE_H
#define TERN_TEST_TDISK_POPULATE_H

#include "platform/kernel/dev/blk.h"

#include <stdbool.h>
#include <stddef.h>

struct tdisk_populate {
    bool partition;      /* write a GPT first (a blank fake disk), no ESP */
    bool format_only;    /* format the layout and stop: no database yet */
    long retained, sessions;
    bool backup;         /* copy the database into backup A afterwards */
    bool wal;            /* then one more commit left in the WAL */
    long tele;           /* telemetry records */
    bool v2;             /* leave layout v2 (superblocks version 2, no page
                            checksums): what a migration starts from */
};

/* 0, or -1 with one line in err. Ends with everything flushed. */
int tdisk_populate(struct blk_dev *d, const struct tdisk_populate *p, char *err, size_t n);

#endif
