/*
 * pagesum.h - the checksums inside a layout v3 database region, computed
 * without SQLite: the 8-byte page checksum SQLite's cksumvfs shim keeps in
 * each page's reserve bytes, and the checksum chain of SQLite's WAL. Pure
 * functions over bytes, for the scrubber (store/scrub.c) and the host tool
 * (tern-disk); docs/DISK.md, "Page checksums", is the format.
 *
 * Both are the same Fletcher-like sum over pairs of 32-bit words: for each
 * pair (x0, x1), s1 += x0 + s2; s2 += x1 + s1. The page checksum reads the
 * words little-endian from s1 = s2 = 0 over the page's first size - 8 bytes
 * and stores s1, s2 little-endian in its last 8 (what cksumvfs does on a
 * little-endian machine, which is every tern machine). The WAL's reads the
 * words in the byte order its header's magic names and stores big-endian.
 */
#ifndef TERN_KSTORE_PAGESUM_H
#define TERN_KSTORE_PAGESUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    PAGESUM_BYTES = 8,        /* SQLite's reserve bytes per page in layout v3 */
    PAGESUM_PAGE_MIN = 512,
    PAGESUM_PAGE_MAX = 65536,
    PAGESUM_DB_HEADER = 100,  /* SQLite's database header */
    PAGESUM_WAL_HEADER = 32,
    PAGESUM_WAL_FRAME_HEADER = 24,
};

/* The page checksum of data[0, n) (n a multiple of 8) into out. */
void pagesum_compute(const uint8_t *data, size_t n, uint8_t out[PAGESUM_BYTES]);

/* 1 when page (page_size bytes, a power of two in 512..65536) ends with
 * the checksum of the rest. */
bool pagesum_page_ok(const uint8_t *page, size_t page_size);

/* What a database file's first page says about it. */
struct pagesum_db {
    uint32_t page_size;       /* bytes */
    uint32_t reserve;         /* reserve bytes per page (8 in layout v3) */
    uint32_t pages;           /* the header's database size in pages (0: unknown) */
    bool wal;                 /* read/write versions say WAL (2) */
};

/* Parse SQLite's 100-byte database header: 0 and *out, or -1 with why
 * (not a database, impossible page size or reserve). */
int pagesum_db_parse(const uint8_t *hdr, size_t len, struct pagesum_db *out, char *why,
                     size_t why_size);

/* SQLite's WAL checksum: continue s[2] over data[0, n) (n a multiple of
 * 8), words read big-endian when big_endian. */
void pagesum_wal(bool big_endian, const uint8_t *data, size_t n, uint32_t s[2]);

/* A WAL's 32-byte header. */
struct pagesum_wal_hdr {
    bool big_endian;          /* the magic's checksum byte order */
    uint32_t page_size;
    uint32_t ckpt_seq;
    uint32_t salt[2];
    uint32_t cksum[2];        /* the header's own checksum, the chain's start */
};

/* Parse and verify a WAL header: 0, -1 (no WAL magic: an empty or unused
 * log) or -2 (magic, but a bad version, page size or checksum) with why. */
int pagesum_wal_parse(const uint8_t *hdr, size_t len, struct pagesum_wal_hdr *out, char *why,
                      size_t why_size);

/*
 * One frame (24-byte header then page_size bytes) after the chain value
 * s[2]: 1 when it belongs to the log (salts match and its checksum
 * continues the chain; s then advances and *commit is the database size in
 * pages for a commit frame, else 0), 0 when it does not (a stale frame or
 * the end of the valid log; s is unchanged).
 */
int pagesum_wal_frame(const struct pagesum_wal_hdr *h, const uint8_t *frame, uint32_t s[2],
                      uint32_t *commit);

#endif
