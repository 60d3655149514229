/*
 * layout_selftest.c - tern.test.layout (layout_selftest.h): the layout code
 * over the block layer, exercised on the disks QEMU gives a test VM.
 */
#ifdef TERN_TEST_HOOKS

#include "disk/layout_selftest.h"

#include "console.h"
#include "dev/blk.h"
#include "disk/blkdisk.h"
#include "disk/layout.h"
#include "mm/kmalloc.h"
#include "rng/entropy.h"

#include <string.h>

static const char *rc_word(int rc)
{
    return rc == KDISK_EREFUSED ? "refused" : rc == KDISK_EBLANK ? "blank" : "error";
}

/* Open (or format) d's layout and print it; 1 when it opened. */
static int one(struct blk_dev *d, unsigned flags, struct klayout *l)
{
    struct blkdisk bd;
    struct kdisk_report rep;
    uint8_t volume_id[16];
    if (blkdisk_open(d, &bd)) {
        kprintf("tern: layout: %s: error: no memory for the I/O buffer\n", d->name);
        return 0;
    }
    if ((flags & KLAYOUT_FORMAT) && rng_bytes(volume_id, sizeof volume_id)) {
        kprintf("tern: layout: %s: error: no random volume id (entropy not seeded)\n", d->name);
        blkdisk_close(&bd);
        return 0;
    }
    kdisk_report_clear(&rep);
    int rc = klayout_open(&bd.disk, flags, volume_id, l, &rep);
    for (unsigned i = 0; i < rep.note_count; i++)
        kprintf("tern: layout: %s: %s\n", d->name, rep.notes[i]);
    blkdisk_close(&bd);
    if (rc) {
        kprintf("tern: layout: %s: %s: %s\n", d->name, rc_word(rc), rep.error);
        return 0;
    }
    kprintf("tern: layout: %s: partition #%u at LBA %llu, layout v%u generation %llu "
            "(superblock %c), aligned to %u KiB\n",
            d->name, (unsigned)l->part.index, (unsigned long long)l->part.first,
            (unsigned)l->super.sb.version, (unsigned long long)l->super.sb.generation,
            l->super.slot ? 'B' : 'A', (unsigned)(l->super.sb.align / 1024));
    for (unsigned i = 0; i < l->region_count; i++)
        kprintf("tern: layout: %s: %s at LBA %llu, %llu blocks\n", d->name,
                ksuper_kind_name(l->regions[i].kind), (unsigned long long)l->regions[i].lba,
                (unsigned long long)l->regions[i].blocks);
    return 1;
}

void layout_selftest(const char *mode)
{
    unsigned flags = !strcmp(mode, "format") ? KLAYOUT_FORMAT : 0, opened = 0;
    if (!flags && strcmp(mode, "open")) {
        kprintf("selftest layout-%s: FAILED: unknown mode (open or format)\n", mode);
        return;
    }
    struct klayout *l = kmalloc(sizeof *l);
    if (!l) {
        kprintf("selftest layout-%s: FAILED: no memory\n", mode);
        return;
    }
    for (unsigned i = 0; i < blk_count(); i++) {
        struct blk_dev *d = blk_get(i);
        const char *why;
        if (blk_durable_ok(d, &why))
            opened += (unsigned)one(d, flags, l);
    }
    kfree(l);
    kprintf("selftest layout-%s: %u disks opened\n", mode, opened);
}

#endif
