/*
 * tern-disk-tele.c - tern-disk's look at the telemetry region (tern-disk.h):
 * the journal's head copies, its live segments and their records, read
 * with the kernel's own parsers (disk/tele.c: tele_open, tele_scan), so a
 * record the tool counts is one the kernel would trust. Read-only: the
 * image's kdisk has no write callback.
 *
 * A damaged head or live segment is a problem; a torn first head write
 * (the journal was never completely started) is only a note, as tele_open
 * then starts an empty journal, which is what a power cut there leaves.
 */
#include "tern-disk.h"

#include "platform/kernel/disk/tele.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct scan {
    struct tdisk_out *o;
    uint64_t records, segments;
    int64_t oldest_ms, newest_ms;
    char newest[400];
};

static void on_record(void *ctx, const struct tele_seg *s, const struct tele_rec *r)
{
    struct scan *sc = ctx;
    (void)s;
    if (sc->records++ == 0)
        sc->oldest_ms = r->time_ms;
    sc->newest_ms = r->time_ms;
    (void)tele_rec_json(r, sc->newest, sizeof sc->newest);
}

static void on_bad(void *ctx, uint64_t seq, const char *why)
{
    struct scan *sc = ctx;
    tdisk_problem(sc->o, "telemetry: live segment %" PRIu64 " is unusable (%s); its records are "
                  "lost", seq, why);
}

void tdisk_walk_telemetry(struct tdisk_image *im, struct tdisk_out *o,
                          const struct tdisk_layout *l)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    const struct kdisk_region *r = NULL;
    for (unsigned i = 0; i < l->region_count; i++)
        if (l->regions[i].kind == KDISK_REGION_TELEMETRY)
            r = &l->regions[i];
    if (!r)
        return; /* ksuper_decode accepts no table without it */
    struct tele_geom g;
    char why[KDISK_MSG_MAX];
    if (tele_geom_init(&g, l->sb.volume_id, r->lba, r->blocks, d->logical_block,
                       l->sb.physical_block, why, sizeof why)) {
        tdisk_problem(o, "telemetry region: %s", why);
        return;
    }
    uint8_t *seg = aligned_alloc(4096, TELE_SEG_BYTES);
    struct tele *t = calloc(1, sizeof *t);
    if (!seg || !t) {
        tdisk_io_error(o, "telemetry: out of memory");
        goto out;
    }
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    int rc = tele_open(t, d, &g, seg, NULL, NULL, &rep);
    if (rc == KDISK_EIO) {
        tdisk_io_error(o, "telemetry: %s", rep.error);
        goto out;
    }
    if (rc) {
        tdisk_problem(o, "telemetry: %s", rep.error);
        goto out;
    }
    for (unsigned i = 0; i < rep.note_count; i++) {
        if (t->head.generation == 0)
            tdisk_note(o, "%s", rep.notes[i]);
        else
            tdisk_problem(o, "%s", rep.notes[i]);
    }
    const struct tele_head *h = &t->head;
    if (h->head_seq == 0) {
        tdisk_info(o, "telemetry: empty journal (%" PRIu64 " segment slots)", g.nseg);
        goto out;
    }
    struct scan sc = {.o = o};
    kdisk_report_clear(&rep);
    if (tele_scan(d, &g, h, seg, on_record, on_bad, &sc, &rep)) {
        tdisk_io_error(o, "telemetry: %s", rep.error);
        goto out;
    }
    tdisk_info(o, "telemetry: head generation %" PRIu64 " (copy %c), segments %" PRIu64 "..%" PRIu64
               " live of %" PRIu64 " slots, %" PRIu64 " records, %" PRId64 " .. %" PRId64 " ms",
               h->generation, t->head_copy ? 'B' : 'A', h->tail_seq, h->head_seq, g.nseg,
               sc.records, sc.oldest_ms, sc.newest_ms);
    if (sc.records)
        tdisk_info(o, "  newest record: %s", sc.newest);
out:
    free(t);
    free(seg);
}
