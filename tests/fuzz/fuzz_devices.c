/*
 * fuzz_devices.c - libFuzzer target for the kernel's parsers of firmware
 * and device data (SPEC H3): ACPI tables (acpi/tables.c), the virtio and
 * MSI-X capabilities in PCI configuration space (dev/pcicap.c) and the
 * loader's framebuffer description (dev/fb.c), compiled on the host.
 * The first byte picks the parser; the rest is what firmware or a device
 * would control. Properties:
 *   - ACPI: the parser reads physical memory only through the reader, which
 *     refuses (and counts) anything outside the input; a table it returns
 *     fits the buffer, has the signature asked for and a zero checksum, and
 *     MCFG entries it keeps are internally consistent;
 *   - PCI: regions and MSI-X structures it accepts lie inside their BARs;
 *   - framebuffer: an accepted one has 32-bit pixels and a size that fits;
 *   - virtio-blk configuration: an accepted topology is consistent (block
 *     sizes powers of two, physical a multiple of logical within 1 MiB,
 *     a transfer limit of whole blocks that the segments can carry);
 *   - virtio-scsi and SCSI data (configuration, response header and sense,
 *     INQUIRY, REPORT LUNS, READ CAPACITY(16), VPD 00/B0/B2, MODE SENSE):
 *     nothing is read outside the input (ASan), values kept are in range;
 *   - MADT (acpi/madt.c): nothing read outside the input; a parsed table's
 *     kept processors are enabled or online capable, counts add up.
 * Selectors 0-2 are the original parsers (their seeds start with 0-2);
 * 3 and 4 are the disk parsers, 5 the MADT.
 */
#include "platform/kernel/acpi/tables.c"
#include "platform/kernel/dev/fb.c"
#include "platform/kernel/dev/pcicap.c"
#include "platform/kernel/dev/blk_parse.c"
#include "platform/kernel/dev/scsi_parse.c"
#include "platform/kernel/acpi/madt.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

enum { MEM_BASE = 0x1000 };

struct mem {
    const uint8_t *b;
    size_t len;
};

static int mem_read(void *ctx, uint64_t pa, void *dst, size_t len)
{
    const struct mem *m = ctx;
    if (pa < MEM_BASE || pa - MEM_BASE > m->len || len > m->len - (pa - MEM_BASE))
        return -1;
    memcpy(dst, m->b + (pa - MEM_BASE), len);
    return 0;
}

/* Input: the RSDP image first (36 bytes), and the whole input is physical
 * memory from MEM_BASE, so table pointers can land anywhere in it. */
static void fuzz_acpi(const uint8_t *d, size_t n)
{
    struct mem m = {d, n};
    struct acpi_rsdp r;
    const char *err, *root = NULL;
    (void)acpi_rsdp_scan(d, n);
    if (acpi_rsdp_parse(d, n < ACPI_RSDP_V2_LEN ? n : ACPI_RSDP_V2_LEN, &r, &err) < 0)
        return;
    static uint8_t buf[ACPI_MCFG_MAX_LEN];
    long len = acpi_find_table(&r, "MCFG", mem_read, &m, buf, sizeof buf, &root, &err);
    if (len < 0)
        return;
    FUZZ_ASSERT(len >= ACPI_SDT_HEADER_LEN && (size_t)len <= sizeof buf);
    FUZZ_ASSERT(memcmp(buf, "MCFG", 4) == 0 && acpi_sum(buf, (size_t)len) == 0);
    struct acpi_mcfg_entry e[ACPI_MCFG_MAX_ENTRIES];
    unsigned skipped;
    int count = acpi_mcfg_parse(buf, (size_t)len, e, ACPI_MCFG_MAX_ENTRIES, &skipped, &err);
    for (int i = 0; i < count; i++) {
        FUZZ_ASSERT(e[i].bus_start <= e[i].bus_end && e[i].base % (1u << 20) == 0);
        FUZZ_ASSERT(e[i].base + ((uint64_t)e[i].bus_end + 1) * (1u << 20) <= (1ull << 52));
    }
}

static void region_ok(const struct virtio_region *r, const uint64_t *bar)
{
    if (r->present)
        FUZZ_ASSERT(r->bar < 6 && (uint64_t)r->offset + r->length <= bar[r->bar]);
}

/* Input: six bytes of BAR sizes (as powers of two, 0 = none), then
 * configuration space (zero-padded to 256 bytes), then an MSI-X offset. */
static void fuzz_pci(const uint8_t *d, size_t n)
{
    uint64_t bar[6] = {0};
    uint8_t cfg[PCI_CFG_BYTES] = {0};
    for (unsigned i = 0; i < 6 && i < n; i++)
        bar[i] = d[i] % 48 ? 1ull << (d[i] % 48) : 0;
    if (n > 6)
        memcpy(cfg, d + 6, n - 6 < PCI_CFG_BYTES ? n - 6 : PCI_CFG_BYTES);
    struct virtio_layout lay;
    const char *err;
    unsigned cap = 0;
    if (pcicap_virtio_layout(cfg, bar, &lay, &err) == 0) {
        region_ok(&lay.common, bar);
        region_ok(&lay.notify, bar);
        region_ok(&lay.isr, bar);
        region_ok(&lay.device, bar);
        FUZZ_ASSERT(lay.common.length >= VIRTIO_COMMON_CFG_MIN);
        cap = lay.msix_cap;
    }
    if (n > 6 + PCI_CFG_BYTES)
        cap = d[6 + PCI_CFG_BYTES];
    struct msix_layout mx;
    if (pcicap_msix(cfg, cap, bar, &mx, &err) == 0) {
        FUZZ_ASSERT(mx.entries >= 1 && mx.entries <= 2048);
        FUZZ_ASSERT(mx.table_offset + (uint64_t)mx.entries * 16 <= bar[mx.table_bar]);
        FUZZ_ASSERT(mx.pba_offset + ((uint64_t)mx.entries + 63) / 64 * 8 <= bar[mx.pba_bar]);
    }
}

static void fuzz_fb(const uint8_t *d, size_t n)
{
    uint8_t b[34] = {0};
    memcpy(b, d, n < sizeof b ? n : sizeof b);
    struct fb_info f = {.present = b[0] & 1};
    memcpy(&f.addr, b + 1, 8);
    memcpy(&f.pitch, b + 9, 4);
    memcpy(&f.width, b + 13, 4);
    memcpy(&f.height, b + 17, 4);
    f.bpp = b[21];
    f.type = b[22];
    f.red_pos = b[23], f.red_size = b[24], f.green_pos = b[25];
    f.green_size = b[26], f.blue_pos = b[27], f.blue_size = b[28];
    const char *why;
    if (fb_check(&f, &why) == 0) {
        FUZZ_ASSERT(f.bpp == 32 && f.pitch / 4 >= f.width && f.width >= 8 && f.height >= 8);
        FUZZ_ASSERT((uint64_t)f.pitch * f.height <= FB_MAX_BYTES);
        FUZZ_ASSERT(f.addr + (uint64_t)f.pitch * f.height <= (1ull << 52));
    }
}

/* Input: 8 bytes of negotiated features, then the configuration snapshot. */
static void fuzz_vblk(const uint8_t *d, size_t n)
{
    uint64_t features = 0;
    if (n >= 8)
        memcpy(&features, d, 8);
    size_t len = n >= 8 ? n - 8 : 0;
    uint8_t *cfg = malloc(len ? len : 1);   /* exact size: ASan sees overreads */
    memcpy(cfg, d + (n >= 8 ? 8 : n), len);
    struct vblk_params p;
    const char *err;
    if (vblk_parse_config(cfg, len, features, 65, &p, &err) == 0) {
        const struct blk_topology *t = &p.topo;
        FUZZ_ASSERT(t->logical_block >= 512 && t->logical_block <= 65536 &&
                    !(t->logical_block & (t->logical_block - 1)));
        FUZZ_ASSERT(t->physical_block % t->logical_block == 0 && t->physical_block <= (1u << 20));
        FUZZ_ASSERT(t->capacity > 0 && t->max_transfer && t->max_transfer % t->logical_block == 0);
        FUZZ_ASSERT(p.max_segs >= 2 && p.max_segs <= 65 && p.seg_size >= 512 && p.seg_size <= 4096);
        FUZZ_ASSERT((uint64_t)(p.max_segs - 1) * p.seg_size >= t->max_transfer);
        FUZZ_ASSERT(!t->optimal_io || t->optimal_io % t->physical_block == 0);
        FUZZ_ASSERT(t->discard == (t->max_discard > 0));
    } else {
        FUZZ_ASSERT(err != NULL);
    }
    FUZZ_ASSERT(vblk_status(n ? d[0] : 0) <= 0);
    char text[21];
    blk_text_clean(text, sizeof text, cfg, len);
    FUZZ_ASSERT(strlen(text) < sizeof text && !strchr(text, '"'));
    free(cfg);
}

/* Input: a second selector byte, then the data a device returned. */
static void fuzz_scsi(const uint8_t *d, size_t n)
{
    if (n < 1)
        return;
    uint8_t which = d[0];
    size_t len = n - 1;
    uint8_t *b = malloc(len ? len : 1);     /* exact size: ASan sees overreads */
    memcpy(b, d + 1, len);
    const char *err;
    switch (which % 8) {
    case 0: {
        struct vscsi_config c;
        if (vscsi_parse_config(b, len, &c, &err) == 0)
            FUZZ_ASSERT(c.num_queues > 0);
        break;
    }
    case 1: {
        uint8_t resp[VSCSI_RESP_BYTES] = {0};
        memcpy(resp, b, len < sizeof resp ? len : sizeof resp);
        struct scsi_result r;
        vscsi_resp_parse(resp, &r);
        FUZZ_ASSERT(scsi_classify(&r) <= SCSI_ERROR);
        char text[64];
        scsi_result_text(&r, text, sizeof text);
        struct scsi_sense s;
        scsi_sense_parse(b, len, &s);
        FUZZ_ASSERT(s.key <= 0xF);
        break;
    }
    case 2: {
        struct scsi_inquiry q;
        if (scsi_inquiry_parse(b, len, &q) == 0)
            FUZZ_ASSERT(strlen(q.vendor) <= 8 && strlen(q.product) <= 16 && q.type < 32);
        break;
    }
    case 3: {
        uint16_t luns[8];
        unsigned skipped;
        unsigned k = scsi_report_luns_parse(b, len, luns, 8, &skipped);
        FUZZ_ASSERT(k <= 8);
        for (unsigned i = 0; i < k; i++)
            FUZZ_ASSERT(luns[i] < 16384);
        break;
    }
    case 4: {
        struct scsi_capacity c;
        if (scsi_readcap16_parse(b, len, &c, &err) == 0)
            FUZZ_ASSERT(c.blocks > 0 && c.physical % c.block_len == 0 &&
                        c.physical <= (1u << 20));
        break;
    }
    case 5: {
        struct scsi_block_limits bl;
        struct scsi_provisioning pv;
        (void)scsi_vpd_lists(b, len, 0xB0);
        (void)scsi_vpd_b0_parse(b, len, &bl);
        (void)scsi_vpd_b2_parse(b, len, &pv);
        break;
    }
    default: {
        struct scsi_caching c;
        (void)scsi_mode_caching_parse(b, len, which & 1, &c);
        break;
    }
    }
    free(b);
}

/* The MADT as the firmware gave it, copied into a buffer of its exact
 * size so ASan sees any read past it. */
static void fuzz_madt(const uint8_t *data, size_t size)
{
    uint8_t *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    static struct madt_info m;
    const char *err = NULL;
    if (madt_parse(b, size, &m, &err) == 0) {
        FUZZ_ASSERT(m.ncpus <= MADT_MAX_CPUS);
        FUZZ_ASSERT(m.ncpus + m.cpus_dropped == m.cpus_enabled + m.cpus_online_capable);
        for (unsigned i = 0; i < m.ncpus; i++)
            FUZZ_ASSERT(m.cpu[i].enabled != m.cpu[i].online_capable);
    } else {
        FUZZ_ASSERT(err != NULL);
    }
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 6) {
    case 0: fuzz_acpi(data + 1, size - 1); break;
    case 1: fuzz_pci(data + 1, size - 1); break;
    case 2: fuzz_fb(data + 1, size - 1); break;
    case 3: fuzz_vblk(data + 1, size - 1); break;
    case 4: fuzz_scsi(data + 1, size - 1); break;
    default: fuzz_madt(data + 1, size - 1); break;
    }
    return 0;
}
