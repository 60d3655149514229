/*
 * kdisk.h - the disk as the layout code (gpt.c, super.c, layout.c) sees it:
 * its geometry, three synchronous calls and one I/O buffer. The kernel fills
 * it from a blk_dev (blkdisk.c); host unit tests, fuzz targets and the
 * image tool fill it from memory or a file. Nothing here does I/O itself,
 * so the layout code compiles unchanged into the kernel and onto the host.
 *
 * Also the report every layout call fills: one refusal or error line for
 * the console, and notes (a backup used, a slot skipped) the caller must
 * show too. Lines are single, printable and without a trailing newline.
 */
#ifndef TERN_DISK_KDISK_H
#define TERN_DISK_KDISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    /* Size of kdisk.io: the most the layout code reads or writes at once.
     * Bounds the physical block size the layout accepts. */
    KDISK_IO_BYTES = 64 * 1024,
    KDISK_MSG_MAX = 200,
    KDISK_NOTES_MAX = 4,
};

/* Return values of the layout calls. */
enum kdisk_rc {
    KDISK_OK = 0,
    KDISK_EIO = -1,      /* a read, write or flush failed (report says which) */
    KDISK_EREFUSED = -2, /* the disk's contents are refused (report says why);
                            nothing was written */
    KDISK_EBLANK = -3,   /* the tern partition is blank and formatting was
                            not allowed */
    KDISK_EINVAL = -4,   /* the caller's request cannot be met (a geometry or
                            partition list that does not fit) */
};

struct kdisk {
    /* Each returns 0, or a negative device status (blk.h's BLK_E*) that the
     * report prints through status_text. count is in logical blocks and is
     * never 0; buf is io or lies inside it. write and flush may be NULL for
     * a read-only disk. */
    int (*read)(void *ctx, uint64_t lba, uint32_t count, void *buf);
    int (*write)(void *ctx, uint64_t lba, uint32_t count, const void *buf);
    int (*flush)(void *ctx);
    const char *(*status_text)(int status); /* may be NULL */
    void *ctx;
    uint32_t logical_block;  /* bytes per LBA: a power of two, 512..4096 */
    uint32_t physical_block; /* bytes written as a unit: a power of two,
                                >= logical_block, <= KDISK_IO_BYTES */
    uint32_t optimal_io;     /* bytes; 0 when unknown */
    uint64_t capacity;       /* logical blocks */
    uint8_t *io;             /* KDISK_IO_BYTES, aligned to 512, owned by
                                the caller, used by one call at a time */
};

struct kdisk_report {
    char error[KDISK_MSG_MAX];                 /* "" unless a call failed */
    char notes[KDISK_NOTES_MAX][KDISK_MSG_MAX];
    unsigned note_count;                       /* further notes are dropped */
};

/* Check the geometry fields of d; 0, or KDISK_EINVAL with the reason in
 * rep->error. Every layout entry point calls it first. */
int kdisk_check(const struct kdisk *d, struct kdisk_report *rep);

void kdisk_report_clear(struct kdisk_report *rep);
/* Set rep->error (printf-style) and return rc. */
int kdisk_fail(struct kdisk_report *rep, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add a note (printf-style). */
void kdisk_note(struct kdisk_report *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* I/O through d that records a failure in rep->error, naming what was being
 * read or written (what) and the LBA. Return 0 or KDISK_EIO. count > 0 and
 * count * logical_block <= KDISK_IO_BYTES for the whole-buffer calls. */
int kdisk_read(const struct kdisk *d, uint64_t lba, uint32_t count, void *buf,
               const char *what, struct kdisk_report *rep);
int kdisk_write(const struct kdisk *d, uint64_t lba, uint32_t count, const void *buf,
                const char *what, struct kdisk_report *rep);
int kdisk_flush(const struct kdisk *d, const char *what, struct kdisk_report *rep);

/* Little-endian fields in on-disk structures. */
static inline uint16_t kdisk_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t kdisk_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t kdisk_le64(const uint8_t *p)
{
    return (uint64_t)kdisk_le32(p) | (uint64_t)kdisk_le32(p + 4) << 32;
}
static inline void kdisk_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void kdisk_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void kdisk_put64(uint8_t *p, uint64_t v)
{
    kdisk_put32(p, (uint32_t)v);
    kdisk_put32(p + 4, (uint32_t)(v >> 32));
}

/* 1 when len bytes at p are all zero. */
int kdisk_is_zero(const uint8_t *p, size_t len);

#endif
