/*
 * write.c - writing the disk and checking it (install_int.h): the GPT
 * through the layout code, the payload's parts where it says, the data
 * partition formatted, a flush; then every part read back against its
 * SHA-256 and the layout opened again without formatting.
 */
#include "install/install.h"

#include "clock.h"
#include "console.h"
#include "dev/blk.h"
#include "disk/layout.h"
#include "install/install_int.h"
#include "mm/kmalloc.h"
#include "rng/entropy.h"
#include "rng/sha256.h"

#include <string.h>

/* ---- writing and checking -------------------------------------------------- */

static void write_part(struct blkdisk *bd, const struct payload *pl, const struct payload_part *pp)
{
    const struct kdisk *k = &bd->disk;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (pp->kind == PAYLOAD_MBR_CODE) {
        /* Only the code: the protective MBR's records after it stay. */
        if (kdisk_read(k, 0, 1, k->io, "the MBR", &rep))
            install_failed("reading the MBR", rep.error);
        payload_read(pl, pp, 0, k->io, (size_t)pp->size);
        if (kdisk_write(k, 0, 1, k->io, "the MBR", &rep))
            install_failed("writing the MBR boot code", rep.error);
        return;
    }
    for (uint64_t off = 0; off < pp->size; off += INSTALL_CHUNK) {
        size_t n = pp->size - off < INSTALL_CHUNK ? (size_t)(pp->size - off) : INSTALL_CHUNK;
        payload_read(pl, pp, off, k->io, n);
        if (kdisk_write(k, (pp->disk_offset + off) / PAYLOAD_SECTOR,
                        (uint32_t)(n / PAYLOAD_SECTOR), k->io, payload_kind_name(pp->kind), &rep))
            install_failed("writing", rep.error);
    }
}

/* Read pp's bytes back from the disk; 1 when their SHA-256 is the
 * payload's. */
static int verify_part(struct blkdisk *bd, const struct payload_part *pp)
{
    const struct kdisk *k = &bd->disk;
    struct kdisk_report rep;
    struct sha256 c;
    uint8_t got[SHA256_BYTES];
    kdisk_report_clear(&rep);
    sha256_init(&c);
    for (uint64_t off = 0; off < pp->size; off += INSTALL_CHUNK) {
        size_t n = pp->size - off < INSTALL_CHUNK ? (size_t)(pp->size - off) : INSTALL_CHUNK;
        size_t blocks = (n + PAYLOAD_SECTOR - 1) / PAYLOAD_SECTOR;
        if (kdisk_read(k, (pp->disk_offset + off) / PAYLOAD_SECTOR, (uint32_t)blocks, k->io,
                       payload_kind_name(pp->kind), &rep))
            install_failed("reading back", rep.error);
        sha256_update(&c, k->io, n);
    }
    sha256_final(&c, got);
    return !memcmp(got, pp->sha256, SHA256_BYTES);
}

/* The GPT just written must put the parts where the payload expects. */
static void check_partitions(struct blkdisk *bd, const struct payload *pl)
{
    struct kdisk_report rep;
    struct gpt *g = kmalloc(sizeof *g);
    if (!g)
        install_failed("checking the new GPT", "no memory");
    kdisk_report_clear(&rep);
    if (gpt_read(&bd->disk, g, &rep))
        install_failed("reading the new GPT back", rep.error);
    for (unsigned i = 0; i < pl->part_count; i++) {
        const struct payload_part *pp = &pl->parts[i];
        if (pp->kind == PAYLOAD_MBR_CODE)
            continue;
        const char *want = pp->kind == PAYLOAD_ESP ? "EFI system" : "BIOS boot";
        int ok = 0;
        for (unsigned j = 0; j < g->count; j++) {
            const struct gpt_part *p = &g->parts[j];
            ok |= !strcmp(install_part_kind(p), want) &&
                  p->first * PAYLOAD_SECTOR == pp->disk_offset &&
                  (p->last - p->first + 1) * PAYLOAD_SECTOR >= pp->size;
        }
        if (!ok)
            install_failed("checking the new GPT",
                           "a boot partition is not where the payload goes");
    }
    kfree(g);
}

void install_write_disk(struct blk_dev *d, struct blkdisk *bd, const struct payload *pl)
{
    struct kdisk_report rep;
    uint8_t random[64], volume_id[16];
    struct klayout *l = kmalloc(sizeof *l);
    if (!l || rng_bytes(random, sizeof random) || rng_bytes(volume_id, sizeof volume_id))
        install_refuse("no memory or no entropy for the disk's GUIDs");
    uint64_t t0 = clock_mono_ns();
    kprintf("tern: install: writing %s\n", d->name);
    kdisk_report_clear(&rep);
    if (klayout_partition(&bd->disk, pl->bios_bytes, pl->esp_bytes, random, &rep))
        install_failed("writing the GPT", rep.error);
    check_partitions(bd, pl);
    for (unsigned i = 0; i < pl->part_count; i++)
        write_part(bd, pl, &pl->parts[i]);
    kdisk_report_clear(&rep);
    if (klayout_open(&bd->disk, KLAYOUT_FORMAT, volume_id, l, &rep))
        install_failed("formatting the data partition", rep.error);
    if (kdisk_flush(&bd->disk, "the disk", &rep))
        install_failed("flushing", rep.error);
    kprintf("tern: install: written in %llu ms: GPT, MBR boot code, core.img, ESP; data "
            "partition #%u \"%s\" formatted, layout v%u\n",
            (unsigned long long)((clock_mono_ns() - t0) / 1000000), (unsigned)l->part.index,
            l->part.name, (unsigned)l->super.sb.version);

    /* Read back: every part against its digest, and the layout opened
     * again without formatting. */
    t0 = clock_mono_ns();
    uint64_t bytes = 0;
    for (unsigned i = 0; i < pl->part_count; i++) {
        const struct payload_part *pp = &pl->parts[i];
        if (!verify_part(bd, pp))
            install_failed("verifying", payload_kind_name(pp->kind));
        bytes += pp->size;
    }
    kdisk_report_clear(&rep);
    if (klayout_open(&bd->disk, 0, volume_id, l, &rep))
        install_failed("reading the data partition back", rep.error);
    kprintf("tern: install: verified in %llu ms: %llu KiB read back, SHA-256 of every part "
            "matches; data partition #%u: layout v%u generation %llu\n",
            (unsigned long long)((clock_mono_ns() - t0) / 1000000),
            (unsigned long long)(bytes >> 10), (unsigned)l->part.index,
            (unsigned)l->super.sb.version, (unsigned long long)l->super.sb.generation);
    kfree(l);
}
