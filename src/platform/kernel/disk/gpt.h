/*
 * gpt.h - the GUID Partition Table (UEFI specification 2.10, chapter 5.3):
 * a checked reader and a writer, portable and I/O-free (all I/O goes
 * through a struct kdisk). Everything read from the disk is untrusted
 * (ADR-012): the pure parsers below are what fuzz_disk drives.
 *
 * The reader accepts a disk only with a protective MBR (an 0xEE record),
 * then takes the primary header (LBA 1) and its entry array when their
 * CRC32s and every field check out, else the backup (at the primary's
 * AlternateLBA, or the last LBA when the primary is unusable), and says so
 * in a note. docs/DISK.md lists every check.
 */
#ifndef TERN_DISK_GPT_H
#define TERN_DISK_GPT_H

#include "kdisk.h"

#include <stddef.h>
#include <stdint.h>

/* The type of tern's data partition; the one place it is written down
 * (tools read it from here). */
#define TERN_DATA_TYPE_GUID "66c69e19-91ca-4aa8-8c74-9a210d759a38"
/* The EFI System Partition (UEFI specification, 5.3.3). */
#define GPT_ESP_TYPE_GUID "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
/* GRUB's BIOS boot partition: holds core.img on GPT disks booted by BIOS. */
#define GPT_BIOS_BOOT_TYPE_GUID "21686148-6449-6e6f-744e-656564454649"

enum {
    GPT_GUID_TEXT = 37,       /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" + NUL */
    GPT_HEADER_MIN = 92,      /* bytes of a revision 1.0 header */
    GPT_MAX_PARTS = 128,      /* partitions in use the reader keeps; more is refused */
    GPT_MAX_ENTRIES = 4096,   /* NumberOfPartitionEntries accepted */
    GPT_MAX_ENTRY_SIZE = 4096,
    GPT_MAX_ARRAY = 1 << 20,  /* bytes of entry array accepted */
    GPT_NAME_UNITS = 36,      /* UTF-16 code units of an entry's name */
    GPT_WRITE_ENTRIES = 128,  /* the writer's array: 128 entries of 128 bytes */
    GPT_ENTRY_SIZE = 128,
};

/* A GUID in its on-disk byte order (the first three fields little-endian). */
struct gpt_guid {
    uint8_t b[16];
};

/* Parse "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (either case); 0 or -1. */
int gpt_guid_parse(const char *text, struct gpt_guid *out);
/* Lower-case text form. */
void gpt_guid_text(const struct gpt_guid *g, char out[GPT_GUID_TEXT]);
int gpt_guid_eq(const struct gpt_guid *a, const struct gpt_guid *b);
int gpt_guid_is_zero(const struct gpt_guid *g);
/* A random (version 4) GUID from 16 random bytes. */
void gpt_guid_random(struct gpt_guid *out, const uint8_t random[16]);

/* The fields of a header the reader uses, checked. */
struct gpt_header {
    uint32_t header_size;
    uint64_t my_lba, alternate_lba;
    uint64_t first_usable, last_usable;  /* inclusive */
    struct gpt_guid disk_guid;
    uint64_t array_lba;
    uint32_t entries, entry_size;
    uint32_t array_crc;
};

struct gpt_part {
    struct gpt_guid type, guid;
    uint64_t first, last;                /* inclusive LBAs */
    uint64_t attributes;
    uint32_t index;                      /* 1-based entry number */
    char name[GPT_NAME_UNITS + 1];       /* ASCII; other characters as '?' */
};

struct gpt {
    struct gpt_header hdr;               /* of the copy in use */
    int from_backup;                     /* 1 when the primary was unusable */
    unsigned count;                      /* partitions in use, by entry order */
    struct gpt_part parts[GPT_MAX_PARTS];
};

/* The protective MBR in lba0 (one logical block, at least 512 bytes): the
 * 0x55AA signature and a record of type 0xEE starting at LBA 1. 0, or -1
 * with the reason in why. */
int gpt_mbr_check(const uint8_t *lba0, char *why, size_t why_size);

/* A GPT header read from lba (one logical block of block_size bytes) on a
 * disk of capacity blocks: signature, revision 1.0, size, CRC32, MyLBA,
 * and every LBA and size field against the disk and each other. 0, or -1
 * with the reason in why. */
int gpt_header_parse(const uint8_t *blk, uint32_t block_size, uint64_t capacity, uint64_t lba,
                     struct gpt_header *out, char *why, size_t why_size);

/* Entry number index (1-based) of h's array: 0 unused, 1 in use (out
 * filled), -1 malformed (why says how). */
int gpt_entry_parse(const uint8_t *entry, uint32_t index, const struct gpt_header *h,
                    struct gpt_part *out, char *why, size_t why_size);

/* 0 when no two of the n partitions share a block, else -1 naming them. */
int gpt_check_overlap(const struct gpt_part *p, unsigned n, char *why, size_t why_size);

/* Read and check the GPT of d. KDISK_OK, KDISK_EIO, or KDISK_EREFUSED (no
 * protective MBR, or neither copy usable: rep->error says why for each). */
int gpt_read(const struct kdisk *d, struct gpt *out, struct kdisk_report *rep);

/* The usable range a GPT written by gpt_write has on d: after the primary
 * array, before the backup array, each end on a physical block boundary.
 * 0, or KDISK_EINVAL when the disk is too small for two GPT copies. */
int gpt_usable(const struct kdisk *d, uint64_t *first_usable, uint64_t *last_usable,
               struct kdisk_report *rep);

struct gpt_new_part {
    struct gpt_guid type, guid;
    uint64_t first, last;                /* inclusive; whole physical blocks */
    const char *name;                    /* ASCII, at most 36 characters */
};

/* Write a protective MBR, the primary header and array and the backup
 * array and header (GPT_WRITE_ENTRIES entries) describing parts, then
 * flush. Only whole physical blocks are written: the areas before the
 * first usable and after the last usable LBA. The partitions must lie in
 * gpt_usable's range, start and end on physical blocks, not overlap, and
 * have non-zero type and unique GUIDs. KDISK_OK, KDISK_EINVAL, KDISK_EIO. */
int gpt_write(const struct kdisk *d, const struct gpt_guid *disk_guid,
              const struct gpt_new_part *parts, unsigned n, struct kdisk_report *rep);

/*
 * Growth (a disk that became larger than its GPT says). gpt_grow_room
 * says whether the backup copy can move to the disk's new end: 1 with the
 * LastUsableLBA it would give (*last_usable), 0 when the backup header is
 * already on the last LBA, -1 with why when it cannot (the primary copy is
 * not the one in use, its array does not fit the one I/O buffer, or the
 * disk grew by too little for the new backup copy to clear the old one).
 * Reads only the old backup header.
 */
int gpt_grow_room(const struct kdisk *d, const struct gpt *g, uint64_t *last_usable, char *why,
                  size_t why_size, struct kdisk_report *rep);

/*
 * Rewrite g (read from d by gpt_read, primary in use) for d's capacity:
 * the backup entry array and header at the new end, then, after a flush,
 * the primary header (AlternateLBA, LastUsableLBA, array CRC), its array
 * with entry number index (1-based; 0 for none) ending at new_last, and
 * the protective MBR's size when it covered the whole old disk; then a
 * flush. Every other byte of the entries, the header and the MBR is kept.
 * A cut at any point leaves the old table (primary intact, old backup
 * intact) or the new one (the primary unusable or new, the new backup
 * valid). KDISK_OK, KDISK_EINVAL (gpt_grow_room said no; new_last not in
 * the new usable range), KDISK_EIO.
 */
int gpt_grow(const struct kdisk *d, const struct gpt *g, uint32_t index, uint64_t new_last,
             struct kdisk_report *rep);

/*
 * The primary copy rewritten from the backup in use (g->from_backup, the
 * backup header on the disk's last LBA): what a growth cut while it wrote
 * the primary leaves. The array goes to LBA 2 (it must end before the
 * first usable LBA), the header to LBA 1, the protective MBR's size
 * follows the disk when the 0xEE record is its only one; then a flush.
 * KDISK_OK, KDISK_EINVAL (not that case, or no room), KDISK_EIO.
 */
int gpt_repair_primary(const struct kdisk *d, const struct gpt *g, struct kdisk_report *rep);

#endif
