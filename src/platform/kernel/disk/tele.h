/*
 * tele.h - the telemetry journal inside the layout's telemetry region
 * (kind 5; SPEC D7, issue 14): its on-disk format, the pure parsers the
 * kernel, the unit tests, the fuzz target, the scrubber and tern-disk
 * share, and a writer over struct kdisk. docs/DISK.md, "Inside the
 * telemetry region", has the format byte by byte.
 *
 * The region is a ring of 64 KiB segments behind an A/B pair of head
 * blocks. The head names the newest segment (head_seq) and the oldest one
 * still live (tail_seq); segment sequence s lives in slot (s - 1) mod N.
 * A record is trusted only when its CRC (which covers the segment's
 * sequence, the region's LBA and the record's offset) and its number
 * (the segment's first number + its index) check, so stale records of an
 * earlier pass of the ring, torn or lost writes, zeroed or discarded
 * blocks and copies from elsewhere never pass as records.
 *
 * Boot reads both head copies, the head segment and at most
 * TELE_PROBE_MAX slots after it (a head update lost in a power cut): a
 * bounded number of reads whatever the region's size. The writer keeps one
 * slot ahead of the head expired and discarded (TELE_SPARE), so a thin
 * disk gets it back and the ring never overwrites a live segment.
 *
 * Portable and I/O-free apart from struct kdisk and the discard callback.
 */
#ifndef TERN_DISK_TELE_H
#define TERN_DISK_TELE_H

#include "kdisk.h"

#include <stddef.h>
#include <stdint.h>

#define TELE_HEAD_MAGIC "tern-tlh" /* 8 bytes, no NUL */
#define TELE_SEG_MAGIC "tern-tsg"

enum {
    TELE_VERSION = 1,            /* the format version of heads and segments */
    TELE_MAGIC_LEN = 8,
    TELE_HEAD_BYTES = 64,        /* a head copy; the rest of its block is zero */
    TELE_HEAD_SLOT = 32 * 1024,  /* copy B's offset when the physical block is smaller */
    TELE_SEG_BYTES = 64 * 1024,  /* one segment (== KDISK_IO_BYTES: read in one request) */
    TELE_SEG_HDR = 64,           /* the segment header; records follow */
    TELE_REC_HDR = 24,           /* a record's header; its payload follows */
    TELE_REC_ALIGN = 8,          /* records start on 8 bytes */
    TELE_PAYLOAD_MAX = 1000,     /* bytes of payload a record may carry */
    TELE_MIN_SEGS = 4,           /* a region holding fewer is refused */
    TELE_SPARE = 1,              /* slots kept expired (discarded) ahead of the head */
    TELE_PROBE_MAX = 1,          /* slots read past the head a lost head update may hide */
    TELE_MAX_RECS = (TELE_SEG_BYTES - TELE_SEG_HDR) / TELE_REC_HDR, /* per segment, at most */
};
_Static_assert((int)TELE_SEG_BYTES == (int)KDISK_IO_BYTES, "a segment is read with the layout's I/O buffer");

/* Record kinds (byte 6 of a record) and the payload version this release
 * writes (byte 7). docs/DISK.md lists each payload. A reader shows kinds
 * and versions it does not know without decoding their payload. */
enum tele_kind {
    TELE_K_BOOT = 1,        /* a boot reached the point of serving */
    TELE_K_POWER_CUT = 2,   /* the previous boot ended without a stop record */
    TELE_K_STOP = 3,        /* an orderly stop (none exists yet; see DISK.md) */
    TELE_K_STATS = 4,       /* periodic statistics */
    TELE_K_STORE = 5,       /* the store's state changed (failing / working) */
    TELE_K_BACKUP = 6,      /* a backup was completed or failed */
    TELE_K_CERT = 7,        /* the server certificate is close to expiry */
    TELE_KINDS = 7,
};

/* Verdicts of the head and segment parsers. */
enum tele_verdict {
    TELE_VALID = 0,
    TELE_BLANK = 1,     /* no magic: never written, zeroed or discarded */
    TELE_CORRUPT = 2,   /* magic, but a check fails (why says which) */
    TELE_NEWER = 3,     /* magic and a good CRC, but a newer format version */
};

/* The region on the disk now. */
struct tele_geom {
    uint8_t volume[16];        /* the superblock's volume_id: seeds every CRC */
    uint64_t lba;              /* the region's first logical block */
    uint64_t blocks;           /* its length in logical blocks */
    uint32_t logical_block, physical_block;
    /* derived by tele_geom_init */
    uint32_t head_b;           /* copy B's offset in the region, bytes */
    uint64_t seg0;             /* the first slot's offset, bytes (2 * head_b) */
    uint64_t nseg;             /* slots in the ring */
};

/* Fill g's derived fields; 0, or -1 with the reason in why (a region too
 * small for TELE_MIN_SEGS slots, or not made of whole physical blocks). */
int tele_geom_init(struct tele_geom *g, const uint8_t volume[16], uint64_t lba, uint64_t blocks,
                   uint32_t logical, uint32_t physical, char *why, size_t whyn);
/* The slot of segment sequence seq (>= 1), and its first LBA. */
uint64_t tele_slot(const struct tele_geom *g, uint64_t seq);
uint64_t tele_slot_lba(const struct tele_geom *g, uint64_t slot);

/* One head copy. */
struct tele_head {
    uint64_t generation;       /* +1 at every head write; the higher valid copy wins */
    uint64_t head_seq;         /* newest segment; 0: the journal is empty */
    uint64_t tail_seq;         /* oldest live segment (head_seq + 1 when empty) */
    uint64_t head_first;       /* the first record number of the head segment (the
                                  numbering goes on from it when that segment is lost) */
};

/* Parse a head copy from the first TELE_HEAD_BYTES of buf against g. */
int tele_head_decode(const uint8_t *buf, size_t n, const struct tele_geom *g, struct tele_head *out,
                     char *why, size_t whyn);
/* Encode h into buf (TELE_HEAD_BYTES; the caller zeroes the rest of the block). */
void tele_head_encode(const struct tele_head *h, const struct tele_geom *g, uint8_t *buf);

/* A segment's header. */
struct tele_seg {
    uint64_t seq;
    uint64_t first_record;     /* the number of its first record */
    int64_t created_ms;        /* wall time when it was started, ms since 1970; 0 unknown */
    uint64_t boot;             /* the boot count of the boot that started it */
};

/* Parse the header of a segment read from slot tele_slot(g, expect_seq).
 * TELE_CORRUPT when it carries another sequence (an earlier pass of the
 * ring) or another region's LBA. */
int tele_seg_decode(const uint8_t *seg, size_t n, const struct tele_geom *g, uint64_t expect_seq,
                    struct tele_seg *out, char *why, size_t whyn);
void tele_seg_encode(const struct tele_seg *s, const struct tele_geom *g, uint8_t *seg);

/* A record as read. payload points into the segment buffer. */
struct tele_rec {
    uint32_t offset;           /* in the segment */
    uint32_t bytes;            /* header + payload */
    uint8_t kind, version;
    uint64_t number;
    int64_t time_ms;           /* wall time, ms since 1970; 0 unknown */
    const uint8_t *payload;
    uint32_t payload_len;
};

/* Walk a segment's records: it->offset starts at TELE_SEG_HDR and it->index
 * at 0. 1 with the next record in out, 0 at the end: the first place
 * where no valid record starts (zeros, a torn or stale record, the
 * segment's end). Nothing after that place is trusted. */
struct tele_iter {
    uint32_t offset;
    uint32_t index;
};
void tele_iter_start(struct tele_iter *it);
int tele_rec_next(const uint8_t *seg, size_t n, const struct tele_geom *g, const struct tele_seg *s,
                  struct tele_iter *it, struct tele_rec *out);
/* Append a record at it (after the last valid one); 0, or -1 when it does
 * not fit in the segment or the payload is too long. */
int tele_rec_append(uint8_t *seg, const struct tele_geom *g, const struct tele_seg *s,
                    struct tele_iter *it, uint8_t kind, uint8_t version, int64_t time_ms,
                    const void *payload, uint32_t len);

/* One JSON object (no newline) describing r: kind name, number, time and
 * the payload's decoded fields; unknown kinds and versions, and payloads
 * shorter than their kind needs, are shown without decoding. The output
 * is always valid JSON and is truncated only at n (returns the length
 * it needed). */
size_t tele_rec_json(const struct tele_rec *r, char *buf, size_t n);
const char *tele_kind_name(uint8_t kind);

/* ---- the journal over a disk: open (boot), append, sync ---- */

/* Optional: discard (or zero) count logical blocks at lba; 0 or a
 * negative device status. NULL: the device offers neither. */
typedef int (*tele_discard_fn)(void *ctx, uint64_t lba, uint32_t count);

struct tele {
    const struct kdisk *d;
    struct tele_geom g;
    tele_discard_fn discard;
    void *discard_ctx;
    uint8_t *seg;              /* TELE_SEG_BYTES: the head segment, as on the disk + appended */
    struct tele_head head;     /* as last written (or read) */
    unsigned head_copy;        /* the copy (0 A, 1 B) head was last written to or read from */
    uint64_t boot;             /* written into the segments this boot starts */
    int have_seg;              /* seg holds segment head.head_seq (or a new one, see below) */
    struct tele_seg cur;       /* the segment in seg */
    struct tele_iter end;      /* after its last record */
    uint32_t synced;           /* bytes of seg known to be on the disk (whole records) */
    int cur_named;             /* the durable head names cur.seq */
    int cur_expired;           /* the slots cur needs are expired and discarded */
    uint64_t next_record;
    unsigned reads;            /* device reads tele_open made (tests check the bound) */
    uint64_t discards, discard_errors, expired;
};

/*
 * Open the journal of region g on d. seg: TELE_SEG_BYTES of caller memory
 * kept by t. KDISK_OK: t holds the head segment's records (read them with
 * tele_iter_start / tele_rec_next on t->seg and t->cur) and rep's notes say
 * what was skipped. KDISK_EREFUSED: a head of a newer format, or both
 * copies damaged; nothing is written and t must not be used. KDISK_EIO.
 * Reads at most 2 + 1 + TELE_PROBE_MAX times. The caller sets t->boot
 * before appending.
 */
int tele_open(struct tele *t, const struct kdisk *d, const struct tele_geom *g, uint8_t *seg,
              tele_discard_fn discard, void *discard_ctx, struct kdisk_report *rep);

/* Add a record in memory (the disk sees it at tele_sync). When the head
 * segment is full, first syncs it and starts the next one, expiring and
 * discarding the oldest (I/O). KDISK_OK, KDISK_EINVAL (payload too long),
 * KDISK_EIO. */
int tele_append(struct tele *t, uint8_t kind, uint8_t version, int64_t time_ms,
                const void *payload, uint32_t len, struct kdisk_report *rep);

/* Make every appended record durable: write the physical blocks of the
 * head segment that changed, flush, and name a new segment in the head
 * (written, flushed) if the head does not yet. KDISK_OK or KDISK_EIO (the
 * records stay in memory and the next sync writes them again). */
int tele_sync(struct tele *t, struct kdisk_report *rep);

/* Scan (tern-disk, tests, the power-cut harness): call fn for every valid
 * record of every live segment of h (tail..head, then the probe past the
 * head as tele_open does), oldest first; a live segment that fails its
 * checks is reported through bad (may be NULL) and skipped. Reads each
 * segment into seg (TELE_SEG_BYTES). KDISK_OK or KDISK_EIO. */
typedef void (*tele_rec_fn)(void *ctx, const struct tele_seg *s, const struct tele_rec *r);
typedef void (*tele_bad_fn)(void *ctx, uint64_t seq, const char *why);
int tele_scan(const struct kdisk *d, const struct tele_geom *g, const struct tele_head *h,
              uint8_t *seg, tele_rec_fn fn, tele_bad_fn bad, void *ctx, struct kdisk_report *rep);

#endif
