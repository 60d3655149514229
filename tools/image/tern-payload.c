/*
 * tern-payload.c - packs the install payload (format:
 * src/platform/kernel/install/payload.h, docs/INSTALL.md): the boot parts
 * mkboot.sh built - GRUB's MBR code, core.img and the ESP's FAT image -
 * into one file the ISO carries for the kernel's installer.
 *
 *   tern-payload OUTPUT BIOS_MIB ESP_MIB BOOT_IMG CORE_IMG ESP_IMG
 *
 * BOOT_IMG: GRUB's patched boot.img (its first 440 bytes are the MBR code);
 * CORE_IMG: the patched core.img (padded to whole sectors here); ESP_IMG:
 * the ESP as a file of ESP_MIB MiB. All-zero 4 KiB blocks are left out (the
 * installer writes zeros there). The output is parsed and every part's
 * digest checked with the kernel's own code before it is kept.
 */
#define _DEFAULT_SOURCE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/kernel/disk/kdisk.h"
#include "platform/kernel/install/payload.h"
#include "platform/kernel/rng/sha256.h"

enum { BLOCK = 4096, MIB = 1 << 20 };

struct part_in {
    uint32_t kind;
    uint8_t *bytes;
    uint64_t size, disk_offset;
};

static void die(const char *msg, const char *what)
{
    fprintf(stderr, "tern-payload: %s%s%s\n", what ? what : "", what ? ": " : "", msg);
    exit(2);
}

static uint8_t *slurp(const char *path, uint64_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(strerror(errno), path);
    if (fseek(f, 0, SEEK_END) || ftell(f) < 0)
        die("cannot size it", path);
    long n = ftell(f);
    rewind(f);
    uint8_t *b = calloc(1, (size_t)n + PAYLOAD_SECTOR);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
        die("cannot read it", path);
    fclose(f);
    *size = (uint64_t)n;
    return b;
}


static int all_zero(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* The non-zero runs of a part, in BLOCK steps: count, or fill ext. */
static uint32_t extents(const struct part_in *in, uint64_t *ext /* off,len pairs */)
{
    uint32_t count = 0;
    uint64_t run = 0, runlen = 0;
    for (uint64_t off = 0; off < in->size; off += BLOCK) {
        uint64_t len = in->size - off < BLOCK ? in->size - off : BLOCK;
        if (!all_zero(in->bytes + off, len)) {
            if (!runlen)
                run = off;
            runlen += len;
            continue;
        }
        if (runlen) {
            if (ext) {
                ext[2 * count] = run;
                ext[2 * count + 1] = runlen;
            }
            count++;
            runlen = 0;
        }
    }
    if (runlen) {
        if (ext) {
            ext[2 * count] = run;
            ext[2 * count + 1] = runlen;
        }
        count++;
    }
    return count;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: tern-payload OUTPUT BIOS_MIB ESP_MIB BOOT_IMG CORE_IMG ESP_IMG\n");
        return 2;
    }
    uint64_t bios = strtoull(argv[2], NULL, 10) * MIB, esp = strtoull(argv[3], NULL, 10) * MIB;
    struct part_in in[PAYLOAD_MAX_PARTS];
    uint64_t boot_size, core_size, esp_size;
    in[0] = (struct part_in){PAYLOAD_MBR_CODE, slurp(argv[4], &boot_size),
                             PAYLOAD_MBR_CODE_BYTES, 0};
    if (boot_size < PAYLOAD_MBR_CODE_BYTES)
        die("shorter than the MBR's code area", argv[4]);
    uint8_t *core = slurp(argv[5], &core_size);
    in[1] = (struct part_in){PAYLOAD_BIOS_BOOT, core,
                             (core_size + PAYLOAD_SECTOR - 1) / PAYLOAD_SECTOR * PAYLOAD_SECTOR,
                             MIB};
    in[2] = (struct part_in){PAYLOAD_ESP, slurp(argv[6], &esp_size), 0, MIB + bios};
    in[2].size = esp_size;
    if (esp_size != esp)
        die("not ESP_MIB long", argv[6]);

    /* Layout: header, part table, extent tables, then the bytes. */
    uint64_t *ext[PAYLOAD_MAX_PARTS];
    uint32_t count[PAYLOAD_MAX_PARTS];
    uint64_t table = PAYLOAD_HEADER_BYTES + PAYLOAD_MAX_PARTS * PAYLOAD_PART_BYTES;
    uint64_t data = table;
    for (int i = 0; i < PAYLOAD_MAX_PARTS; i++) {
        count[i] = extents(&in[i], NULL);
        ext[i] = calloc(2 * (size_t)count[i] + 2, sizeof(uint64_t));
        if (!ext[i])
            die("out of memory", NULL);
        extents(&in[i], ext[i]);
        data += (uint64_t)count[i] * PAYLOAD_EXTENT_BYTES;
    }
    uint64_t total = data;
    for (int i = 0; i < PAYLOAD_MAX_PARTS; i++)
        for (uint32_t e = 0; e < count[i]; e++)
            total += ext[i][2 * e + 1];
    uint8_t *out = calloc(1, (size_t)total);
    if (!out)
        die("out of memory", NULL);
    memcpy(out, PAYLOAD_MAGIC, 8);
    kdisk_put32(out + 8, PAYLOAD_VERSION);
    kdisk_put32(out + 12, PAYLOAD_HEADER_BYTES);
    kdisk_put32(out + 16, PAYLOAD_MAX_PARTS);
    kdisk_put64(out + 24, bios);
    kdisk_put64(out + 32, esp);
    kdisk_put64(out + 40, total);
    uint64_t tpos = table, dpos = data;
    struct sha256 hc;
    for (int i = 0; i < PAYLOAD_MAX_PARTS; i++) {
        uint8_t *pe = out + PAYLOAD_HEADER_BYTES + i * PAYLOAD_PART_BYTES;
        kdisk_put32(pe, in[i].kind);
        kdisk_put32(pe + 4, count[i]);
        kdisk_put64(pe + 8, in[i].size);
        kdisk_put64(pe + 16, in[i].disk_offset);
        kdisk_put64(pe + 24, tpos);
        sha256(in[i].bytes, (size_t)in[i].size, pe + 32);
        for (uint32_t e = 0; e < count[i]; e++) {
            uint64_t off = ext[i][2 * e], len = ext[i][2 * e + 1];
            kdisk_put64(out + tpos, off);
            kdisk_put64(out + tpos + 8, len);
            kdisk_put64(out + tpos + 16, dpos);
            memcpy(out + dpos, in[i].bytes + off, (size_t)len);
            tpos += PAYLOAD_EXTENT_BYTES;
            dpos += len;
        }
    }
    /* The header's digest (field still zero): header, part table and the
     * extent tables, which follow each other in part order here. */
    sha256_init(&hc);
    sha256_update(&hc, out, (size_t)data);
    sha256_final(&hc, out + 48);

    /* Read it back the way the kernel will. */
    struct payload pl;
    char err[PAYLOAD_ERR_MAX];
    static uint8_t scratch[1 << 16];
    if (payload_parse(out, total, &pl, err, sizeof err) ||
        payload_check_parts(&pl, scratch, sizeof scratch, err, sizeof err))
        die(err, "the payload does not parse back");
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(out, 1, (size_t)total, f) != total || fclose(f))
        die(strerror(errno), argv[1]);
    return 0;
}
