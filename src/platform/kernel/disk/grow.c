/*
 * grow.c - growing the layout in place (see grow.h): the GPT, then the
 * data partition's region table. The order of the writes is the whole
 * point: each one leaves a disk that opens as the old or the new state.
 */
#include "grow.h"

#include <stdio.h>
#include <string.h>

enum { MIB = 1024 * 1024 };

static uint64_t region_bytes(const struct ksuper *sb, uint32_t kind)
{
    for (unsigned i = 0; i < sb->region_count; i++)
        if (sb->regions[i].kind == kind)
            return sb->regions[i].length;
    return 0;
}

/* The partition l->part.index again after the GPT was rewritten. */
static int reread_gpt(const struct kdisk *d, struct klayout *l, struct kdisk_report *rep)
{
    int rc = gpt_read(d, &l->gpt, rep);
    if (rc)
        return rc;
    for (unsigned i = 0; i < l->gpt.count; i++) {
        const struct gpt_part *p = &l->gpt.parts[i];
        if (gpt_guid_eq(&p->guid, &l->part.guid) && p->first == l->part.first) {
            l->part = *p;
            l->geom.bytes = (p->last - p->first + 1) * d->logical_block;
            return KDISK_OK;
        }
    }
    return kdisk_fail(rep, KDISK_EREFUSED, "the tern data partition is gone from the grown GPT");
}

/* Step 1: move the backup GPT to the disk's end and grow the partition. */
static int grow_gpt(const struct kdisk *d, struct klayout *l, struct kgrow *out,
                    struct kdisk_report *rep)
{
    char why[KDISK_MSG_MAX];
    uint64_t last_usable;
    /* A growth cut while it rewrote the primary copy leaves it unusable
     * and the new backup at the end: finish it first. */
    if (l->gpt.from_backup && l->gpt.hdr.my_lba == d->capacity - 1) {
        int rc = gpt_repair_primary(d, &l->gpt, rep);
        if (rc == KDISK_EIO)
            return rc;
        if (rc) {
            kdisk_note(rep, "the primary GPT stays unusable: %s", rep->error);
            rep->error[0] = '\0';
        } else {
            kdisk_note(rep, "rewrote the unusable primary GPT from the backup at LBA %llu",
                       (unsigned long long)(d->capacity - 1));
            if ((rc = reread_gpt(d, l, rep)))
                return rc;
        }
    }
    int room = gpt_grow_room(d, &l->gpt, &last_usable, why, sizeof why, rep);
    if (room < 0) {
        rep->error[0] = '\0';
        kdisk_note(rep, "the disk has %llu MiB but its GPT is not grown: %s",
                   (unsigned long long)(d->capacity * d->logical_block / MIB), why);
        return KDISK_OK;
    }
    if (room == 0)
        return KDISK_OK;
    const uint64_t mib = MIB / d->logical_block;
    uint64_t new_last = 0;
    uint32_t index = 0;
    const struct gpt_part *after = NULL;
    for (unsigned i = 0; i < l->gpt.count; i++)
        if (l->gpt.parts[i].first > l->part.last &&
            (!after || l->gpt.parts[i].first < after->first))
            after = &l->gpt.parts[i];
    if (after) {
        kdisk_note(rep, "partition #%u \"%s\" at LBA %llu follows the tern data partition: "
                   "the partition keeps its size (tern moves no other partition)",
                   (unsigned)after->index, after->name, (unsigned long long)after->first);
    } else {
        uint64_t end = (last_usable + 1) / mib * mib; /* exclusive, on a whole MiB */
        if (end > l->part.last + 1) {
            index = l->part.index;
            new_last = end - 1;
        }
    }
    int rc = gpt_grow(d, &l->gpt, index, new_last, rep);
    if (rc)
        return rc;
    out->gpt_moved = 1;
    out->part_grown = index != 0;
    return reread_gpt(d, l, rep);
}

/* Zero the two header blocks of a region at partition offset off: an
 * empty region to the store's VFS (docs/DISK.md, "Inside the regions"). */
static int zero_headers(const struct kdisk *d, const struct klayout *l, uint64_t off,
                        const char *what, struct kdisk_report *rep)
{
    const uint32_t pb = d->physical_block;
    memset(d->io, 0, pb);
    for (unsigned c = 0; c < 2; c++)
        if (kdisk_write(d, (l->geom.start + off + (uint64_t)c * pb) / d->logical_block,
                        pb / d->logical_block, d->io, what, rep))
            return KDISK_EIO;
    return KDISK_OK;
}

/* Step 2: the region table. */
static int grow_regions(const struct kdisk *d, struct klayout *l, struct kgrow *out,
                        struct kdisk_report *rep)
{
    char why[KDISK_MSG_MAX];
    struct ksuper next;
    int plan = ksuper_grow_plan(&l->super.sb, &l->geom, &next, why, sizeof why);
    if (plan < 0) {
        kdisk_note(rep, "the tern partition has %llu MiB but its layout is not grown: %s",
                   (unsigned long long)(l->geom.bytes / MIB), why);
        return KDISK_OK;
    }
    if (plan > 0)
        return KDISK_OK;
    const struct ksuper *cur = &l->super.sb;
    /* The old backups first: emptied (both header copies zeroed) they are
     * still a valid state of the old table, and nothing the old table
     * needs lies where the grown database and the new backups go. */
    for (unsigned i = 0; i < cur->region_count; i++) {
        const struct ksuper_region *r = &cur->regions[i];
        if ((r->kind == KDISK_REGION_BACKUP_A || r->kind == KDISK_REGION_BACKUP_B) &&
            zero_headers(d, l, r->offset, "an old backup region's header", rep))
            return KDISK_EIO;
    }
    if (kdisk_flush(d, "the emptied backups", rep))
        return KDISK_EIO;
    /* Then the new backups start empty, whatever the space held (stale
     * pages of the old backups, the old GPT's backup copy). */
    for (unsigned i = 0; i < next.region_count; i++) {
        const struct ksuper_region *r = &next.regions[i];
        if ((r->kind == KDISK_REGION_BACKUP_A || r->kind == KDISK_REGION_BACKUP_B) &&
            zero_headers(d, l, r->offset, "a new backup region's header", rep))
            return KDISK_EIO;
    }
    if (kdisk_flush(d, "the new backups", rep))
        return KDISK_EIO;
    /* The switch: the database keeps its start (its region header, which
     * names the old length, is accepted for a grown region). */
    int rc = ksuper_update(d, &l->geom, &l->super, &next, rep);
    if (rc)
        return rc;
    out->layout_grown = 1;
    klayout_set_regions(l, d->logical_block);
    return KDISK_OK;
}

int klayout_grow(const struct kdisk *d, struct klayout *l, struct kgrow *out,
                 struct kdisk_report *rep)
{
    memset(out, 0, sizeof *out);
    out->old_part_bytes = l->geom.bytes;
    out->old_db_bytes = region_bytes(&l->super.sb, KDISK_REGION_DB);
    int rc = kdisk_check(d, rep);
    if (!rc && (!d->write || !d->flush))
        return KDISK_OK; /* a read-only disk is used as it is */
    if (!rc)
        rc = grow_gpt(d, l, out, rep);
    if (!rc)
        rc = grow_regions(d, l, out, rep);
    out->part_bytes = l->geom.bytes;
    out->db_bytes = region_bytes(&l->super.sb, KDISK_REGION_DB);
    return rc;
}
