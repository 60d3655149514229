/*
 * tern-disk-layout.c - tern-disk's walk over the layout (tern-disk.h): the
 * GPT (which copy is used and why), the partitions, both superblock slots,
 * the region table and each region's two kvfs header copies. The kernel's
 * own readers (gpt.c, super.c, layout.c, region.c) judge every structure,
 * so the tool refuses exactly what the kernel refuses; a note the kernel
 * would print on boot (a GPT or superblock copy skipped) is a problem here,
 * since verify's job is to find what a boot silently works around.
 */
#include "tern-disk.h"

#include <inttypes.h>
#include <string.h>

enum { MIB = 1024 * 1024 };

static const char *slot_state_text(enum ksuper_slot_state s)
{
    static const char *const text[] = {"valid", "blank", "foreign", "corrupt", "newer", "older"};
    return (unsigned)s < sizeof text / sizeof text[0] ? text[s] : "?";
}

static void hex16(const uint8_t id[16], char out[33])
{
    for (unsigned i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* Both superblock slots, as ksuper_read sees each before it decides. */
static void show_slots(struct tdisk_image *im, struct tdisk_out *o, uint64_t part_start)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    static const uint32_t off[2] = {KSUPER_SLOT_A, KSUPER_SLOT_B};
    for (unsigned s = 0; s < 2; s++) {
        struct kdisk_report rep;
        struct ksuper sb;
        char why[KDISK_MSG_MAX] = "", id[33];
        kdisk_report_clear(&rep);
        uint64_t lba = (part_start + off[s]) / d->logical_block;
        uint32_t count = KSUPER_READ_BYTES / d->logical_block;
        if (kdisk_read(d, lba, count ? count : 1, d->io, "a superblock slot", &rep)) {
            tdisk_io_error(o, "superblock %c: %s", 'A' + s, rep.error);
            continue;
        }
        enum ksuper_slot_state st = ksuper_decode(d->io, KSUPER_READ_BYTES, &sb, why, sizeof why);
        if (st == KSUPER_VALID) {
            hex16(sb.volume_id, id);
            tdisk_info(o, "  superblock %c: valid, layout v%u, generation %" PRIu64
                       ", volume %s, blocks %u/%u, aligned to %u KiB, made for %" PRIu64 " MiB",
                       'A' + s, (unsigned)sb.version, sb.generation, id,
                       (unsigned)sb.logical_block, (unsigned)sb.physical_block,
                       (unsigned)(sb.align / 1024), sb.partition_bytes / MIB);
        } else {
            tdisk_info(o, "  superblock %c: %s%s%s", 'A' + s, slot_state_text(st),
                       why[0] ? ": " : "", why);
        }
    }
}

static const char *owner_text(uint32_t owner)
{
    static const char *const text[] = {"empty", "main file", "-wal", "-journal"};
    return owner < 4 ? text[owner] : "?";
}

/* One region's header copies; fills view, *ok when it has a usable state. */
static void show_region_headers(struct tdisk_image *im, struct tdisk_out *o, uint32_t pb,
                                const struct kdisk_region *r, struct tdisk_rgn_view *view,
                                bool *ok)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    const char *name = ksuper_kind_name(r->kind);
    static uint8_t copy[RGN_HDR_COPIES][KDISK_IO_BYTES];
    *ok = false;
    if (!tdisk_rgn_role(r->kind))
        return;
    for (unsigned i = 0; i < RGN_HDR_COPIES; i++) {
        struct kdisk_report rep;
        kdisk_report_clear(&rep);
        if (kdisk_read(d, r->lba + (uint64_t)i * (pb / d->logical_block), pb / d->logical_block,
                       d->io, "a region header", &rep)) {
            tdisk_io_error(o, "%s region: header copy %u: %s", name, i, rep.error);
            return;
        }
        memcpy(copy[i], d->io, pb);
    }
    if (tdisk_rgn_examine(copy[0], copy[1], d->logical_block, pb, r->kind, r->lba, r->blocks,
                          view)) {
        tdisk_problem(o, "%s region: %" PRIu64 " blocks cannot hold two header copies of "
                      "%u bytes and data", name, r->blocks, (unsigned)pb);
        return;
    }
    for (unsigned i = 0; i < RGN_HDR_COPIES; i++) {
        int rc = view->copy_rc[i];
        if (rc == RGN_OK)
            tdisk_info(o, "    header copy %u: sequence %" PRIu64 "%s", i, view->copy_seq[i],
                       view->pick_rc == RGN_OK && view->slot == i ? " (in use)" : "");
        else
            tdisk_info(o, "    header copy %u: %s", i, rgn_parse_text(rc));
    }
    if (view->pick_rc != RGN_OK) {
        tdisk_problem(o, "%s region at LBA %" PRIu64 ": %s (the store refuses to mount)", name,
                      r->lba, rgn_parse_text(view->pick_rc));
        return;
    }
    *ok = true;
    tdisk_info(o, "    state: %s, %" PRIu64 " of %" PRIu64 " bytes, sequence %" PRIu64,
               owner_text(view->owner), view->size, view->capacity, view->seq);
    /* A copy with a bad checksum beside a valid one is what a cut during a
     * header write leaves (the next write replaces it); anything else the
     * writer never produces. */
    for (unsigned i = 0; i < RGN_HDR_COPIES; i++) {
        int rc = view->copy_rc[i];
        if (rc == RGN_TORN && view->seq != 0)
            tdisk_note(o, "%s region: header copy %u is torn (a cut header write; the next "
                       "write replaces it)", name, i);
        else if (rc != RGN_OK && rc != RGN_BLANK && rc != RGN_TORN)
            tdisk_problem(o, "%s region: header copy %u: %s", name, i, rgn_parse_text(rc));
    }
}

/* The regions of the superblock in use, with absolute LBAs. */
static void walk_regions(struct tdisk_image *im, struct tdisk_out *o, struct tdisk_layout *out)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    const struct ksuper *sb = &out->sb;
    tdisk_info(o, "regions:");
    for (unsigned i = 0; i < sb->region_count; i++) {
        const struct ksuper_region *sr = &sb->regions[i];
        struct kdisk_region *r = &out->regions[out->region_count++];
        *r = (struct kdisk_region){
            .kind = sr->kind,
            .lba = out->part_lba + sr->offset / d->logical_block,
            .blocks = sr->length / d->logical_block,
        };
        tdisk_info(o, "  %-10s offset %" PRIu64 " MiB, length %" PRIu64 " MiB (LBA %" PRIu64
                   ", %" PRIu64 " blocks)", ksuper_kind_name(r->kind), sr->offset / MIB,
                   sr->length / MIB, r->lba, r->blocks);
        show_region_headers(im, o, sb->physical_block, r, &out->views[i], &out->view_ok[i]);
    }
}

static void report_notes(struct tdisk_out *o, const struct kdisk_report *rep)
{
    for (unsigned i = 0; i < rep->note_count; i++)
        tdisk_problem(o, "%s", rep->notes[i]);
}

/* The superblocks of a partition at byte start of bytes. */
static void walk_partition(struct tdisk_image *im, struct tdisk_out *o, uint64_t start,
                           uint64_t bytes, struct tdisk_layout *out)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    struct ksuper_geom g = {
        .start = start,
        .bytes = bytes,
        .logical_block = d->logical_block,
        .physical_block = d->physical_block,
    };
    struct ksuper_state st;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    show_slots(im, o, start);
    int rc = ksuper_read(d, &g, &st, &rep);
    report_notes(o, &rep);
    if (rc == KDISK_EBLANK) {
        tdisk_info(o, "  blank: the kernel formats it at its first boot");
        return;
    }
    if (rc == KDISK_EIO) {
        tdisk_io_error(o, "%s", rep.error);
        return;
    }
    if (rc) {
        tdisk_problem(o, "%s", rep.error);
        return;
    }
    out->usable = true;
    out->sb = st.sb;
    out->part_lba = start / d->logical_block;
    tdisk_info(o, "  in use: superblock %c, layout v%u, generation %" PRIu64, st.slot ? 'B' : 'A',
               (unsigned)st.sb.version, st.sb.generation);
    if (bytes > st.sb.partition_bytes)
        tdisk_info(o, "  the partition (%" PRIu64 " MiB) is larger than its layout (%" PRIu64
                   " MiB): the disk grew, the layout has not yet", bytes / MIB,
                   st.sb.partition_bytes / MIB);
    walk_regions(im, o, out);
}

static void walk_gpt(struct tdisk_image *im, struct tdisk_out *o, struct tdisk_layout *out)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    static struct gpt g;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    int rc = gpt_read(d, &g, &rep);
    report_notes(o, &rep);
    if (rc == KDISK_EIO) {
        tdisk_io_error(o, "%s", rep.error);
        return;
    }
    if (rc) {
        tdisk_problem(o, "%s", rep.error);
        return;
    }
    char guid[GPT_GUID_TEXT];
    gpt_guid_text(&g.hdr.disk_guid, guid);
    tdisk_info(o, "GPT %s: using the %s copy (%s); usable LBAs %" PRIu64 "..%" PRIu64, guid,
               g.from_backup ? "backup" : "primary",
               rep.note_count ? "see the problems" : "both copies valid and equal",
               g.hdr.first_usable, g.hdr.last_usable);
    const struct gpt_part *tern = NULL;
    unsigned terns = 0;
    for (unsigned i = 0; i < g.count; i++) {
        const struct gpt_part *p = &g.parts[i];
        gpt_guid_text(&p->type, guid);
        int is_tern = klayout_part_is_tern(p);
        tdisk_info(o, "  #%u %-22s LBA %" PRIu64 "..%" PRIu64 " (%" PRIu64 " MiB) type %s%s",
                   (unsigned)p->index, p->name, p->first, p->last,
                   (p->last - p->first + 1) * d->logical_block / MIB, guid,
                   is_tern ? " (tern data)" : "");
        if (is_tern && !terns++)
            tern = p;
    }
    if (terns != 1) {
        if (terns)
            tdisk_problem(o, "%u tern data partitions: exactly one is needed", terns);
        else
            tdisk_problem(o, "no tern data partition (type " TERN_DATA_TYPE_GUID ")");
        return;
    }
    if (tern->first * d->logical_block % KDISK_IO_BYTES)
        tdisk_info(o, "  (the data partition does not start on 64 KiB)");
    tdisk_info(o, "data partition #%u:", (unsigned)tern->index);
    walk_partition(im, o, tern->first * d->logical_block,
                   (tern->last - tern->first + 1) * d->logical_block, out);
}

/* A partition image: where the partition stood on its disk, from the first
 * intact region header (headers name absolute LBAs). The image is then
 * presented at that LBA. Without one (a fresh partition) it stays at 0. */
static uint64_t find_base(struct tdisk_image *im)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    struct ksuper_geom g = {.bytes = d->capacity * d->logical_block,
                            .logical_block = d->logical_block,
                            .physical_block = d->physical_block};
    struct ksuper_state st;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (ksuper_read(d, &g, &st, &rep))
        return 0;
    uint32_t pb = st.sb.physical_block;
    for (unsigned i = 0; i < st.sb.region_count; i++) {
        const struct ksuper_region *r = &st.sb.regions[i];
        uint64_t rel = r->offset / d->logical_block, base;
        for (unsigned c = 0; c < RGN_HDR_COPIES; c++) {
            if (!tdisk_rgn_role(r->kind) ||
                kdisk_read(d, rel + c * (pb / d->logical_block), pb / d->logical_block, d->io,
                           "a region header", &rep))
                break;
            if (!tdisk_partition_base(d->io, pb, r->kind, rel, &base))
                return base;
        }
    }
    return 0;
}

void tdisk_walk_layout(struct tdisk_image *im, struct tdisk_out *o, struct tdisk_layout *out)
{
    const struct kdisk *d = tdisk_image_kdisk(im);
    struct kdisk_report rep;
    memset(out, 0, sizeof *out);
    kdisk_report_clear(&rep);
    tdisk_info(o, "%s: %s%s, %" PRIu64 " MiB, %u-byte blocks", tdisk_image_path(im),
               tdisk_kind_text(tdisk_image_kind(im)),
               tdisk_image_is_blockdev(im) ? " (block device)" : "",
               d->capacity * d->logical_block / MIB, (unsigned)d->logical_block);
    if (kdisk_check(d, &rep)) {
        tdisk_problem(o, "%s", rep.error);
        return;
    }
    switch (tdisk_image_kind(im)) {
    case TDISK_BLANK:
        tdisk_info(o, "nothing to check: a blank image");
        return;
    case TDISK_WHOLE_DISK:
        walk_gpt(im, o, out);
        return;
    case TDISK_PARTITION: {
        uint64_t bytes = d->capacity * d->logical_block, base = find_base(im);
        tdisk_image_set_base(im, base);
        tdisk_info(o, "data partition (the whole image; it stood at LBA %" PRIu64 " of its disk, "
                   "as its region headers say):", base);
        walk_partition(im, o, base * d->logical_block, bytes, out);
        return;
    }
    default:
        tdisk_problem(o, "%s: no GPT and no tern superblock", tdisk_image_path(im));
        return;
    }
}
