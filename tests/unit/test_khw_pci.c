/*
 * test_khw_pci.c - PCI facts for the hardware report (diag/hwpci.c): names
 * by id and by class; the MSI-X capability found at the end of a list and
 * its table size; lists that loop, point into the header, past the end or
 * off alignment are refused with a reason, never walked forever.
 */
#include "test.h"

#include "platform/kernel/diag/hwpci.c"

static void cfg_with_list(uint8_t cfg[256])
{
    memset(cfg, 0, 256);
    cfg[0x06] = 0x10;                    /* status: capability list */
    cfg[0x34] = 0x98;
    cfg[0x98] = 0x09; cfg[0x99] = 0x84;  /* vendor (virtio) -> 0x84 */
    cfg[0x84] = 0x09; cfg[0x85] = 0x40;
    cfg[0x40] = 0x11; cfg[0x41] = 0x00;  /* MSI-X, last */
    cfg[0x42] = 0x02; cfg[0x43] = 0x80;  /* table size 3, enabled */
}

TEST(khw_pci_msix_found_with_table_size)
{
    uint8_t cfg[256];
    cfg_with_list(cfg);
    unsigned n = 0;
    int en = 0;
    const char *err;
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 1);
    CHECK_EQ(n, 3);
    CHECK_EQ(en, 1);
    CHECK(err == NULL);
    cfg[0x42] = 0xFF; cfg[0x43] = 0x07;  /* 2048 entries, not enabled */
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 1);
    CHECK_EQ(n, 2048);
    CHECK_EQ(en, 0);
}

TEST(khw_pci_no_list_or_no_msix_is_absent_without_error)
{
    uint8_t cfg[256];
    cfg_with_list(cfg);
    cfg[0x06] = 0;                       /* no capability list bit */
    unsigned n;
    int en;
    const char *err = "x";
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 0);
    CHECK(err == NULL);
    cfg_with_list(cfg);
    cfg[0x40] = 0x05;                    /* MSI, not MSI-X */
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 0);
    CHECK(err == NULL);
}

TEST(khw_pci_bad_lists_refused)
{
    uint8_t cfg[256];
    unsigned n;
    int en;
    const char *err;
    cfg_with_list(cfg);
    cfg[0x41] = 0x98;                    /* MSI-X id changed below: loop */
    cfg[0x40] = 0x05;
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 0);
    CHECK(err && strstr(err, "loops"));
    cfg_with_list(cfg);
    cfg[0x85] = 0x10;                    /* into the standard header */
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 0);
    CHECK(err && strstr(err, "outside"));
    cfg_with_list(cfg);
    cfg[0x85] = 0xFE;                    /* would read past 256 */
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 0);
    CHECK(err != NULL);
    cfg_with_list(cfg);
    cfg[0x85] = 0x41;                    /* unaligned */
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 0);
    CHECK(err != NULL);
    /* the last dword is usable: control word inside the snapshot */
    cfg_with_list(cfg);
    cfg[0x41] = 0xFC;
    cfg[0x40] = 0x05;
    cfg[0xFC] = 0x11; cfg[0xFD] = 0; cfg[0xFE] = 0x00; cfg[0xFF] = 0x00;
    CHECK_EQ(hw_pci_msix(cfg, &n, &en, &err), 1);
    CHECK_EQ(n, 1);
}

TEST(khw_pci_names_by_id_then_class)
{
    CHECK(!strcmp(hw_pci_name(0x1af4, 0x1041, 0x02, 0x00), "virtio-net"));
    CHECK(!strcmp(hw_pci_name(0x1af4, 0x1044, 0x00, 0xff), "virtio-rng"));
    CHECK(!strcmp(hw_pci_name(0x8086, 0x29c0, 0x06, 0x00), "Intel Q35 host bridge"));
    CHECK(!strcmp(hw_pci_name(0xabcd, 0x0001, 0x06, 0x04), "PCI-PCI bridge"));
    CHECK(hw_pci_name(0xabcd, 0x0001, 0xff, 0x00) == NULL);
}
