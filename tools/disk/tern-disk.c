/*
 * tern-disk.c - the offline disk tool's command line (SPEC F2, issue 14):
 *
 *   tern-disk inspect [--logical-block 512|4096] IMAGE
 *       show every layer of a tern disk: GPT (both copies), partitions,
 *       both superblock slots, the regions and their header copies, the
 *       database and backups (schema, pages, row counts, integrity_check),
 *       the telemetry region
 *   tern-disk verify [--logical-block 512|4096] IMAGE
 *       check the same; print only problems and a summary line
 *   tern-disk migrate [--logical-block 512|4096] [--apply] [--rewrite] IMAGE
 *       move a whole disk to the current layout (tern-disk-migrate.c): the
 *       plan, and with --apply the steps; refused unless verify is clean.
 *       --rewrite runs the steps on a disk already at the current layout
 *       (the database rewritten with page checksums, regions swapped)
 *
 * IMAGE is a whole-disk image, a block device, or an image of the data
 * partition alone (detected; --logical-block forces a whole disk of that
 * block size). Only migrate --apply writes to IMAGE. Exit codes, for all
 * (tern-disk.h): 0 clean, 1 problems found, 2 usage, 3 cannot open or read it.
 */
#include "tern-disk-migrate.h"
#include "tern-disk.h"

#include <stdlib.h>
#include <string.h>

/* migrate: only a whole disk that verifies clean (the walk just ran). */
static int migrate_image(struct tdisk_image *im, const struct tdisk_out *o,
                         const struct tdisk_layout *l, const struct tdisk_migrate_opts *mo)
{
    const char *path = tdisk_image_path(im);
    char err[300];
    if (o->io_errors || o->problems) {
        fprintf(stderr, "%s: not migrated: verify finds %u problem%s%s (see above)\n", path,
                o->problems, o->problems == 1 ? "" : "s", o->io_errors ? " and read errors" : "");
        return o->io_errors ? TDISK_EXIT_IO : TDISK_EXIT_CORRUPT;
    }
    if (tdisk_image_kind(im) != TDISK_WHOLE_DISK) {
        printf("%s: %s: nothing to migrate (migrate works on a whole disk)\n", path,
               tdisk_kind_text(tdisk_image_kind(im)));
        return TDISK_EXIT_OK;
    }
    if (!l->usable) {
        printf("%s: blank: nothing to migrate\n", path);
        return TDISK_EXIT_OK;
    }
    struct blk_dev *d = tdisk_image_blk(im, l->sb.physical_block);
    int rc = tdisk_migrate(d, mo, stdout, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s: migrate: %s\n", path, err);
        return rc == TDISK_MIGRATE_REFUSED ? TDISK_EXIT_CORRUPT : TDISK_EXIT_IO;
    }
    return TDISK_EXIT_OK;
}

static int usage(void)
{
    fprintf(stderr, "usage: tern-disk inspect [--logical-block 512|4096] IMAGE\n"
                    "       tern-disk verify [--logical-block 512|4096] IMAGE\n"
                    "       tern-disk migrate [--logical-block 512|4096] [--apply] [--rewrite] "
                    "IMAGE\n"
                    "IMAGE: a disk image, a block device, or a tern data partition's image.\n"
                    "Exit: 0 clean, 1 problems found, 2 usage, 3 cannot read.\n");
    return TDISK_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *cmd = argv[1], *path = NULL;
    uint32_t force_lb = 0;
    int verify = !strcmp(cmd, "verify"), migrate = !strcmp(cmd, "migrate");
    struct tdisk_migrate_opts mo = {.target = KSUPER_VERSION};
    if (!verify && !migrate && strcmp(cmd, "inspect"))
        return usage();
    for (int i = 2; i < argc; i++) {
        if (migrate && !strcmp(argv[i], "--apply")) {
            mo.apply = true;
        } else if (migrate && !strcmp(argv[i], "--rewrite")) {
            mo.rewrite = true;
        } else if (!strcmp(argv[i], "--logical-block") && i + 1 < argc) {
            const char *v = argv[++i];
            force_lb = !strcmp(v, "512") ? 512 : !strcmp(v, "4096") ? 4096 : 0;
            if (!force_lb)
                return usage();
        } else if (argv[i][0] == '-' || path) {
            return usage();
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return usage();
    char err[300];
    struct tdisk_image *im = tdisk_image_open(path, force_lb, migrate && mo.apply, err,
                                              sizeof err);
    if (!im) {
        fprintf(stderr, "tern-disk: %s\n", err);
        return TDISK_EXIT_IO;
    }
    struct tdisk_out o = {.f = stdout, .verbose = !verify && !migrate};
    static struct tdisk_layout l;
    tdisk_walk_layout(im, &o, &l);
    if (l.usable) {
        tdisk_walk_db(im, &o, &l);
        tdisk_walk_telemetry(im, &o, &l);
    }
    if (migrate) {
        int rc = migrate_image(im, &o, &l, &mo);
        tdisk_image_close(im);
        return rc;
    }
    tdisk_image_close(im);
    if (verify)
        printf("%s: %s: %u problem%s%s\n", path,
               o.io_errors ? "cannot read" : o.problems ? "CORRUPT" : "clean", o.problems,
               o.problems == 1 ? "" : "s", o.io_errors ? ", read errors" : "");
    fflush(stdout);
    return o.io_errors ? TDISK_EXIT_IO : o.problems ? TDISK_EXIT_CORRUPT : TDISK_EXIT_OK;
}
