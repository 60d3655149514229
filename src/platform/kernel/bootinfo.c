/*
 * bootinfo.c - reads multiboot2 boot information (tags: command line, memory
 * map, ACPI RSDP, framebuffer) or the PVH hvm_start_info (version 1: command line, memory
 * map, RSDP address) into struct boot_info. The first boot module (the
 * baked configuration, SPEC A6) is copied too, before the frame allocator
 * can hand its memory out. Runs on the early page tables,
 * which map the first 4 GiB at DMAP_BASE; both loaders place their data
 * there. Lengths from the loader are bounded before use.
 */
#include "bootinfo.h"

#include "arch/x86_64/memlayout.h"
#include "panic.h"

#include <stddef.h>
#include <string.h>

enum {
    MB2_TAG_END = 0, MB2_TAG_CMDLINE = 1, MB2_TAG_MODULE = 3, MB2_TAG_MMAP = 6,
    MB2_TAG_FRAMEBUFFER = 8, MB2_FB_COMMON = 24, MB2_FB_RGB = 30,
    MB2_TAG_ACPI_OLD = 14, MB2_TAG_ACPI_NEW = 15,
    MB2_TAG_LOADER_NAME = 2,
    /* EFI tags only a UEFI boot has: system tables, EFI memory map, boot
     * services not exited, image handles (multiboot2 spec 3.6.12-3.6.18). */
    MB2_TAG_EFI32 = 11, MB2_TAG_EFI64 = 12, MB2_TAG_EFI_MMAP = 17, MB2_TAG_EFI_BS = 18,
    MB2_TAG_EFI32_IH = 19, MB2_TAG_EFI64_IH = 20,
    PVH_MAGIC = 0x336ec578,
};

struct mb2_tag {
    uint32_t type, size;
};

struct mb2_mmap_entry {
    uint64_t base, len;
    uint32_t type, reserved;
};

struct pvh_start_info {
    uint32_t magic, version, flags, nr_modules;
    uint64_t modlist_paddr, cmdline_paddr, rsdp_paddr, memmap_paddr;
    uint32_t memmap_entries, reserved;
};

struct pvh_modlist_entry {
    uint64_t paddr, size, cmdline_paddr, reserved;
};

struct pvh_memmap_entry {
    uint64_t addr, size;
    uint32_t type, reserved;
};

static void add_region(struct boot_info *bi, uint64_t base, uint64_t len, uint32_t type)
{
    if (bi->nregions == BOOT_MAX_REGIONS || len == 0)
        return;
    bi->regions[bi->nregions++] = (struct mem_region){ base, len, type };
    if (type == MEM_USABLE)
        bi->usable_bytes += len;
}

static void copy_cmdline(struct boot_info *bi, uint64_t phys, size_t max)
{
    if (!phys || phys >= EARLY_MAP_BYTES)
        return;
    const char *s = phys_to_virt(phys);
    size_t n = strnlen(s, max < BOOT_CMDLINE_MAX - 1 ? max : BOOT_CMDLINE_MAX - 1);
    memcpy(bi->cmdline, s, n);
    bi->cmdline[n] = '\0';
}

/* Keep the first module: bounds-checked against the early map, copied
 * whole or refused (a configuration cut short must not be parsed). */
static void copy_name(char *out, uint64_t name_phys, size_t name_max)
{
    if (name_phys && name_phys < EARLY_MAP_BYTES) {
        const char *s = phys_to_virt(name_phys);
        size_t lim = name_max < BOOT_MODNAME_MAX - 1 ? name_max : BOOT_MODNAME_MAX - 1;
        if (name_phys + lim > EARLY_MAP_BYTES)
            lim = EARLY_MAP_BYTES - name_phys;
        size_t n = strnlen(s, lim);
        memcpy(out, s, n);
        out[n] = '\0';
    }
}

/* The second module is only located (the installer's payload, tens of
 * MiB): kept in place, its range bounds-checked by its user. */
static void add_module(struct boot_info *bi, uint64_t start, uint64_t size, uint64_t name_phys,
                       size_t name_max)
{
    if (bi->nmodules++ > 0) {
        if (bi->nmodules == 2 && size && start + size > start) {
            bi->module2_phys = start;
            bi->module2_len = size;
            copy_name(bi->module2_name, name_phys, name_max);
        }
        return;
    }
    bi->config_size = size;
    if (start >= EARLY_MAP_BYTES || size > EARLY_MAP_BYTES - start) {
        bi->config_state = BOOT_CONFIG_BAD;
        return;
    }
    if (size > BOOT_CONFIG_MAX) {
        bi->config_state = BOOT_CONFIG_TOO_LARGE;
        return;
    }
    memcpy(bi->config, phys_to_virt(start), size);
    /* The loader's copy may hold a private key, in memory the frame
     * allocator will hand out: wiped once copied. */
    memset(phys_to_virt(start), 0, size);
    bi->config_len = (uint32_t)size;
    bi->config_state = BOOT_CONFIG_OK;
    copy_name(bi->config_name, name_phys, name_max);
}

/* The framebuffer tag: address, pitch, width, height, bpp, type, two
 * reserved bytes (GRUB's layout), then for RGB the position and size of
 * each channel. Only copied here; dev/fb.c decides whether it is usable. */
static void copy_framebuffer(struct fb_info *fb, const uint8_t *body, uint32_t blen)
{
    memcpy(&fb->addr, body, 8);
    memcpy(&fb->pitch, body + 8, 4);
    memcpy(&fb->width, body + 12, 4);
    memcpy(&fb->height, body + 16, 4);
    fb->bpp = body[20];
    fb->type = body[21];
    if (fb->type == FB_TYPE_RGB && blen >= MB2_FB_RGB) {
        fb->red_pos = body[24];
        fb->red_size = body[25];
        fb->green_pos = body[26];
        fb->green_size = body[27];
        fb->blue_pos = body[28];
        fb->blue_size = body[29];
    }
    fb->present = 1;
}

static void parse_multiboot2(struct boot_info *bi, uint64_t info_phys)
{
    const uint8_t *base = phys_to_virt(info_phys);
    uint32_t total;
    memcpy(&total, base, 4);
    if (total < 16 || info_phys + total > EARLY_MAP_BYTES)
        panic("multiboot2 boot information is malformed");
    for (uint32_t off = 8; off + 8 <= total;) {
        struct mb2_tag tag;
        memcpy(&tag, base + off, sizeof tag);
        if (tag.type == MB2_TAG_END)
            break;
        if (tag.size < 8 || tag.size > total - off)
            panic("multiboot2 boot information is malformed");
        const uint8_t *body = base + off + 8;
        uint32_t blen = tag.size - 8;
        if (tag.type == MB2_TAG_CMDLINE) {
            copy_cmdline(bi, info_phys + off + 8, blen);
        } else if (tag.type == MB2_TAG_LOADER_NAME) {
            uint32_t n = blen < sizeof bi->loader_name - 1 ? blen : sizeof bi->loader_name - 1;
            memcpy(bi->loader_name, body, n);
            bi->loader_name[n] = 0; /* the tag's own NUL, or a cut */
        } else if (tag.type == MB2_TAG_EFI32 || tag.type == MB2_TAG_EFI64 ||
                   tag.type == MB2_TAG_EFI_MMAP || tag.type == MB2_TAG_EFI_BS ||
                   tag.type == MB2_TAG_EFI32_IH || tag.type == MB2_TAG_EFI64_IH) {
            bi->efi_tags++;
        } else if (tag.type == MB2_TAG_MODULE && blen >= 8) {
            uint32_t range[2]; /* mod_start, mod_end (exclusive) */
            memcpy(range, body, sizeof range);
            if (range[1] < range[0]) {
                if (bi->nmodules++ == 0)
                    bi->config_state = BOOT_CONFIG_BAD;
            } else {
                add_module(bi, range[0], range[1] - range[0], info_phys + off + 16, blen - 8);
            }
        } else if (tag.type == MB2_TAG_MMAP && blen >= 8) {
            uint32_t esize;
            memcpy(&esize, body, 4);
            if (esize < sizeof(struct mb2_mmap_entry))
                panic("multiboot2 memory map is malformed");
            for (uint32_t e = 8; e + esize <= blen; e += esize) {
                struct mb2_mmap_entry m;
                memcpy(&m, body + e, sizeof m);
                add_region(bi, m.base, m.len, m.type);
            }
        } else if (tag.type == MB2_TAG_FRAMEBUFFER && blen >= MB2_FB_COMMON) {
            copy_framebuffer(&bi->fb, body, blen);
        } else if (tag.type == MB2_TAG_ACPI_OLD || tag.type == MB2_TAG_ACPI_NEW) {
            /* The tag holds a copy of the RSDP (v2 preferred over v1). */
            if (!bi->rsdp_copy_len || tag.type == MB2_TAG_ACPI_NEW) {
                uint32_t n = blen < sizeof bi->rsdp_copy ? blen : sizeof bi->rsdp_copy;
                memcpy(bi->rsdp_copy, body, n);
                bi->rsdp_copy_len = n;
            }
        }
        off += (tag.size + 7) & ~7u;
    }
}

static void parse_pvh(struct boot_info *bi, uint64_t info_phys)
{
    struct pvh_start_info si;
    memcpy(&si, phys_to_virt(info_phys), sizeof si);
    if (si.magic != PVH_MAGIC)
        panic("PVH start info has a bad magic number");
    copy_cmdline(bi, si.cmdline_paddr, BOOT_CMDLINE_MAX - 1);
    bi->rsdp_phys = si.rsdp_paddr;
    if (si.version < 1 || !si.memmap_paddr || si.memmap_entries == 0)
        panic("PVH loader gave no memory map (start info version 1 needed)");
    if (si.memmap_entries > BOOT_MAX_REGIONS ||
        si.memmap_paddr + si.memmap_entries * sizeof(struct pvh_memmap_entry) > EARLY_MAP_BYTES)
        panic("PVH memory map is malformed");
    const struct pvh_memmap_entry *m = phys_to_virt(si.memmap_paddr);
    for (uint32_t i = 0; i < si.memmap_entries; i++)
        add_region(bi, m[i].addr, m[i].size, m[i].type);
    if (si.nr_modules && si.modlist_paddr &&
        si.modlist_paddr + sizeof(struct pvh_modlist_entry) <= EARLY_MAP_BYTES) {
        struct pvh_modlist_entry mod;
        memcpy(&mod, phys_to_virt(si.modlist_paddr), sizeof mod);
        add_module(bi, mod.paddr, mod.size, mod.cmdline_paddr, BOOT_MODNAME_MAX - 1);
        bi->nmodules = si.nr_modules;
    }
}

void bootinfo_parse(struct boot_info *bi, int kind, uint64_t info_phys)
{
    memset(bi, 0, sizeof *bi);
    bi->kind = kind;
    if (info_phys >= EARLY_MAP_BYTES)
        panic("boot information lies outside the first 4 GiB");
    if (kind == BOOT_KIND_MULTIBOOT2) {
        bi->loader = "multiboot2";
        parse_multiboot2(bi, info_phys);
    } else if (kind == BOOT_KIND_PVH) {
        bi->loader = "pvh";
        parse_pvh(bi, info_phys);
    } else {
        panic("unknown boot loader");
    }
    if (bi->usable_bytes == 0)
        panic("the loader reported no usable memory");
}

int bootinfo_arg(const struct boot_info *bi, const char *key, char *out, unsigned outlen)
{
    size_t klen = strlen(key);
    const char *p = bi->cmdline;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *word = p;
        while (*p && *p != ' ')
            p++;
        if ((size_t)(p - word) > klen && !strncmp(word, key, klen) && word[klen] == '=') {
            size_t vlen = (size_t)(p - word) - klen - 1;
            if (outlen == 0)
                return 1;
            if (vlen >= outlen)
                vlen = outlen - 1;
            memcpy(out, word + klen + 1, vlen);
            out[vlen] = '\0';
            return 1;
        }
    }
    return 0;
}
