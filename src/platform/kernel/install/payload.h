/*
 * payload.h - the install payload (docs/INSTALL.md): what the installer
 * writes besides the GPT and the data partition - GRUB's BIOS boot code for
 * the MBR, GRUB's core.img for the BIOS boot partition, and the EFI system
 * partition's FAT image - packed by the host tool tern-payload into one file
 * the ISO carries as /boot/tern.install and GRUB hands the kernel as a
 * second boot module.
 *
 * Format version 1, little-endian throughout:
 *   header (80 bytes): magic "TERNINST", version, header size, part count,
 *     the BIOS boot and EFI system partition sizes the parts were built for,
 *     the payload's total length, and a SHA-256 of the header (with this
 *     field zero), the part table and every extent table;
 *   part table: part_count entries of 64 bytes: kind, extent count, the
 *     part's size and where it goes on the disk (bytes), the offset of its
 *     extent table, and the SHA-256 of the whole part as written (zero
 *     bytes included);
 *   extent tables: 24 bytes each: offset in the part, length, offset of the
 *     bytes in the payload. Bytes of a part no extent covers are zero (the
 *     64 MiB ESP is mostly empty: the payload is sparse).
 *
 * The payload is untrusted input (it comes off a medium): payload_parse is
 * a pure function over bytes that checks every offset and length before
 * anything uses them; tests/unit/test_kpayload.c feeds it corrupt copies.
 * It is shared by the kernel and the host tool, so the format has one
 * source.
 */
#ifndef TERN_INSTALL_PAYLOAD_H
#define TERN_INSTALL_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#define PAYLOAD_MAGIC "TERNINST"

enum {
    PAYLOAD_VERSION = 1,
    PAYLOAD_HEADER_BYTES = 80,
    PAYLOAD_PART_BYTES = 64,
    PAYLOAD_EXTENT_BYTES = 24,
    PAYLOAD_MAX_PARTS = 3,          /* one of each kind */
    PAYLOAD_MAX_EXTENTS = 65536,    /* per part */
    PAYLOAD_ERR_MAX = 160,
    PAYLOAD_SECTOR = 512,           /* GRUB's BIOS stage assumes 512-byte sectors */
    PAYLOAD_MBR_CODE_BYTES = 440,   /* boot.img's code: the partition records follow */
};

enum payload_kind {
    PAYLOAD_MBR_CODE = 1,   /* disk offset 0, PAYLOAD_MBR_CODE_BYTES */
    PAYLOAD_BIOS_BOOT = 2,  /* the BIOS boot partition (GRUB core.img) */
    PAYLOAD_ESP = 3,        /* the EFI system partition (FAT32 image) */
};

struct payload_extent {
    uint64_t offset;        /* in the part */
    uint64_t length;
    uint64_t data;          /* in the payload */
};

struct payload_part {
    uint32_t kind;          /* enum payload_kind */
    uint32_t extent_count;
    uint64_t size;          /* bytes written */
    uint64_t disk_offset;   /* bytes from the disk's start */
    uint64_t extents;       /* offset of the extent table in the payload */
    uint8_t sha256[32];
};

struct payload {
    const uint8_t *base;
    uint64_t len;
    uint64_t bios_bytes, esp_bytes;   /* the partition sizes to create */
    unsigned part_count;
    struct payload_part parts[PAYLOAD_MAX_PARTS];
};

/* Check the payload's structure and its header digest: every table and
 * extent inside it, extents in order, non-overlapping and inside their
 * part, one part of each kind, the parts where the partitions go
 * (docs/INSTALL.md). 0, or -1 with the reason in err. Part digests are
 * checked by payload_check_parts (a pass over every byte). */
int payload_parse(const uint8_t *p, uint64_t len, struct payload *out, char *err, size_t n);

/* The part of kind, or NULL. */
const struct payload_part *payload_part(const struct payload *pl, uint32_t kind);

/* len bytes of part from offset (inside the part) into buf. */
void payload_read(const struct payload *pl, const struct payload_part *part, uint64_t offset,
                  uint8_t *buf, size_t len);

/* Recompute every part's SHA-256 from the payload; 0, or -1 naming the
 * first part that does not match. buf: scratch of bufsize bytes. */
int payload_check_parts(const struct payload *pl, uint8_t *buf, size_t bufsize, char *err,
                        size_t n);

/* The kind's name for messages ("MBR boot code", ...). */
const char *payload_kind_name(uint32_t kind);

#endif
