/*
 * bootinfo.h - what the loader told us, copied out of the loader's own
 * structures (multiboot2 tags or PVH start_info) before any memory is
 * allocated, so those structures may be overwritten afterwards.
 */
#ifndef TERN_BOOTINFO_H
#define TERN_BOOTINFO_H

#include "dev/fb.h"

#include <stdint.h>

enum { MEM_USABLE = 1, MEM_RESERVED = 2, MEM_ACPI_RECLAIM = 3, MEM_ACPI_NVS = 4 };
enum { BOOT_MAX_REGIONS = 128, BOOT_CMDLINE_MAX = 256 };
/* The configuration (a bundle with its certificates, bundle.h) is the
 * first boot module (multiboot2 module tag, or the PVH module list, where
 * QEMU puts -initrd), copied here. */
enum { BOOT_CONFIG_MAX = 256 * 1024, BOOT_MODNAME_MAX = 64 };
enum {
    BOOT_CONFIG_NONE = 0,      /* no module */
    BOOT_CONFIG_OK = 1,        /* config/config_len hold the module */
    BOOT_CONFIG_TOO_LARGE = 2, /* larger than BOOT_CONFIG_MAX */
    BOOT_CONFIG_BAD = 3,       /* outside memory we can read, or inverted */
};

struct mem_region {
    uint64_t base, len;
    uint32_t type; /* E820 type, MEM_* */
};

struct boot_info {
    int kind;                       /* BOOT_KIND_* from memlayout.h */
    const char *loader;             /* "multiboot2" or "pvh" */
    struct mem_region regions[BOOT_MAX_REGIONS];
    unsigned nregions;
    char cmdline[BOOT_CMDLINE_MAX];
    char loader_name[BOOT_MODNAME_MAX]; /* multiboot2 loader name tag ("GRUB 2.12"), or "" */
    unsigned efi_tags;              /* multiboot2 EFI tags seen: booted by UEFI firmware */
    uint64_t rsdp_phys;             /* RSDP address from PVH; 0 if none */
    uint8_t rsdp_copy[36];          /* RSDP copied from a multiboot2 tag */
    unsigned rsdp_copy_len;
    uint64_t usable_bytes;
    unsigned nmodules;              /* modules the loader passed */
    int config_state;               /* BOOT_CONFIG_* */
    uint64_t config_size;           /* the module's size as the loader gave it */
    char config_name[BOOT_MODNAME_MAX]; /* the module's command line, or "" */
    uint32_t config_len;
    char config[BOOT_CONFIG_MAX];
    struct fb_info fb;              /* multiboot2 framebuffer tag, unchecked */
    /* The second module (the ISO's install entry: the install payload,
     * install/payload.h), left where the loader put it: too large to copy.
     * The frame allocator keeps its frames; 0/0 when there is none. */
    uint64_t module2_phys, module2_len;
    char module2_name[BOOT_MODNAME_MAX];
};

/* Parse the loader's information; panics on a loader we cannot use. */
void bootinfo_parse(struct boot_info *bi, int kind, uint64_t info_phys);
/* The value of "key=value" on the command line, copied into out; 1 if found. */
int bootinfo_arg(const struct boot_info *bi, const char *key, char *out, unsigned outlen);

#endif
