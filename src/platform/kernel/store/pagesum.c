/*
 * pagesum.c - page and WAL checksums without SQLite (pagesum.h). Written
 * from the formats (SQLite's file format page, cksumvfs's comment), not
 * copied; the unit tests check it against pages SQLite itself wrote
 * through the pinned cksumvfs.
 */
#include "pagesum.h"

#include <stdio.h>
#include <string.h>

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void pagesum_compute(const uint8_t *data, size_t n, uint8_t out[PAGESUM_BYTES])
{
    uint32_t s1 = 0, s2 = 0;

    for (size_t i = 0; i + 8 <= n; i += 8) {
        s1 += le32(data + i) + s2;
        s2 += le32(data + i + 4) + s1;
    }
    put_le32(out, s1);
    put_le32(out + 4, s2);
}

static bool pow2_page(size_t n)
{
    return n >= PAGESUM_PAGE_MIN && n <= PAGESUM_PAGE_MAX && (n & (n - 1)) == 0;
}

bool pagesum_page_ok(const uint8_t *page, size_t page_size)
{
    uint8_t sum[PAGESUM_BYTES];

    if (!pow2_page(page_size))
        return false;
    pagesum_compute(page, page_size - PAGESUM_BYTES, sum);
    return memcmp(sum, page + page_size - PAGESUM_BYTES, PAGESUM_BYTES) == 0;
}

int pagesum_db_parse(const uint8_t *hdr, size_t len, struct pagesum_db *out, char *why,
                     size_t why_size)
{
    static const char magic[16] = "SQLite format 3";

    memset(out, 0, sizeof *out);
    if (len < PAGESUM_DB_HEADER || memcmp(hdr, magic, sizeof magic) != 0) {
        snprintf(why, why_size, "no SQLite database header");
        return -1;
    }
    uint32_t ps = be16(hdr + 16);
    out->page_size = ps == 1 ? 65536u : ps;
    out->reserve = hdr[20];
    out->pages = be32(hdr + 28);
    out->wal = hdr[18] == 2 && hdr[19] == 2;
    if (!pow2_page(out->page_size)) {
        snprintf(why, why_size, "impossible page size %u", (unsigned)out->page_size);
        return -1;
    }
    if (out->reserve >= out->page_size - 480) {
        snprintf(why, why_size, "impossible reserve %u", (unsigned)out->reserve);
        return -1;
    }
    /* The size field is valid only when the change counter matches. */
    if (be32(hdr + 24) != be32(hdr + 92))
        out->pages = 0;
    return 0;
}

void pagesum_wal(bool big_endian, const uint8_t *data, size_t n, uint32_t s[2])
{
    uint32_t s1 = s[0], s2 = s[1];

    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint32_t x0 = big_endian ? be32(data + i) : le32(data + i);
        uint32_t x1 = big_endian ? be32(data + i + 4) : le32(data + i + 4);
        s1 += x0 + s2;
        s2 += x1 + s1;
    }
    s[0] = s1;
    s[1] = s2;
}

enum { WAL_MAGIC = 0x377f0682, WAL_VERSION = 3007000 };

int pagesum_wal_parse(const uint8_t *hdr, size_t len, struct pagesum_wal_hdr *out, char *why,
                      size_t why_size)
{
    memset(out, 0, sizeof *out);
    if (len < PAGESUM_WAL_HEADER || (be32(hdr) & ~1u) != WAL_MAGIC) {
        snprintf(why, why_size, "no WAL header");
        return -1;
    }
    out->big_endian = (be32(hdr) & 1u) != 0;
    out->page_size = be32(hdr + 8);
    out->ckpt_seq = be32(hdr + 12);
    out->salt[0] = be32(hdr + 16);
    out->salt[1] = be32(hdr + 20);
    out->cksum[0] = be32(hdr + 24);
    out->cksum[1] = be32(hdr + 28);
    if (be32(hdr + 4) != WAL_VERSION) {
        snprintf(why, why_size, "WAL format version %u", (unsigned)be32(hdr + 4));
        return -2;
    }
    if (!pow2_page(out->page_size)) {
        snprintf(why, why_size, "WAL page size %u", (unsigned)out->page_size);
        return -2;
    }
    uint32_t s[2] = {0, 0};
    pagesum_wal(out->big_endian, hdr, 24, s);
    if (s[0] != out->cksum[0] || s[1] != out->cksum[1]) {
        snprintf(why, why_size, "WAL header checksum mismatch");
        return -2;
    }
    return 0;
}

int pagesum_wal_frame(const struct pagesum_wal_hdr *h, const uint8_t *frame, uint32_t s[2],
                      uint32_t *commit)
{
    uint32_t t[2] = {s[0], s[1]};

    *commit = 0;
    if (be32(frame) == 0 || be32(frame + 8) != h->salt[0] || be32(frame + 12) != h->salt[1])
        return 0;
    pagesum_wal(h->big_endian, frame, 8, t);
    pagesum_wal(h->big_endian, frame + PAGESUM_WAL_FRAME_HEADER, h->page_size, t);
    if (t[0] != be32(frame + 16) || t[1] != be32(frame + 20))
        return 0;
    s[0] = t[0];
    s[1] = t[1];
    *commit = be32(frame + 4);
    return 1;
}
