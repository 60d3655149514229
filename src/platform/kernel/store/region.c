/*
 * region.c - encoding, parsing and choosing the two copies of a region
 * header (region.h). The checksum is the first 8 bytes of SHA-256 over the
 * header's first 56 bytes: rng/sha256.c is already in the kernel, and the
 * header is written a few times per second at most, so its cost does not
 * matter.
 */
#include "region.h"

#include "../rng/sha256.h"

#include <string.h>

static const uint8_t MAGIC[8] = {'t', 'e', 'r', 'n', '-', 'r', 'g', 'n'};

enum {
    OFF_VERSION = 8,
    OFF_ROLE = 12,
    OFF_OWNER = 16,
    OFF_FLAGS = 20,
    OFF_SEQ = 24,
    OFF_SIZE = 32,
    OFF_LBA = 40,
    OFF_BLOCKS = 48,
    OFF_CHECK = 56,
};

static void put32(uint8_t *p, uint32_t v)
{
    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void checksum(const uint8_t *hdr, uint8_t out[8])
{
    uint8_t digest[SHA256_BYTES];
    sha256(hdr, OFF_CHECK, digest);
    memcpy(out, digest, 8);
}

/* A role whose file is a database (the database itself or a backup). */
static int data_role(uint32_t role)
{
    return role == RGN_ROLE_DB || role == RGN_ROLE_BACKUP;
}

void rgn_hdr_encode(const struct rgn_hdr *h, uint8_t out[RGN_HDR_BYTES])
{
    memset(out, 0, RGN_HDR_BYTES);
    memcpy(out, MAGIC, sizeof MAGIC);
    put32(out + OFF_VERSION, RGN_VERSION);
    put32(out + OFF_ROLE, h->role);
    put32(out + OFF_OWNER, h->owner);
    put32(out + OFF_FLAGS, h->flags);
    put64(out + OFF_SEQ, h->seq);
    put64(out + OFF_SIZE, h->size);
    put64(out + OFF_LBA, h->lba);
    put64(out + OFF_BLOCKS, h->blocks);
    checksum(out, out + OFF_CHECK);
}

int rgn_hdr_parse(const uint8_t *buf, size_t len, uint32_t role, uint64_t lba,
                  uint64_t blocks, uint64_t capacity, struct rgn_hdr *out)
{
    uint8_t check[8];

    memset(out, 0, sizeof *out);
    if (len < RGN_HDR_BYTES || memcmp(buf, MAGIC, sizeof MAGIC) != 0)
        return RGN_BLANK;
    checksum(buf, check);
    if (memcmp(check, buf + OFF_CHECK, sizeof check) != 0)
        return RGN_TORN;
    if (get32(buf + OFF_VERSION) != RGN_VERSION)
        return RGN_NEWER;
    out->role = get32(buf + OFF_ROLE);
    out->owner = get32(buf + OFF_OWNER);
    out->flags = get32(buf + OFF_FLAGS);
    out->seq = get64(buf + OFF_SEQ);
    out->size = get64(buf + OFF_SIZE);
    out->lba = get64(buf + OFF_LBA);
    out->blocks = get64(buf + OFF_BLOCKS);
    /* The database and a backup hold the same kind of file: a migration
     * (tern-disk) swaps their regions in the superblock's table, which is
     * the one write that switches, so each region's header may still name
     * the other role until its next header write (kvfs_io.c writes its own
     * role). The log is never taken for either. A region the layout grew
     * (disk/grow.h) keeps its start and its header, naming the old, shorter
     * length, until the header's next write; any other difference is a
     * copy of another region's header. */
    if ((out->role != role && !(data_role(out->role) && data_role(role))) || out->lba != lba ||
        out->blocks > blocks || out->blocks == 0)
        return RGN_FOREIGN;
    if (out->owner > RGN_OWNER_JOURNAL || out->flags != 0 ||
        out->size > capacity || (out->owner == RGN_OWNER_NONE && out->size != 0) ||
        (role != RGN_ROLE_LOG && out->owner > RGN_OWNER_MAIN) ||
        (role == RGN_ROLE_LOG && out->owner == RGN_OWNER_MAIN))
        return RGN_BAD;
    return RGN_OK;
}

/* How bad a parse result is, for reporting the worse of two. */
static int severity(int rc)
{
    switch (rc) {
    case RGN_NEWER:
        return 4;
    case RGN_FOREIGN:
        return 3;
    case RGN_BAD:
        return 2;
    case RGN_TORN:
        return 1;
    default:
        return 0;
    }
}

int rgn_hdr_pick(const struct rgn_hdr h[RGN_HDR_COPIES], const int rc[RGN_HDR_COPIES],
                 uint32_t role, uint64_t lba, uint64_t blocks, struct rgn_hdr *out,
                 unsigned *slot)
{
    int ok0 = rc[0] == RGN_OK, ok1 = rc[1] == RGN_OK;

    if (ok0 || ok1) {
        /* A newer format in either copy means a newer release wrote the
         * region: reading the older copy would undo its work. */
        if (rc[0] == RGN_NEWER || rc[1] == RGN_NEWER)
            return RGN_NEWER;
        *slot = ok0 && (!ok1 || h[0].seq >= h[1].seq) ? 0 : 1;
        *out = h[*slot];
        return RGN_OK;
    }
    if ((rc[0] == RGN_BLANK || rc[0] == RGN_TORN) && (rc[1] == RGN_BLANK || rc[1] == RGN_TORN) &&
        !(rc[0] == RGN_TORN && rc[1] == RGN_TORN)) {
        memset(out, 0, sizeof *out);
        out->role = role;
        out->lba = lba;
        out->blocks = blocks;
        *slot = 1;
        return RGN_OK;
    }
    return severity(rc[0]) >= severity(rc[1]) ? rc[0] : rc[1];
}

const char *rgn_parse_text(int rc)
{
    switch (rc) {
    case RGN_OK:
        return "ok";
    case RGN_BLANK:
        return "no region header";
    case RGN_TORN:
        return "region header checksum mismatch";
    case RGN_NEWER:
        return "region header of a newer format";
    case RGN_FOREIGN:
        return "region header of another region";
    case RGN_BAD:
        return "region header with impossible fields";
    default:
        return "unknown region header result";
    }
}
