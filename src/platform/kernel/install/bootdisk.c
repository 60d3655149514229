/*
 * bootdisk.c - finding the boot disk by its ESP's FAT volume id
 * (bootdisk.h).
 */
#include "install/bootdisk.h"

#include "install/espid.h"

#include "console.h"
#include "dev/blk.h"
#include "disk/blkdisk.h"
#include "disk/gpt.h"
#include "mm/kmalloc.h"

#include <string.h>

/* Boot-time state, written once by bootdisk_find. */
static const struct blk_dev *found;

/* The index of d's ESP whose volume id is want, or 0. Reads only. */
static unsigned esp_with(struct blk_dev *d, uint32_t want)
{
    struct blkdisk bd;
    struct kdisk_report rep;
    struct gpt_guid esp;
    unsigned index = 0;
    struct gpt *g = kmalloc(sizeof *g);
    if (!g || blkdisk_open(d, &bd)) {
        kfree(g);
        return 0;
    }
    gpt_guid_parse(GPT_ESP_TYPE_GUID, &esp);
    kdisk_report_clear(&rep);
    if (gpt_read(&bd.disk, g, &rep) == KDISK_OK) {
        for (unsigned i = 0; i < g->count && !index; i++) {
            uint32_t id;
            if (!gpt_guid_eq(&g->parts[i].type, &esp) ||
                kdisk_read(&bd.disk, g->parts[i].first, 1, bd.disk.io, "the ESP", &rep))
                continue;
            if (espid_fat_volume_id(bd.disk.io, bd.disk.logical_block, &id) == 0 &&
                id == want)
                index = g->parts[i].index;
        }
    }
    blkdisk_close(&bd);
    kfree(g);
    return index;
}

void bootdisk_find(const struct boot_info *bi)
{
    char text[16];
    uint32_t want;
    if (!bootinfo_arg(bi, "tern.esp", text, sizeof text))
        return;
    if (espid_parse(text, &want)) {
        kprintf("tern: boot disk: tern.esp=%s is not a FAT volume id (XXXX-XXXX)\n", text);
        return;
    }
    for (unsigned i = 0; i < blk_count(); i++) {
        struct blk_dev *d = blk_get(i);
        unsigned index = esp_with(d, want);
        if (index) {
            found = d;
            kprintf("tern: booted from %s (ESP #%u, FAT volume %04X-%04X)\n", d->name, index,
                    (unsigned)(want >> 16), (unsigned)(want & 0xFFFF));
            return;
        }
    }
    kprintf("tern: boot disk: no disk's ESP has FAT volume %s (%u disks): booted from a disk "
            "this kernel does not drive\n", text, blk_count());
}

const struct blk_dev *bootdisk(void) { return found; }
