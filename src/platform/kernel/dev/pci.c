/*
 * pci.c - PCI configuration access and enumeration. Access goes through
 * the ECAM window when dev/pci_ecam.c found one, else through
 * configuration mechanism #1. Every bus is probed (256 x 32 slots,
 * function 0 first; functions 1-7 only for multi-function devices), which
 * needs no trust in bridge programming and costs a few milliseconds. A
 * vendor ID of 0xFFFF means "nothing here".
 */
#include "dev/pci.h"

#include "acpi/acpi.h"
#include "arch/x86_64/cpu.h"
#include "console.h"
#include "dev/pci_ecam.h"

enum { CONFIG_ADDRESS = 0xCF8, CONFIG_DATA = 0xCFC, LEGACY_CFG_BYTES = 256 };

/* Written once by pci_init. */
static struct pci_ecam ecam;
static int use_ecam;

static uint32_t address(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
    return 0x80000000u | (uint32_t)bus << 16 | (uint32_t)(dev & 31) << 11 |
           (uint32_t)(fn & 7) << 8 | (off & 0xFC);
}

void pci_init(const struct boot_info *bi)
{
    char why[120], acpi[120];
    use_ecam = pci_ecam_setup(bi, &ecam, why, sizeof why) == 0;
    acpi_describe(acpi, sizeof acpi);
    if (use_ecam)
        kprintf("tern: pci: ECAM at %#llx, buses %u-%u, from the MCFG table (%s)%s%s\n",
                (unsigned long long)ecam.phys, ecam.bus_start, ecam.bus_end, acpi,
                why[0] ? "; " : "", why);
    else
        kprintf("tern: pci: legacy configuration ports (no ECAM: %s; %s)\n", why, acpi);
}

const char *pci_access_name(void) { return use_ecam ? "ECAM" : "legacy configuration ports"; }

uint32_t pci_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
    if (use_ecam) {
        volatile uint32_t *p = pci_ecam_at(&ecam, bus, dev, fn, off & 0xFFF);
        return p ? *p : 0xFFFFFFFFu;
    }
    if (off >= LEGACY_CFG_BYTES)
        return 0xFFFFFFFFu;
    outl(CONFIG_ADDRESS, address(bus, dev, fn, off));
    return inl(CONFIG_DATA);
}

void pci_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off, uint32_t v)
{
    if (use_ecam) {
        volatile uint32_t *p = pci_ecam_at(&ecam, bus, dev, fn, off & 0xFFF);
        if (p)
            *p = v;
        return;
    }
    if (off >= LEGACY_CFG_BYTES)
        return;
    outl(CONFIG_ADDRESS, address(bus, dev, fn, off));
    outl(CONFIG_DATA, v);
}

unsigned pci_enumerate(struct pci_dev *out, unsigned max)
{
    unsigned n = 0;
    for (unsigned bus = 0; bus < 256; bus++) {
        for (uint8_t dev = 0; dev < 32; dev++) {
            for (uint8_t fn = 0; fn < 8; fn++) {
                uint32_t id = pci_read32((uint8_t)bus, dev, fn, 0x00);
                if ((id & 0xFFFF) == 0xFFFF) {
                    if (fn == 0)
                        break;
                    continue;
                }
                uint32_t cls = pci_read32((uint8_t)bus, dev, fn, 0x08);
                uint8_t hdr = (uint8_t)(pci_read32((uint8_t)bus, dev, fn, 0x0C) >> 16);
                if (n < max)
                    out[n] = (struct pci_dev){
                        .bus = (uint8_t)bus, .dev = dev, .fn = fn,
                        .vendor = (uint16_t)id, .device = (uint16_t)(id >> 16),
                        .class_code = (uint8_t)(cls >> 24), .subclass = (uint8_t)(cls >> 16),
                        .prog_if = (uint8_t)(cls >> 8), .header_type = hdr & 0x7F,
                    };
                n++;
                if (fn == 0 && !(hdr & 0x80))
                    break; /* single-function device */
            }
        }
    }
    return n;
}
