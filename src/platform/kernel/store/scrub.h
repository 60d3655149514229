/*
 * scrub.h - the disk scrubber (SPEC D6): reads the whole tern layout in
 * steps and verifies every checksum on it, so damage is found before the
 * data is needed. Portable over struct kdisk (the kernel gives it the
 * store thread's reads; the unit tests a memory disk); it never writes.
 *
 * One pass checks, in this order:
 *   - both superblock slots (CRC and fields; a blank slot is not damage);
 *   - both GPT copies (header CRC and fields, partition array CRC);
 *   - both header copies of the database, log and backup regions;
 *   - every page of the database and of both backups, up to each file's
 *     size from its region header (layout v3 page checksums); freelist
 *     leaf pages and the pending-byte page hold no checksum by design and
 *     are skipped;
 *   - the WAL: its header checksum and the frame checksum chain. The chain
 *     ends at the first frame that does not continue it (other salts or a
 *     checksum that does not follow). Frames after it that all carry other
 *     salts are the normal end of the log: stale frames of an earlier
 *     generation (salts change at every restart of the log). A later frame
 *     with the current salts makes the break damage: SQLite wrote past the
 *     broken frame, and its recovery would stop there, losing what
 *     follows. A break in the very last frame written is not
 *     distinguishable from a write torn by a power cut, and is not
 *     reported (SQLite's reads still verify that page's checksum). Steps
 *     are spread over time and the store writes between them: when the
 *     log's header carries new salts by the time damage would be
 *     reported, the store restarted the log during the pass, and the WAL
 *     is not judged in this pass.
 *   - the telemetry journal (disk/tele.h): both head copies (a blank copy
 *     is not damage), then every live segment from the tail to the head:
 *     its header, and its records. The record walk stops at the first
 *     record that does not validate; that is damage when the record there
 *     carries the number the walk expects (a record of this segment whose
 *     CRC fails) or the next record does, except for the head segment's
 *     last record (a write a power cut tore; the next append replaces it).
 *     The journal's writer is a thread of its own, so a head copy or
 *     segment that fails is read once more before it is damage (the
 *     records of a segment are judged on one read of all of it).
 *
 * A page that fails is read again once before it is reported (the kernel
 * runs steps on the store thread between its batches, so nothing writes
 * the disk meanwhile; the re-read rules out a transient read error).
 */
#ifndef TERN_KSTORE_SCRUB_H
#define TERN_KSTORE_SCRUB_H

#include "../disk/layout.h"
#include "../disk/tele.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One damaged place. */
struct scrub_finding {
    const char *region;   /* "superblock A", "GPT backup", "database", "WAL", ... */
    uint64_t offset;      /* bytes from the region's (or the file's) start */
    char what[112];       /* what failed */
};

/* The parts of a pass, in order (struct scrub's phase). */
enum scrub_phase {
    SCRUB_PH_SUPER, SCRUB_PH_GPT, SCRUB_PH_HEADERS, SCRUB_PH_FILES, SCRUB_PH_WAL, SCRUB_PH_TELE,
    SCRUB_PH_END
};

typedef void (*scrub_report_fn)(void *ctx, const struct scrub_finding *f);

struct scrub {
    const struct kdisk *disk;
    const struct klayout *layout;
    scrub_report_fn report;
    void *ctx;
    /* where the pass is */
    int phase;                  /* enum scrub_phase */
    int item;                   /* slot, copy or region within the phase */
    uint64_t pos;               /* bytes into the item */
    uint64_t size;              /* the item's bytes to check */
    uint32_t page_size;
    uint32_t *leaves;           /* sorted freelist leaves of the file (malloc) */
    uint32_t leaf_count;
    uint32_t wal_s[2];          /* the WAL chain so far */
    uint32_t wal_salt[2];
    bool wal_big_endian;
    uint64_t wal_break;         /* offset of the frame the chain broke at, 0: none */
    struct tele_geom tele;      /* the telemetry region */
    struct tele_head tele_head; /* its head, as the pass found it */
    uint64_t tele_seq;          /* the next live segment to check, 0: heads first */
    /* results */
    uint64_t pass_bytes;        /* bytes this pass has read */
    uint64_t pass_total;        /* bytes a pass reads (estimate at its start) */
    uint64_t passes;            /* passes completed */
    uint64_t corrupt;           /* findings reported, all passes */
    uint64_t read_errors;       /* reads the disk failed (reported as findings) */
    struct scrub_finding last;  /* the latest finding */
};

/* Start scrubbing l's disk (both stay valid while s is in use); findings go
 * to report(ctx, f) as they are found (may be NULL). */
void scrub_init(struct scrub *s, const struct kdisk *d, const struct klayout *l,
                scrub_report_fn report, void *ctx);

/* Check for about budget bytes of reads (at least one item); true when this
 * step finished a pass (the next step starts another). */
bool scrub_step(struct scrub *s, uint64_t budget);

/* Percent of the current pass done. */
unsigned scrub_progress(const struct scrub *s);

/* Free what the pass holds. */
void scrub_free(struct scrub *s);

#endif
