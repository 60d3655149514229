/*
 * install.c - install mode (install.h). Order matters for "a refusal
 * writes nothing": the payload is checked whole (structure and every
 * part's SHA-256), the disk chosen and surveyed with reads only, and the
 * operator's answer taken, before the first write.
 */
#include "install/install.h"

#include "acpi/poweroff.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "console.h"
#include "dev/blk.h"
#include "dev/conin.h"
#include "disk/blkdisk.h"
#include "disk/gpt.h"
#include "disk/layout.h"
#include "install/payload.h"
#include "mm/kmalloc.h"
#include "rng/entropy.h"
#include "rng/sha256.h"
#include "store/kdisk_store.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum {
    MIB = 1 << 20,
    CHUNK = KDISK_IO_BYTES,     /* bytes per read or write */
    ANSWER_MAX = 16,
    POLL_US = 1000,
};

static _Noreturn void halt(void)
{
    kprintf("tern: install: halted\n");
    cpu_halt_forever();
}

/* A refusal: nothing has been written. */
static _Noreturn __attribute__((format(printf, 1, 2))) void refuse(const char *fmt, ...)
{
    char why[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kprintf("tern: install: refused: %s; nothing was written\n", why);
    halt();
}

/* A failure after the first write: the disk is incomplete. */
static _Noreturn void failed(const char *what, const char *why)
{
    kprintf("tern: install: FAILED %s: %s\n", what, why);
    kprintf("tern: install: the disk is incomplete and will not boot; run the install again\n");
    halt();
}

/* ---- the payload ------------------------------------------------------- */

static int in_usable_ram(const struct boot_info *bi, uint64_t pa, uint64_t len)
{
    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type == MEM_USABLE && pa >= r->base && len <= r->len &&
            pa - r->base <= r->len - len)
            return 1;
    }
    return 0;
}

static void load_payload(const struct boot_info *bi, struct payload *pl, uint8_t *scratch)
{
    char err[PAYLOAD_ERR_MAX];
    if (!bi->module2_len || strcmp(bi->module2_name, "tern.install"))
        refuse("no install payload (the ISO's install entry loads /boot/tern.install as the "
               "module \"tern.install\")");
    if (!in_usable_ram(bi, bi->module2_phys, bi->module2_len))
        refuse("the install payload lies outside usable memory");
    if (payload_parse(phys_to_virt(bi->module2_phys), bi->module2_len, pl, err, sizeof err) ||
        payload_check_parts(pl, scratch, CHUNK, err, sizeof err))
        refuse("bad install payload: %s", err);
    const struct payload_part *core = payload_part(pl, PAYLOAD_BIOS_BOOT);
    const struct payload_part *esp = payload_part(pl, PAYLOAD_ESP);
    kprintf("tern: install: payload v%u checked (SHA-256 of every part): MBR boot code, "
            "core.img %llu KiB, ESP %llu MiB\n", (unsigned)PAYLOAD_VERSION,
            (unsigned long long)(core->size >> 10), (unsigned long long)(esp->size / MIB));
}

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
    uint64_t mib = d->topo.capacity * d->topo.logical_block / MIB;
    if (mib < INSTALL_MIN_MIB) {
        snprintf(buf, n, "%llu MiB: too small (at least %u MiB)", (unsigned long long)mib,
                 (unsigned)INSTALL_MIN_MIB);
        return buf;
    }
    return NULL;
}

static struct blk_dev *choose_target(const tern_config *cfg)
{
    const tern_config_disk *want = &cfg->store_disk;
    char why[120], list[200] = "";
    if (want->kind == TERN_DISK_NONE)
        refuse("the configuration says store.disk = none: it keeps no data on a disk");
    if (blk_count() == 0)
        refuse("no disk found (virtio-blk or virtio-scsi)");
    if (want->kind != TERN_DISK_AUTO) {
        for (unsigned i = 0; i < blk_count(); i++) {
            struct blk_dev *d = blk_get(i);
            if (!kdisk_store_disk_matches(d, want))
                continue;
            const char *no = unsuitable(d, why, sizeof why);
            if (no)
                refuse("%s, the disk store.disk names: %s", d->name, no);
            return d;
        }
        refuse("store.disk names a disk that is not present");
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
        refuse("no suitable disk (%s)", list);
    if (suitable > 1)
        refuse("several suitable disks (%s) and none named: set store.disk in the "
               "configuration", list);
    return pick;
}

/* ---- what the disk holds ------------------------------------------------ */

static const char *part_kind(const struct gpt_part *p)
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
static int survey(struct blkdisk *bd, uint64_t data_end)
{
    const struct kdisk *k = &bd->disk;
    struct kdisk_report rep;
    struct gpt *g = kmalloc(sizeof *g);
    if (!g)
        refuse("no memory to read the disk's partition table");
    kdisk_report_clear(&rep);
    int holds = 0;
    if (gpt_read(k, g, &rep) == KDISK_OK) {
        holds = 1;
        kprintf("tern: install: it holds a GPT%s with %u partition(s)\n",
                g->from_backup ? " (backup copy)" : "", g->count);
        for (unsigned i = 0; i < g->count; i++) {
            const struct gpt_part *p = &g->parts[i];
            kprintf("tern: install:   #%u \"%s\" %s, %llu MiB at LBA %llu\n",
                    (unsigned)p->index, p->name, part_kind(p),
                    (unsigned long long)((p->last - p->first + 1) * k->logical_block / MIB),
                    (unsigned long long)p->first);
        }
    }
    kfree(g);
    if (kdisk_read(k, 0, 1, k->io, "LBA 0", &rep))
        refuse("%s", rep.error);
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
    uint64_t last = k->capacity - MIB / k->logical_block;
    uint32_t per = CHUNK / k->logical_block;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t from = pass ? last : 0, to = pass ? k->capacity : data_end / k->logical_block;
        for (uint64_t lba = from; lba < to; lba += per) {
            uint32_t n = to - lba < per ? (uint32_t)(to - lba) : per;
            if (kdisk_read(k, lba, n, k->io, "the disk", &rep))
                refuse("%s", rep.error);
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

/* ---- the operator's answer ----------------------------------------------- */

static void wait_us(uint64_t us)
{
    uint64_t until = clock_mono_ns() + us * 1000;
    while (clock_mono_ns() < until)
        cpu_relax();
}

static _Noreturn void aborted(void)
{
    kprintf("\ntern: install: install aborted; nothing was written\n");
    halt();
}

static void countdown(const char *disk, unsigned seconds)
{
    conin_drain();
    for (unsigned s = seconds; s > 0; s--) {
        kprintf("tern: install: installing to %s in %u s; press any key to abort\n", disk, s);
        for (unsigned i = 0; i < 1000000 / POLL_US; i++) {
            if (conin_getc() >= 0)
                aborted();
            wait_us(POLL_US);
        }
    }
}

static void ask_wipe(const char *disk)
{
    char answer[ANSWER_MAX];
    size_t len = 0;
    conin_drain();
    kprintf("tern: install: %s is not empty (above). Type WIPE and press Enter to erase it "
            "and install; anything else aborts:\n", disk);
    for (;;) {
        int c = conin_getc();
        if (c < 0) {
            wait_us(POLL_US);
            continue;
        }
        if (c == '\n')
            break;
        if (c == '\b' || c == 0x7F) {
            if (len) {
                len--;
                console_write("\b \b", 3);
            }
            continue;
        }
        if (c < 0x20 || c > 0x7E || len + 1 >= sizeof answer)
            aborted(); /* not part of WIPE: no need to wait for Enter */
        answer[len++] = (char)c;
        char echo = (char)c;
        console_write(&echo, 1);
    }
    answer[len] = '\0';
    console_write("\n", 1);
    if (strcmp(answer, "WIPE"))
        aborted();
    kprintf("tern: install: WIPE confirmed\n");
}

/* ---- writing and checking -------------------------------------------------- */

static void write_part(struct blkdisk *bd, const struct payload *pl, const struct payload_part *pp)
{
    const struct kdisk *k = &bd->disk;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (pp->kind == PAYLOAD_MBR_CODE) {
        /* Only the code: the protective MBR's records after it stay. */
        if (kdisk_read(k, 0, 1, k->io, "the MBR", &rep))
            failed("reading the MBR", rep.error);
        payload_read(pl, pp, 0, k->io, (size_t)pp->size);
        if (kdisk_write(k, 0, 1, k->io, "the MBR", &rep))
            failed("writing the MBR boot code", rep.error);
        return;
    }
    for (uint64_t off = 0; off < pp->size; off += CHUNK) {
        size_t n = pp->size - off < CHUNK ? (size_t)(pp->size - off) : CHUNK;
        payload_read(pl, pp, off, k->io, n);
        if (kdisk_write(k, (pp->disk_offset + off) / PAYLOAD_SECTOR,
                        (uint32_t)(n / PAYLOAD_SECTOR), k->io, payload_kind_name(pp->kind), &rep))
            failed("writing", rep.error);
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
    for (uint64_t off = 0; off < pp->size; off += CHUNK) {
        size_t n = pp->size - off < CHUNK ? (size_t)(pp->size - off) : CHUNK;
        size_t blocks = (n + PAYLOAD_SECTOR - 1) / PAYLOAD_SECTOR;
        if (kdisk_read(k, (pp->disk_offset + off) / PAYLOAD_SECTOR, (uint32_t)blocks, k->io,
                       payload_kind_name(pp->kind), &rep))
            failed("reading back", rep.error);
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
        failed("checking the new GPT", "no memory");
    kdisk_report_clear(&rep);
    if (gpt_read(&bd->disk, g, &rep))
        failed("reading the new GPT back", rep.error);
    for (unsigned i = 0; i < pl->part_count; i++) {
        const struct payload_part *pp = &pl->parts[i];
        if (pp->kind == PAYLOAD_MBR_CODE)
            continue;
        const char *want = pp->kind == PAYLOAD_ESP ? "EFI system" : "BIOS boot";
        int ok = 0;
        for (unsigned j = 0; j < g->count; j++) {
            const struct gpt_part *p = &g->parts[j];
            ok |= !strcmp(part_kind(p), want) && p->first * PAYLOAD_SECTOR == pp->disk_offset &&
                  (p->last - p->first + 1) * PAYLOAD_SECTOR >= pp->size;
        }
        if (!ok)
            failed("checking the new GPT", "a boot partition is not where the payload goes");
    }
    kfree(g);
}

static void write_disk(struct blk_dev *d, struct blkdisk *bd, const struct payload *pl)
{
    struct kdisk_report rep;
    uint8_t random[64], volume_id[16];
    struct klayout *l = kmalloc(sizeof *l);
    if (!l || rng_bytes(random, sizeof random) || rng_bytes(volume_id, sizeof volume_id))
        refuse("no memory or no entropy for the disk's GUIDs");
    uint64_t t0 = clock_mono_ns();
    kprintf("tern: install: writing %s\n", d->name);
    kdisk_report_clear(&rep);
    if (klayout_partition(&bd->disk, pl->bios_bytes, pl->esp_bytes, random, &rep))
        failed("writing the GPT", rep.error);
    check_partitions(bd, pl);
    for (unsigned i = 0; i < pl->part_count; i++)
        write_part(bd, pl, &pl->parts[i]);
    kdisk_report_clear(&rep);
    if (klayout_open(&bd->disk, KLAYOUT_FORMAT, volume_id, l, &rep))
        failed("formatting the data partition", rep.error);
    if (kdisk_flush(&bd->disk, "the disk", &rep))
        failed("flushing", rep.error);
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
            failed("verifying", payload_kind_name(pp->kind));
        bytes += pp->size;
    }
    kdisk_report_clear(&rep);
    if (klayout_open(&bd->disk, 0, volume_id, l, &rep))
        failed("reading the data partition back", rep.error);
    kprintf("tern: install: verified in %llu ms: %llu KiB read back, SHA-256 of every part "
            "matches; data partition #%u: layout v%u generation %llu\n",
            (unsigned long long)((clock_mono_ns() - t0) / 1000000),
            (unsigned long long)(bytes >> 10), (unsigned)l->part.index,
            (unsigned)l->super.sb.version, (unsigned long long)l->super.sb.generation);
    kfree(l);
}

_Noreturn void install_run(const struct boot_info *bi, const tern_config *cfg)
{
    struct payload pl;
    struct blkdisk bd;
    char why[160];
    kprintf("tern: install: Install to this machine's disk\n");
#ifdef TERN_TEST_HOOKS
    char dump[8];
    if (bootinfo_arg(bi, "tern.test.install.dump", dump, sizeof dump) && !strcmp(dump, "dsdt")) {
        acpi_dump_dsdt();
        halt();
    }
#endif
    uint8_t *scratch = kmalloc(CHUNK);
    if (!scratch)
        refuse("no memory");
    load_payload(bi, &pl, scratch);
    kfree(scratch);
    struct blk_dev *d = choose_target(cfg);
    if (blkdisk_open(d, &bd))
        refuse("no memory for the disk's I/O buffer");
    char line[200];
    blk_describe(d, line, sizeof line);
    kprintf("tern: install: target %s\n", line);
    kprintf("tern: install: %s: model \"%s\", %llu MiB, logical block %u, physical block %u\n",
            d->name, d->model[0] ? d->model : "not reported",
            (unsigned long long)(d->topo.capacity * d->topo.logical_block / MIB),
            (unsigned)d->topo.logical_block, (unsigned)d->topo.physical_block);
    uint64_t data_first = MIB + pl.bios_bytes + pl.esp_bytes;
    /* One line each: kprintf's lines are bounded. */
    kprintf("tern: install: will write a GPT with:\n");
    kprintf("tern: install:   #1 BIOS boot partition, %llu MiB at 1 MiB: GRUB's core.img "
            "(and GRUB's code in the MBR)\n", (unsigned long long)(pl.bios_bytes / MIB));
    kprintf("tern: install:   #2 EFI system partition, %llu MiB at %llu MiB: GRUB for BIOS and "
            "UEFI, the kernel, the configuration bundle\n",
            (unsigned long long)(pl.esp_bytes / MIB),
            (unsigned long long)((MIB + pl.bios_bytes) / MIB));
    kprintf("tern: install:   #3 tern data partition, %llu MiB at %llu MiB: formatted empty\n",
            (unsigned long long)((d->topo.capacity * d->topo.logical_block - data_first) / MIB
                                 - 1),
            (unsigned long long)(data_first / MIB));
    unsigned seconds = INSTALL_COUNTDOWN_S;
#ifdef TERN_TEST_HOOKS
    char arg[8]; /* test kernels: tern.test.install.countdown=SECONDS */
    if (bootinfo_arg(bi, "tern.test.install.countdown", arg, sizeof arg) && arg[0] >= '1' &&
        arg[0] <= '9' && !arg[1])
        seconds = (unsigned)(arg[0] - '0');
#endif
    if (survey(&bd, data_first + MIB))
        countdown(d->name, seconds);
    else
        ask_wipe(d->name);
    write_disk(d, &bd, &pl);
    blkdisk_close(&bd);
    kprintf("tern: install: done; remove the install medium and boot from %s; powering off\n",
            d->name);
    acpi_poweroff(why, sizeof why);
    kprintf("tern: install: ACPI power-off failed: %s\n", why);
    halt();
}
