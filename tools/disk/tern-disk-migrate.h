/*
 * tern-disk-migrate.h - tern-disk's migration of a disk to the current
 * layout over any block device (the image's, or a test's fake disk with
 * power cuts): the whole public face of tern-disk-migrate.c, which says
 * how the copy-first, switch-last steps keep the disk valid throughout.
 */
#ifndef TERN_TOOLS_TERN_DISK_MIGRATE_H
#define TERN_TOOLS_TERN_DISK_MIGRATE_H

#include "tern-disk.h"

#include <stdbool.h>
#include <stdio.h>

enum {
    TDISK_MIGRATE_REFUSED = 1,   /* the disk cannot be migrated (err says why); nothing written */
    TDISK_MIGRATE_EIO = 3,       /* a read, write, flush or check failed; the disk is
                                    the old layout, or the new one if the switch happened */
};

struct tdisk_migrate_opts {
    bool apply;          /* false: print the plan only */
    uint32_t target;     /* the layout version to write (KSUPER_VERSION) */
    bool rewrite;        /* run the steps even when the disk is at target (tests;
                            tern-disk migrate --rewrite) */
};

/* Migrate the tern disk on d, saying each step on out. 0 (done, nothing to
 * do, or the plan printed), or a TDISK_MIGRATE_* with one line in err. */
int tdisk_migrate(struct blk_dev *d, const struct tdisk_migrate_opts *opt, FILE *out, char *err,
                  size_t n);

#endif
