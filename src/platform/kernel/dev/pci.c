/*
 * pci.c - PCI enumeration through configuration mechanism #1. Every bus is
 * probed (256 x 32 slots, function 0 first; functions 1-7 only for
 * multi-function devices), which needs no trust in bridge programming and
 * costs a few milliseconds. A vendor ID of 0xFFFF means "nothing here".
 */
#include "dev/pci.h"

#include "arch/x86_64/cpu.h"

enum { CONFIG_ADDRESS = 0xCF8, CONFIG_DATA = 0xCFC };

static uint32_t address(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
    return 0x80000000u | (uint32_t)bus << 16 | (uint32_t)(dev & 31) << 11 |
           (uint32_t)(fn & 7) << 8 | (off & 0xFC);
}

uint32_t pci_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
    outl(CONFIG_ADDRESS, address(bus, dev, fn, off));
    return inl(CONFIG_DATA);
}

void pci_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off, uint32_t v)
{
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
