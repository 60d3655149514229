/*
 * acpi.c - the kernel side of ACPI: where the RSDP is, and a reader of
 * physical memory for acpi/tables.c. The reader accepts a range only when
 * the boot memory map covers all of it with RAM, ACPI or firmware-reserved
 * regions (or it lies in the legacy BIOS area), and copies it page by page
 * through one read-only, non-executable scratch mapping, so a table
 * pointer cannot make the kernel touch device registers or write anything.
 */
#include "acpi/acpi.h"

#include "acpi/tables.h"
#include "arch/x86_64/memlayout.h"
#include "mm/paging.h"

#include <stdio.h>
#include <string.h>

enum { BDA_EBDA_SEGMENT = 0x40E, BIOS_AREA_END = 0x100000 };

/* Boot-time state, written once by acpi_init. */
static const struct boot_info *memmap;
static uint64_t scratch_va;
static struct acpi_rsdp rsdp;
static const char *rsdp_from;
static const char *failure = "not looked for";
static const char *last_root = "";
static int ready;

static int readable_type(uint32_t type)
{
    return type == MEM_USABLE || type == MEM_RESERVED || type == MEM_ACPI_RECLAIM ||
           type == MEM_ACPI_NVS;
}

/* 1 if [pa, end) is covered by acceptable regions (in any order, possibly
 * several adjacent ones) or lies in the BIOS area below 1 MiB. */
static int covered(uint64_t pa, uint64_t end)
{
    if (pa >= ACPI_BIOS_AREA && end <= BIOS_AREA_END)
        return 1;
    while (pa < end) {
        uint64_t next = pa;
        for (unsigned i = 0; i < memmap->nregions; i++) {
            const struct mem_region *r = &memmap->regions[i];
            if (readable_type(r->type) && r->base <= pa && pa - r->base < r->len) {
                next = r->base + r->len < r->base ? UINT64_MAX : r->base + r->len;
                break;
            }
        }
        if (next == pa)
            return 0;
        pa = next;
    }
    return 1;
}

static int phys_read(void *ctx, uint64_t pa, void *dst, size_t len)
{
    (void)ctx;
    if (len == 0)
        return 0;
    if (pa + len < pa || !covered(pa, pa + len))
        return -1;
    uint8_t *out = dst;
    while (len) {
        uint64_t page = pa & ~(uint64_t)(PAGE_SIZE - 1);
        size_t off = (size_t)(pa - page), n = PAGE_SIZE - off < len ? PAGE_SIZE - off : len;
        vm_map(scratch_va, page, PAGE_SIZE, VM_READ);
        memcpy(out, (const uint8_t *)scratch_va + off, n);
        vm_unmap_private(scratch_va, PAGE_SIZE); /* only CPU 0 reads ACPI tables */
        out += n;
        pa += n;
        len -= n;
    }
    return 0;
}

/* Scan [pa, pa + len) for an RSDP in page-sized steps (plus overlap, so a
 * candidate across a step boundary is seen whole). */
static int scan(uint64_t pa, size_t len)
{
    uint8_t buf[PAGE_SIZE + ACPI_RSDP_V2_LEN];
    for (size_t done = 0; done < len; done += PAGE_SIZE) {
        size_t n = len - done < sizeof buf ? len - done : sizeof buf;
        if (phys_read(NULL, pa + done, buf, n) < 0)
            continue;
        long off = acpi_rsdp_scan(buf, n);
        if (off >= 0 && off < PAGE_SIZE) {
            const char *err;
            return acpi_rsdp_parse(buf + off, n - (size_t)off, &rsdp, &err);
        }
    }
    return -1;
}

/* The loader's RSDP: a copy in a multiboot2 tag, or an address from PVH. */
static int loader_rsdp(const struct boot_info *bi, const char **err)
{
    if (bi->rsdp_copy_len) {
        rsdp_from = "multiboot2 tag";
        return acpi_rsdp_parse(bi->rsdp_copy, bi->rsdp_copy_len, &rsdp, err);
    }
    if (bi->rsdp_phys) {
        uint8_t buf[ACPI_RSDP_V2_LEN];
        rsdp_from = "PVH start info";
        /* A v1 RSDP may sit in the last 20 bytes of readable memory. */
        size_t n = phys_read(NULL, bi->rsdp_phys, buf, sizeof buf) == 0 ? sizeof buf
                   : phys_read(NULL, bi->rsdp_phys, buf, ACPI_RSDP_V1_LEN) == 0
                       ? ACPI_RSDP_V1_LEN : 0;
        if (!n) {
            *err = "the RSDP address lies outside readable memory";
            return -1;
        }
        return acpi_rsdp_parse(buf, n, &rsdp, err);
    }
    *err = "the loader gave no RSDP";
    return -1;
}

static int find_rsdp(const struct boot_info *bi)
{
    const char *err;
#ifdef TERN_TEST_HOOKS
    /* tern.acpi=scan: ignore the loader's RSDP, to test the search below. */
    char how[8];
    if (bootinfo_arg(bi, "tern.acpi", how, sizeof how) && !strcmp(how, "scan"))
        err = "the loader's RSDP ignored (tern.acpi=scan)";
    else
#endif
    if (loader_rsdp(bi, &err) == 0)
        return 0;
    /* Without a usable one from the loader, search where BIOSes put it:
     * the first KiB of the EBDA, then 0xE0000-0xFFFFF. */
    uint8_t seg[2];
    if (phys_read(NULL, BDA_EBDA_SEGMENT, seg, 2) == 0) {
        uint64_t ebda = (uint64_t)(seg[0] | seg[1] << 8) << 4;
        if (ebda >= 0x80000 && ebda < 0xA0000 && scan(ebda, ACPI_EBDA_SEARCH_LEN) == 0) {
            rsdp_from = "EBDA search";
            return 0;
        }
    }
    if (scan(ACPI_BIOS_AREA, ACPI_BIOS_AREA_LEN) == 0) {
        rsdp_from = "BIOS area search";
        return 0;
    }
    failure = err;
    return -1;
}

int acpi_init(const struct boot_info *bi)
{
    memmap = bi;
    if (!scratch_va)
        scratch_va = vm_window_reserve(PAGE_SIZE);
    ready = find_rsdp(bi) == 0;
    return ready ? 0 : -1;
}

long acpi_table(const char sig[4], uint8_t *buf, size_t cap, const char **err)
{
    if (!ready) {
        *err = failure;
        return -1;
    }
    return acpi_find_table(&rsdp, sig, phys_read, NULL, buf, cap, &last_root, err);
}

long acpi_table_at(uint64_t pa, const char sig[4], uint8_t *buf, size_t cap, const char **err)
{
    if (!ready) {
        *err = failure;
        return -1;
    }
    return acpi_read_table(phys_read, NULL, pa, sig, buf, cap, err);
}

void acpi_describe(char *buf, size_t n)
{
    if (!ready)
        snprintf(buf, n, "no ACPI tables (%s%s%s)", rsdp_from ? rsdp_from : "",
                 rsdp_from ? ": " : "", failure);
    else
        snprintf(buf, n, "RSDP revision %u from %s%s%s", rsdp.revision, rsdp_from,
                 last_root[0] ? ", " : "", last_root);
}
