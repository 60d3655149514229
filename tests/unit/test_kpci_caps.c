/*
 * test_kpci_caps.c - the virtio capability parser (dev/pcicap.c) on the
 * host: a well-formed list as QEMU builds it, then malformed ones (loops,
 * pointers into the header, capabilities running off the end, regions
 * beyond their BAR, short notify capabilities) which must be rejected or
 * skipped without reading outside the 256-byte snapshot.
 */
#include "test.h"

#include "platform/kernel/dev/pcicap.c"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A virtio vendor capability at `at` pointing to `next`. */
static void vcap(uint8_t *cfg, unsigned at, unsigned next, uint8_t type, uint8_t bar,
                 uint32_t off, uint32_t len, uint8_t cap_len)
{
    cfg[at] = PCI_CAP_VENDOR;
    cfg[at + 1] = (uint8_t)next;
    cfg[at + 2] = cap_len;
    cfg[at + 3] = type;
    cfg[at + 4] = bar;
    put32(cfg + at + 8, off);
    put32(cfg + at + 12, len);
}

static const uint64_t bars[6] = {0, 0x1000, 0, 0, 0x4000, 0};

/* QEMU's layout: MSI-X at 0x98, then vendor caps 0x84 0x70 0x60 0x50 0x40. */
static void good(uint8_t *cfg)
{
    memset(cfg, 0, PCI_CFG_BYTES);
    cfg[0x06] = 0x10;
    cfg[0x34] = 0x98;
    cfg[0x98] = PCI_CAP_MSIX;
    cfg[0x99] = 0x84;
    vcap(cfg, 0x84, 0x70, 5, 0, 0, 0, 20);                 /* PCI cfg access: ignored */
    vcap(cfg, 0x70, 0x60, VIRTIO_CAP_NOTIFY, 4, 0x3000, 0x1000, 20);
    put32(cfg + 0x70 + 16, 4);
    vcap(cfg, 0x60, 0x50, VIRTIO_CAP_DEVICE, 4, 0x2000, 0x1000, 16);
    vcap(cfg, 0x50, 0x40, VIRTIO_CAP_ISR, 4, 0x1000, 0x1000, 16);
    vcap(cfg, 0x40, 0x00, VIRTIO_CAP_COMMON, 4, 0x0000, 0x1000, 16);
}

TEST(kpci_caps_qemu_layout)
{
    uint8_t cfg[PCI_CFG_BYTES];
    good(cfg);
    struct virtio_layout l;
    const char *err = NULL;
    CHECK_EQ(pcicap_virtio_layout(cfg, bars, &l, &err), 0);
    CHECK(l.common.present && l.common.bar == 4 && l.common.offset == 0);
    CHECK(l.isr.present && l.isr.offset == 0x1000);
    CHECK(l.device.present && l.device.offset == 0x2000 && l.device.length == 0x1000);
    CHECK(l.notify.present && l.notify.offset == 0x3000);
    CHECK_EQ(l.notify_mult, 4);
    CHECK_EQ(l.msix_cap, 0x98);
    CHECK_EQ(l.ignored, 0);
}

static int rejected(const uint8_t *cfg)
{
    struct virtio_layout l;
    const char *err = NULL;
    return pcicap_virtio_layout(cfg, bars, &l, &err) == -1 && err != NULL;
}

TEST(kpci_caps_loops_terminate)
{
    uint8_t cfg[PCI_CFG_BYTES];
    good(cfg);
    cfg[0x41] = 0x98;                  /* last cap points back to the first */
    CHECK(rejected(cfg));
    good(cfg);
    cfg[0x71] = 0x70;                  /* a cap pointing to itself */
    CHECK(rejected(cfg));
    good(cfg);
    cfg[0x71] = 0x73;                  /* low bits are masked: still itself */
    CHECK(rejected(cfg));
}

TEST(kpci_caps_bad_pointers)
{
    uint8_t cfg[PCI_CFG_BYTES];
    good(cfg);
    cfg[0x06] = 0;                     /* no capability list at all */
    CHECK(rejected(cfg));
    good(cfg);
    cfg[0x34] = 0x10;                  /* into the standard header */
    CHECK(rejected(cfg));
    good(cfg);
    cfg[0x99] = 0x3C;
    CHECK(rejected(cfg));
    /* A capability at the very end whose length runs past 256 bytes is
     * skipped; the list then lacks its common region. */
    good(cfg);
    cfg[0x51] = 0xF8;                  /* ISR now links to 0xF8, not 0x40 */
    cfg[0xF8] = PCI_CAP_VENDOR;
    cfg[0xF9] = 0;
    cfg[0xFA] = 16;                    /* 0xF8 + 16 > 256 */
    cfg[0xFB] = VIRTIO_CAP_COMMON;
    struct virtio_layout l;
    const char *err;
    CHECK_EQ(pcicap_virtio_layout(cfg, bars, &l, &err), -1);
    CHECK_EQ(l.ignored, 1);
    /* Short vendor capabilities at the very end, whose length fits but
     * whose BAR, offset and length fields would not (found by
     * fuzz_devices): skipped without reading past 256 bytes. */
    static const uint8_t short_caps[][2] = {{0xFC, 4}, {0xF8, 8}, {0xF4, 12}, {0xF0, 16}};
    for (size_t k = 0; k < sizeof short_caps / sizeof short_caps[0]; k++) {
        uint8_t at = short_caps[k][0];
        good(cfg);
        cfg[0x51] = at;                /* ISR now links to it, not to common */
        cfg[at] = PCI_CAP_VENDOR;
        cfg[at + 1] = 0;
        cfg[at + 2] = short_caps[k][1];
        cfg[at + 3] = VIRTIO_CAP_COMMON;
        CHECK_EQ(pcicap_virtio_layout(cfg, bars, &l, &err), -1);
        CHECK_EQ(l.ignored, 1);
    }
    /* A vendor capability in the last dword claiming 16 bytes. */
    good(cfg);
    cfg[0x51] = 0xFC;
    cfg[0xFC] = PCI_CAP_VENDOR;
    cfg[0xFD] = 0;
    cfg[0xFE] = 16;
    CHECK_EQ(pcicap_virtio_layout(cfg, bars, &l, &err), -1);
}

TEST(kpci_caps_regions_outside_bars)
{
    uint8_t cfg[PCI_CFG_BYTES];
    struct virtio_layout l;
    const char *err;
    good(cfg);
    put32(cfg + 0x40 + 8, 0x3800);     /* common: 0x3800 + 0x1000 > 0x4000 */
    CHECK(rejected(cfg));
    good(cfg);
    put32(cfg + 0x40 + 8, 0xFFFFF000); /* offset + length overflows 32 bits */
    CHECK(rejected(cfg));
    good(cfg);
    cfg[0x40 + 4] = 2;                 /* BAR 2 is unassigned (size 0) */
    CHECK(rejected(cfg));
    good(cfg);
    cfg[0x40 + 4] = 9;                 /* reserved BAR number */
    CHECK(rejected(cfg));
    good(cfg);
    cfg[0x70 + 2] = 16;                /* notify cap without its multiplier */
    CHECK(rejected(cfg));
    good(cfg);
    put32(cfg + 0x40 + 12, 8);         /* common region too small */
    CHECK(rejected(cfg));
    /* A bad device region is skipped, not fatal: the device may not need it. */
    good(cfg);
    put32(cfg + 0x60 + 12, 0x100000);
    CHECK_EQ(pcicap_virtio_layout(cfg, bars, &l, &err), 0);
    CHECK(!l.device.present);
    CHECK_EQ(l.ignored, 1);
}

TEST(kpci_caps_first_usable_of_each_type_wins)
{
    uint8_t cfg[PCI_CFG_BYTES];
    good(cfg);
    /* Insert a second common cfg (different offset) after a bad one. */
    cfg[0x41] = 0xA8;
    vcap(cfg, 0xA8, 0xB8, VIRTIO_CAP_COMMON, 1, 0x0, 0x100, 16);
    vcap(cfg, 0xB8, 0x00, VIRTIO_CAP_COMMON, 4, 0x0, 0x38, 16);
    struct virtio_layout l;
    const char *err;
    CHECK_EQ(pcicap_virtio_layout(cfg, bars, &l, &err), 0);
    CHECK(l.common.bar == 4 && l.common.length == 0x1000);  /* the first, at 0x40 */
    /* Make the first one bad: the next usable one (BAR 1) is taken. */
    cfg[0x40 + 4] = 7;
    CHECK_EQ(pcicap_virtio_layout(cfg, bars, &l, &err), 0);
    CHECK(l.common.bar == 1 && l.common.length == 0x100);
    /* Random garbage never crashes (ASan would say). */
    unsigned seed = 1;
    for (int round = 0; round < 20000; round++) {
        for (int i = 0; i < PCI_CFG_BYTES; i++) {
            seed = seed * 1103515245u + 12345u;
            cfg[i] = (uint8_t)(seed >> 16);
        }
        cfg[0x06] |= 0x10;
        (void)pcicap_virtio_layout(cfg, bars, &l, &err);
    }
}

/* QEMU's virtio-net MSI-X: 3 entries, table at BAR 1 + 0, PBA at BAR 1 + 0x800. */
static void msix(uint8_t *cfg, uint16_t entries, uint32_t table, uint32_t pba)
{
    good(cfg);
    cfg[0x98 + 2] = (uint8_t)(entries - 1);
    cfg[0x98 + 3] = (uint8_t)((entries - 1) >> 8);
    put32(cfg + 0x98 + 4, table);
    put32(cfg + 0x98 + 8, pba);
}

static const char *msix_err(const uint8_t *cfg, unsigned cap)
{
    struct msix_layout m;
    const char *err = NULL;
    return pcicap_msix(cfg, cap, bars, &m, &err) == 0 ? NULL : err;
}

TEST(kpci_msix_qemu_layout)
{
    uint8_t cfg[PCI_CFG_BYTES];
    msix(cfg, 3, 0x0 | 1, 0x800 | 1);
    struct msix_layout m;
    const char *err = NULL;
    CHECK_EQ(pcicap_msix(cfg, 0x98, bars, &m, &err), 0);
    CHECK_EQ(m.entries, 3);
    CHECK_EQ(m.table_bar, 1);
    CHECK_EQ(m.table_offset, 0);
    CHECK_EQ(m.pba_bar, 1);
    CHECK_EQ(m.pba_offset, 0x800);
    /* The function-mask and enable bits do not change the table size. */
    cfg[0x98 + 3] |= 0xC0;
    CHECK_EQ(pcicap_msix(cfg, 0x98, bars, &m, &err), 0);
    CHECK_EQ(m.entries, 3);
    /* The largest table: 2048 entries (32 KiB) fill BAR 4 half; PBA after. */
    msix(cfg, 2048, 0x0 | 4, 0x3000 | 4);
    CHECK(msix_err(cfg, 0x98) != NULL);             /* table runs into the PBA */
    msix(cfg, 128, 0x0 | 4, 0x3FF0 | 4);            /* 2 KiB table, 16-byte PBA at the end */
    CHECK(msix_err(cfg, 0x98) == NULL);
}

TEST(kpci_msix_bounds)
{
    uint8_t cfg[PCI_CFG_BYTES];
    msix(cfg, 3, 0x0 | 1, 0x800 | 1);
    CHECK(!strcmp(msix_err(cfg, 0x40), "no MSI-X capability there"));   /* a vendor cap */
    CHECK(!strcmp(msix_err(cfg, 0x99), "no MSI-X capability there"));   /* unaligned */
    CHECK(!strcmp(msix_err(cfg, 0x20), "no MSI-X capability there"));   /* header */
    cfg[0xF8] = PCI_CAP_MSIX;
    CHECK(!strcmp(msix_err(cfg, 0xF8), "no MSI-X capability there"));   /* runs off 256 */
    msix(cfg, 3, 0x0 | 6, 0x800 | 1);
    CHECK(!strcmp(msix_err(cfg, 0x98), "MSI-X table or PBA in a reserved BAR"));
    msix(cfg, 3, 0x0 | 1, 0x800 | 7);
    CHECK(!strcmp(msix_err(cfg, 0x98), "MSI-X table or PBA in a reserved BAR"));
    msix(cfg, 3, 0x0 | 2, 0x800 | 1);                /* BAR 2 unassigned */
    CHECK(!strcmp(msix_err(cfg, 0x98), "MSI-X table outside its BAR"));
    msix(cfg, 3, 0xFE0 | 1, 0x800 | 1);              /* 48 bytes from 0xFE0 > 0x1000 */
    CHECK(!strcmp(msix_err(cfg, 0x98), "MSI-X table outside its BAR"));
    msix(cfg, 3, 0xFFFFFFF8u | 1, 0x800 | 1);        /* offset + length past 32 bits */
    CHECK(!strcmp(msix_err(cfg, 0x98), "MSI-X table outside its BAR"));
    msix(cfg, 3, 0x0 | 1, 0x1000 | 1);               /* PBA just past the end */
    CHECK(!strcmp(msix_err(cfg, 0x98), "MSI-X pending-bit array outside its BAR"));
    msix(cfg, 3, 0x0 | 1, 0x20 | 1);                 /* PBA inside the table */
    CHECK(!strcmp(msix_err(cfg, 0x98), "MSI-X table and pending-bit array overlap"));
    msix(cfg, 3, 0x0 | 1, 0x30 | 1);                 /* right after it: fine */
    CHECK(msix_err(cfg, 0x98) == NULL);
    msix(cfg, 3, 0x0 | 1, 0x0 | 4);                  /* same offset, other BAR: fine */
    CHECK(msix_err(cfg, 0x98) == NULL);
}
