/*
 * layout.c - from a disk to the data partition's regions: the GPT, exactly
 * one tern data partition, its superblocks (formatted when blank and
 * allowed), regions converted to absolute LBAs. Also the partitioner that
 * lays out a blank disk the way the image tool and the installer need it.
 */
#include "layout.h"

#include <stdio.h>
#include <string.h>

enum { MIB = 1024 * 1024 };

int klayout_part_is_tern(const struct gpt_part *p)
{
    struct gpt_guid tern;
    return !gpt_guid_parse(TERN_DATA_TYPE_GUID, &tern) && gpt_guid_eq(&p->type, &tern);
}

/* The one partition of tern's type, or a refusal naming all of them. */
static int find_partition(struct klayout *out, struct kdisk_report *rep)
{
    struct gpt_guid tern;
    if (gpt_guid_parse(TERN_DATA_TYPE_GUID, &tern))
        return kdisk_fail(rep, KDISK_EINVAL, "bad built-in type GUID");
    unsigned found = 0;
    char list[KDISK_MSG_MAX] = "";
    size_t used = 0;
    for (unsigned i = 0; i < out->gpt.count; i++) {
        const struct gpt_part *p = &out->gpt.parts[i];
        if (!klayout_part_is_tern(p))
            continue;
        if (!found++)
            out->part = *p;
        if (used < sizeof list) {
            int n = snprintf(list + used, sizeof list - used, "%s#%u \"%s\" at LBA %llu",
                             found > 1 ? ", " : "", (unsigned)p->index, p->name,
                             (unsigned long long)p->first);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (found == 0)
        return kdisk_fail(rep, KDISK_EREFUSED, "no tern data partition (type %s) in the GPT",
                          TERN_DATA_TYPE_GUID);
    if (found > 1)
        return kdisk_fail(rep, KDISK_EREFUSED, "%u tern data partitions (%s): exactly one is needed",
                          found, list);
    return KDISK_OK;
}

int klayout_open(const struct kdisk *d, unsigned flags, const uint8_t volume_id[16],
                 struct klayout *out, struct kdisk_report *rep)
{
    memset(out, 0, sizeof *out);
    int rc = gpt_read(d, &out->gpt, rep);
    if (rc || (rc = find_partition(out, rep)))
        return rc;
    const struct gpt_part *p = &out->part;
    out->geom = (struct ksuper_geom){
        .start = p->first * d->logical_block,
        .bytes = (p->last - p->first + 1) * d->logical_block,
        .logical_block = d->logical_block,
        .physical_block = d->physical_block,
        .optimal_io = d->optimal_io,
    };
    rc = ksuper_read(d, &out->geom, &out->super, rep);
    if (rc == KDISK_EBLANK && (flags & KLAYOUT_FORMAT)) {
        rep->error[0] = '\0';
        rc = ksuper_format(d, &out->geom, volume_id, &out->super, rep);
        if (rc)
            return rc;
        out->formatted = 1;
        kdisk_note(rep, "formatted the blank tern partition #%u (%llu MiB) with layout v%u",
                   (unsigned)p->index, (unsigned long long)(out->geom.bytes / MIB),
                   (unsigned)KSUPER_VERSION);
    } else if (rc) {
        return rc;
    }
    klayout_set_regions(out, d->logical_block);
    return KDISK_OK;
}

void klayout_set_regions(struct klayout *l, uint32_t logical_block)
{
    const struct ksuper *sb = &l->super.sb;
    l->region_count = 0;
    for (unsigned i = 0; i < sb->region_count; i++)
        l->regions[l->region_count++] = (struct kdisk_region){
            .kind = sb->regions[i].kind,
            .lba = l->part.first + sb->regions[i].offset / logical_block,
            .blocks = sb->regions[i].length / logical_block,
        };
}

const struct kdisk_region *klayout_region(const struct klayout *l, uint32_t kind)
{
    for (unsigned i = 0; i < l->region_count; i++)
        if (l->regions[i].kind == kind)
            return &l->regions[i];
    return NULL;
}

int klayout_partition(const struct kdisk *d, uint64_t bios_bytes, uint64_t esp_bytes,
                      const uint8_t random[64], struct kdisk_report *rep)
{
    uint64_t first_usable, last_usable;
    int rc = gpt_usable(d, &first_usable, &last_usable, rep);
    if (rc)
        return rc;
    const uint64_t bs = d->logical_block, mib = MIB / bs;
    const uint64_t bios_blocks = (bios_bytes + MIB - 1) / MIB * mib;
    const uint64_t esp_blocks = (esp_bytes + MIB - 1) / MIB * mib;
    const uint64_t esp_first = mib + bios_blocks;
    const uint64_t data_first = esp_first + esp_blocks;    /* after both */
    const uint64_t data_end = (last_usable + 1) / mib * mib; /* exclusive */
    if (first_usable > mib || data_end <= data_first)
        return kdisk_fail(rep, KDISK_EINVAL, "a disk of %llu MiB has no room for the partitions",
                          (unsigned long long)(d->capacity * bs / MIB));
    struct ksuper_geom g = {
        .start = data_first * bs,
        .bytes = (data_end - data_first) * bs,
        .logical_block = d->logical_block,
        .physical_block = d->physical_block,
        .optimal_io = d->optimal_io,
    };
    struct ksuper plan;
    char why[KDISK_MSG_MAX];
    if (ksuper_plan(&g, random, &plan, why, sizeof why))
        return kdisk_fail(rep, KDISK_EINVAL, "the data partition would be too small: %s", why);
    struct gpt_guid disk;
    struct gpt_new_part parts[3];
    unsigned n = 0;
    gpt_guid_random(&disk, random);
    if (bios_blocks) {
        parts[n] = (struct gpt_new_part){.first = mib, .last = mib + bios_blocks - 1,
                                         .name = "BIOS boot partition"};
        gpt_guid_parse(GPT_BIOS_BOOT_TYPE_GUID, &parts[n].type);
        gpt_guid_random(&parts[n].guid, random + 48);
        n++;
    }
    if (esp_blocks) {
        parts[n] = (struct gpt_new_part){.first = esp_first, .last = esp_first + esp_blocks - 1,
                                         .name = "EFI System Partition"};
        gpt_guid_parse(GPT_ESP_TYPE_GUID, &parts[n].type);
        gpt_guid_random(&parts[n].guid, random + 16);
        n++;
    }
    parts[n] = (struct gpt_new_part){.first = data_first, .last = data_end - 1, .name = "tern-data"};
    gpt_guid_parse(TERN_DATA_TYPE_GUID, &parts[n].type);
    gpt_guid_random(&parts[n].guid, random + 32);
    n++;
    if ((rc = gpt_write(d, &disk, parts, n, rep)))
        return rc;
    /* A blank first MiB is what makes the kernel format the partition. */
    memset(d->io, 0, KDISK_IO_BYTES);
    for (uint64_t off = 0; off < KSUPER_BLANK_SCAN; off += KDISK_IO_BYTES)
        if (kdisk_write(d, data_first + off / bs, (uint32_t)(KDISK_IO_BYTES / bs), d->io,
                        "the data partition's first MiB", rep))
            return KDISK_EIO;
    return kdisk_flush(d, "the data partition", rep);
}
