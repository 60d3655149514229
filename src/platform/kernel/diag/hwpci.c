/*
 * hwpci.c - PCI names and the MSI-X capability for the report (hwpci.h).
 * Configuration space is device input: the list walk is bounded and
 * checked as dev/pcicap.c's is (PCI Local Bus 3.0, 6.7, 6.8.2).
 */
#include "hwpci.h"

#include <stddef.h>

enum {
    CFG_STATUS = 0x06,
    STATUS_CAP_LIST = 1u << 4,
    CFG_CAP_PTR = 0x34,
    CAP_FIRST_MIN = 0x40,       /* capabilities live after the standard header */
    CAP_MAX_STEPS = 48,         /* (256 - 64) / 4 */
    CAP_MSIX = 0x11,
};

static const struct {
    uint16_t vendor, device;
    const char *name;
} known[] = {
    {0x1af4, 0x1000, "virtio-net (transitional)"},
    {0x1af4, 0x1001, "virtio-blk (transitional)"},
    {0x1af4, 0x1004, "virtio-scsi (transitional)"},
    {0x1af4, 0x1005, "virtio-rng (transitional)"},
    {0x1af4, 0x1041, "virtio-net"},
    {0x1af4, 0x1042, "virtio-blk"},
    {0x1af4, 0x1043, "virtio-console"},
    {0x1af4, 0x1044, "virtio-rng"},
    {0x1af4, 0x1045, "virtio-balloon"},
    {0x1af4, 0x1048, "virtio-scsi"},
    {0x1af4, 0x1050, "virtio-gpu"},
    {0x1af4, 0x1052, "virtio-input"},
    {0x1234, 0x1111, "QEMU standard VGA"},
    {0x1b36, 0x0001, "QEMU PCI-PCI bridge"},
    {0x1b36, 0x000c, "QEMU PCIe root port"},
    {0x1b36, 0x000d, "QEMU xHCI USB controller"},
    {0x8086, 0x100e, "Intel e1000 (82540EM)"},
    {0x8086, 0x10d3, "Intel e1000e (82574L)"},
    {0x8086, 0x1237, "Intel 440FX host bridge"},
    {0x8086, 0x7000, "Intel PIIX3 ISA bridge"},
    {0x8086, 0x7010, "Intel PIIX3 IDE"},
    {0x8086, 0x7113, "Intel PIIX4 ACPI"},
    {0x8086, 0x29c0, "Intel Q35 host bridge"},
    {0x8086, 0x2918, "Intel ICH9 LPC bridge"},
    {0x8086, 0x2922, "Intel ICH9 AHCI"},
    {0x8086, 0x2930, "Intel ICH9 SMBus"},
    {0x10ec, 0x8139, "Realtek RTL8139"},
    {0x15ad, 0x07b0, "VMware vmxnet3"},
    {0x1d0f, 0xec20, "Amazon ENA"},
    {0x1d0f, 0x8061, "Amazon NVMe"},
};

static const struct {
    uint8_t class_code, subclass;
    const char *name;
} classes[] = {
    {0x01, 0x00, "SCSI controller"}, {0x01, 0x01, "IDE controller"},
    {0x01, 0x06, "SATA controller"}, {0x01, 0x08, "NVMe controller"},
    {0x02, 0x00, "Ethernet controller"}, {0x03, 0x00, "VGA controller"},
    {0x06, 0x00, "host bridge"}, {0x06, 0x01, "ISA bridge"},
    {0x06, 0x04, "PCI-PCI bridge"}, {0x0c, 0x03, "USB controller"},
    {0x0c, 0x05, "SMBus controller"},
};

const char *hw_pci_name(uint16_t vendor, uint16_t device, uint8_t class_code, uint8_t subclass)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].vendor == vendor && known[i].device == device)
            return known[i].name;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (classes[i].class_code == class_code && classes[i].subclass == subclass)
            return classes[i].name;
    return NULL;
}

unsigned hw_pci_find_cap(const uint8_t cfg[256], uint8_t id, const char **err)
{
    *err = NULL;
    if (!((cfg[CFG_STATUS] | cfg[CFG_STATUS + 1] << 8) & STATUS_CAP_LIST))
        return 0;
    unsigned at = cfg[CFG_CAP_PTR];
    for (unsigned steps = 0; at; steps++) {
        if (steps >= CAP_MAX_STEPS) {
            *err = "capability list loops";
            return 0;
        }
        if (at < CAP_FIRST_MIN || at > 256 - 4 || (at & 3)) {
            *err = "capability pointer outside the capability area";
            return 0;
        }
        if (cfg[at] == id)
            return at;
        at = cfg[at + 1];
    }
    return 0;
}

int hw_pci_msix(const uint8_t cfg[256], unsigned *entries, int *enabled, const char **err)
{
    unsigned at = hw_pci_find_cap(cfg, CAP_MSIX, err);
    if (!at)
        return 0;
    /* The capability is 12 bytes; the walk kept at <= 252, so the message
     * control word (at + 2) is inside the snapshot; the rest is not read. */
    unsigned ctrl = cfg[at + 2] | (unsigned)cfg[at + 3] << 8;
    *entries = (ctrl & 0x7FF) + 1;
    *enabled = (ctrl >> 15) & 1;
    return 1;
}
