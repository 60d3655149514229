/*
 * tdisk_fixture.c - makes the images tern-disk's tests read (test_tern_disk.py)
 * from a disk image made by tern-mkdisk (tdisk_populate.c says how). No
 * image is checked in.
 *
 *   tdisk-fixture IMAGE RETAINED SESSIONS [--backup] [--wal] [--tele N] [--v2] [--format-only]
 *       RETAINED retained messages, SESSIONS sessions with one subscription
 *       each; --backup copies the database into backup A afterwards; --wal
 *       writes one more retained message after that and leaves it in the
 *       WAL; --tele writes N records into the telemetry journal; --v2 leaves
 *       layout v2 (what tern-disk migrate starts from).
 */
#include "tdisk_populate.h"

#include "../../tools/disk/tern-disk.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: tdisk-fixture IMAGE RETAINED SESSIONS [--backup] [--wal] "
                        "[--tele N] [--v2] [--format-only]\n");
        return 2;
    }
    const char *path = argv[1];
    struct tdisk_populate p = {.retained = atol(argv[2]), .sessions = atol(argv[3])};
    for (int i = 4; i < argc; i++) {
        p.backup |= !strcmp(argv[i], "--backup");
        p.wal |= !strcmp(argv[i], "--wal");
        p.v2 |= !strcmp(argv[i], "--v2");
        p.format_only |= !strcmp(argv[i], "--format-only");
        if (!strcmp(argv[i], "--tele") && i + 1 < argc)
            p.tele = atol(argv[++i]);
    }
    char err[300];
    struct tdisk_image *im = tdisk_image_open(path, 0, true, err, sizeof err);
    if (!im) {
        fprintf(stderr, "tdisk-fixture: %s\n", err);
        return 1;
    }
    int rc = tdisk_populate(tdisk_image_blk(im, 512), &p, err, sizeof err);
    tdisk_image_close(im);
    if (rc) {
        fprintf(stderr, "tdisk-fixture: %s: %s\n", path, err);
        return 1;
    }
    printf("%s: formatted (layout v%u), %ld retained, %ld sessions%s%s, %ld telemetry records\n", path,
           p.v2 ? 2u : (unsigned)KSUPER_VERSION, p.retained, p.sessions, p.backup ? ", backup A" : "",
           p.wal ? ", one commit left in the WAL" : "", p.tele);
    return 0;
}
