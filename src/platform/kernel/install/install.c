/*
 * install.c - install mode (install.h): the flow, the payload's check and
 * the operator's answer. Order matters for "a refusal writes nothing":
 * the payload is checked whole (structure and every part's SHA-256), the
 * disk chosen and surveyed with reads only (target.c), and the operator's
 * answer taken, before the first write (write.c).
 */
#include "install/install.h"

#include "acpi/poweroff.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "console.h"
#include "dev/blk.h"
#include "dev/conin.h"
#include "install/install_int.h"
#include "mm/kmalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum {
    ANSWER_MAX = 16,
    POLL_US = 1000,
};

_Noreturn void install_halt(void)
{
    kprintf("tern: install: halted\n");
    cpu_halt_forever();
}

_Noreturn void install_refuse(const char *fmt, ...)
{
    char why[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kprintf("tern: install: refused: %s; nothing was written\n", why);
    install_halt();
}

_Noreturn void install_failed(const char *what, const char *why)
{
    kprintf("tern: install: FAILED %s: %s\n", what, why);
    kprintf("tern: install: the disk is incomplete and will not boot; run the install again\n");
    install_halt();
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
        install_refuse("no install payload (the ISO's install entry loads /boot/tern.install "
                       "as the module \"tern.install\")");
    if (!in_usable_ram(bi, bi->module2_phys, bi->module2_len))
        install_refuse("the install payload lies outside usable memory");
    if (payload_parse(phys_to_virt(bi->module2_phys), bi->module2_len, pl, err, sizeof err) ||
        payload_check_parts(pl, scratch, INSTALL_CHUNK, err, sizeof err))
        install_refuse("bad install payload: %s", err);
    const struct payload_part *core = payload_part(pl, PAYLOAD_BIOS_BOOT);
    const struct payload_part *esp = payload_part(pl, PAYLOAD_ESP);
    kprintf("tern: install: payload v%u checked (SHA-256 of every part): MBR boot code, "
            "core.img %llu KiB, ESP %llu MiB\n", (unsigned)PAYLOAD_VERSION,
            (unsigned long long)(core->size >> 10), (unsigned long long)(esp->size / INSTALL_MIB));
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
    install_halt();
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
        install_halt();
    }
#endif
    uint8_t *scratch = kmalloc(INSTALL_CHUNK);
    if (!scratch)
        install_refuse("no memory");
    load_payload(bi, &pl, scratch);
    kfree(scratch);
    struct blk_dev *d = install_choose_target(cfg);
    if (blkdisk_open(d, &bd))
        install_refuse("no memory for the disk's I/O buffer");
    char line[200];
    blk_describe(d, line, sizeof line);
    kprintf("tern: install: target %s\n", line);
    kprintf("tern: install: %s: model \"%s\", %llu MiB, logical block %u, physical block %u\n",
            d->name, d->model[0] ? d->model : "not reported",
            (unsigned long long)(d->topo.capacity * d->topo.logical_block / INSTALL_MIB),
            (unsigned)d->topo.logical_block, (unsigned)d->topo.physical_block);
    uint64_t data_first = INSTALL_MIB + pl.bios_bytes + pl.esp_bytes;
    /* One line each: kprintf's lines are bounded. */
    kprintf("tern: install: will write a GPT with:\n");
    kprintf("tern: install:   #1 BIOS boot partition, %llu MiB at 1 MiB: GRUB's core.img "
            "(and GRUB's code in the MBR)\n", (unsigned long long)(pl.bios_bytes / INSTALL_MIB));
    kprintf("tern: install:   #2 EFI system partition, %llu MiB at %llu MiB: GRUB for BIOS and "
            "UEFI, the kernel, the configuration bundle\n",
            (unsigned long long)(pl.esp_bytes / INSTALL_MIB),
            (unsigned long long)((INSTALL_MIB + pl.bios_bytes) / INSTALL_MIB));
    kprintf("tern: install:   #3 tern data partition, %llu MiB at %llu MiB: formatted empty\n",
            (unsigned long long)((d->topo.capacity * d->topo.logical_block - data_first) /
                                     INSTALL_MIB - 1),
            (unsigned long long)(data_first / INSTALL_MIB));
    unsigned seconds = INSTALL_COUNTDOWN_S;
#ifdef TERN_TEST_HOOKS
    char arg[8]; /* test kernels: tern.test.install.countdown=SECONDS */
    if (bootinfo_arg(bi, "tern.test.install.countdown", arg, sizeof arg) && arg[0] >= '1' &&
        arg[0] <= '9' && !arg[1])
        seconds = (unsigned)(arg[0] - '0');
#endif
    if (install_survey(&bd, data_first + INSTALL_MIB))
        countdown(d->name, seconds);
    else
        ask_wipe(d->name);
    install_write_disk(d, &bd, &pl);
    blkdisk_close(&bd);
    kprintf("tern: install: done; remove the install medium and boot from %s; powering off\n",
            d->name);
    acpi_poweroff(why, sizeof why);
    kprintf("tern: install: ACPI power-off failed: %s\n", why);
    install_halt();
}
