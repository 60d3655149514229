/*
 * target.c - the installer's disk (install_int.h): which disk, and what it
 * holds. Reads only: nothing here writes.
 */
#include "install/install.h"

#include "console.h"
#include "dev/blk.h"
#include "disk/layout.h"
#include "install/install_int.h"
#include "mm/kmalloc.h"
#include "store/kdisk_store.h"

#include <stdio.h>
#include <string.h>

/* ---- choosing the disk ------------------------------------------------- */

/* Why d cannot take an install, or NULL when it can. */
static const char *unsuitable(struct blk_dev *d, char *buf, size_t n)
{
    const char *why;
    if (d->topo.read_only)
        return "read-only";
    if (!blk_durable_ok(d, &why))
        return why;
    if (d->topo.logical_block != PAYLOAD_SECTOR) {
        snprintf(buf, n, "%u-byte logical blocks (GRUB's BIOS stage boots 512-byte sectors "
                 "only)", (unsigned)d->topo.logical_block);
        return buf;
    }
    uint64_t mib = d->topo.capacity * d->topo.logical_block / INSTALL_MIB;
    if (mib < INSTALL_MIN_MIB) {
        snprintf(buf, n, "%llu MiB: too small (at least %u MiB)", (unsigned long long)mib,
                 (unsigned)INSTALL_MIN_MIB);
        return buf;
    }
    return NULL;
}

struct blk_dev *install_choose_target(const tern_config *cfg)
{
    const tern_config_disk *want = &cfg->store_disk;
    char why[120], list[200] = "";
    if (want->kind == TERN_DISK_NONE)
        install_refuse("the configuration says store.disk = none: it keeps no data on a disk");
    if (blk_count() == 0)
        install_refuse("no disk found (virtio-blk or virtio-scsi)");
    if (want->kind != TERN_DISK_AUTO) {
        for (unsigned i = 0; i < blk_count(); i++) {
            struct blk_dev *d = blk_get(i);
            if (!kdisk_store_disk_matches(d, want))
                continue;
            const char *no = unsuitable(d, why, sizeof why);
            if (no)
                install_refuse("%s, the disk store.disk names: %s", d->name, no);
            return d;
        }
        install_refuse("store.disk names a disk that is not present");
    }
    struct blk_dev *pick = NULL;
    unsigned suitable = 0;
    for (unsigned i = 0; i < blk_count(); i++) {
        struct blk_dev *d = blk_get(i);
        const char *no = unsuitable(d, why, sizeof why);
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s%s%s", used ? "; " : "", d->name,
                 no ? ": " : "", no ? no : "");
        if (!no && suitable++ == 0)
            pick = d;
    }
    if (suitable == 0)
        install_refuse("no suitable disk (%s)", list);
    if (suitable > 1)
        install_refuse("several suitable disks (%s) and none named: set store.disk in the "
                       "configuration", list);
    return pick;
}

/* ---- what the disk holds ------------------------------------------------ */

const char *install_part_kind(const struct gpt_part *p)
{
    struct gpt_guid esp, bios;
    gpt_guid_parse(GPT_ESP_TYPE_GUID, &esp);
    gpt_guid_parse(GPT_BIOS_BOOT_TYPE_GUID, &bios);
    if (klayout_part_is_tern(p))
        return "tern data";
    if (gpt_guid_eq(&p->type, &esp))
        return "EFI system";
    if (gpt_guid_eq(&p->type, &bios))
        return "BIOS boot";
    return "other";
}

/* Show what d holds; 1 when it is empty: no partition table and zeros
 * wherever the install writes (the first data_end bytes and the last MiB,
 * the backup GPT). Reads only. */
int install_survey(struct blkdisk *bd, uint64_t data_end)
{
    const struct kdisk *k = &bd->disk;
    struct kdisk_report rep;
    struct gpt *g = kmalloc(sizeof *g);
    if (!g)
        install_refuse("no memory to read the disk's partition table");
    kdisk_report_clear(&rep);
    int holds = 0;
    if (gpt_read(k, g, &rep) == KDISK_OK) {
        holds = 1;
        kprintf("tern: install: it holds a GPT%s with %u partition(s)\n",
                g->from_backup ? " (backup copy)" : "", g->count);
        for (unsigned i = 0; i < g->count; i++) {
            const struct gpt_part *p = &g->parts[i];
            kprintf("tern: install:   #%u \"%s\" %s, %llu MiB at LBA %llu\n",
                    (unsigned)p->index, p->name, install_part_kind(p),
                    (unsigned long long)((p->last - p->first + 1) * k->logical_block / INSTALL_MIB),
                    (unsigned long long)p->first);
        }
    }
    kfree(g);
    if (kdisk_read(k, 0, 1, k->io, "LBA 0", &rep))
        install_refuse("%s", rep.error);
    if (!holds && k->io[510] == 0x55 && k->io[511] == 0xAA) {
        unsigned n = 0;
        for (unsigned i = 0; i < 4; i++)
            n += k->io[446 + 16 * i + 4] != 0;
        if (n) {
            kprintf("tern: install: it holds an MBR partition table with %u partition(s)\n", n);
            holds = 1;
        }
    }
    if (holds)
        return 0;
    uint64_t last = k->capacity - INSTALL_MIB / k->logical_block;
    uint32_t per = INSTALL_CHUNK / k->logical_block;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t from = pass ? last : 0, to = pass ? k->capacity : data_end / k->logical_block;
        for (uint64_t lba = from; lba < to; lba += per) {
            uint32_t n = to - lba < per ? (uint32_t)(to - lba) : per;
            if (kdisk_read(k, lba, n, k->io, "the disk", &rep))
                install_refuse("%s", rep.error);
            if (!kdisk_is_zero(k->io, (size_t)n * k->logical_block)) {
                kprintf("tern: install: it holds data: non-zero bytes near LBA %llu, no "
                        "partition table\n", (unsigned long long)lba);
                return 0;
            }
        }
    }
    kprintf("tern: install: it is empty (no partition table, zeros where the install "
            "writes)\n");
    return 1;
}
