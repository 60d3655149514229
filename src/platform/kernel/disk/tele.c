/*
 * tele.c - the telemetry journal's format (heads, segments, records), its
 * pure parsers and encoders, the JSON rendering of records, and the
 * open / append / sync / scan protocol over struct kdisk. Field offsets are
 * docs/DISK.md's tables ("Inside the telemetry region"); little-endian.
 */
#include "tele.h"

#include "crc32.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Head copy fields. */
enum {
    H_MAGIC = 0,
    H_VERSION = 8,
    H_CRC = 12,
    H_GENERATION = 16,
    H_HEAD = 24,
    H_TAIL = 32,
    H_LBA = 40,
    H_BLOCKS = 48,
    H_FIRST = 56,
};

/* Segment header fields. */
enum {
    G_MAGIC = 0,
    G_VERSION = 8,
    G_CRC = 12,
    G_SEQ = 16,
    G_LBA = 24,
    G_FIRST = 32,
    G_CREATED = 40,
    G_BOOT = 48,
    G_SEG_BYTES = 56,
    G_FLAGS = 60,
};

/* Record header fields. */
enum {
    R_CRC = 0,
    R_BYTES = 4,
    R_KIND = 6,
    R_VERSION = 7,
    R_NUMBER = 8,
    R_TIME = 16,
};

static const char head_magic[TELE_MAGIC_LEN] = {'t', 'e', 'r', 'n', '-', 't', 'l', 'h'};
static const char seg_magic[TELE_MAGIC_LEN] = {'t', 'e', 'r', 'n', '-', 't', 's', 'g'};

__attribute__((format(printf, 3, 4))) static int say(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return TELE_CORRUPT;
}

int tele_geom_init(struct tele_geom *g, const uint8_t volume[16], uint64_t lba, uint64_t blocks,
                   uint32_t logical, uint32_t physical, char *why, size_t whyn)
{
    memset(g, 0, sizeof *g);
    memcpy(g->volume, volume, sizeof g->volume);
    g->lba = lba;
    g->blocks = blocks;
    g->logical_block = logical;
    g->physical_block = physical;
    if (!logical || !physical || physical % logical || physical > TELE_SEG_BYTES ||
        TELE_SEG_BYTES % physical || (lba * logical) % physical) {
        say(why, whyn, "the telemetry region is not on whole %u-byte physical blocks", physical);
        return -1;
    }
    g->head_b = physical > TELE_HEAD_SLOT ? physical : TELE_HEAD_SLOT;
    g->seg0 = 2 * (uint64_t)g->head_b;
    const uint64_t bytes = blocks * logical;
    g->nseg = bytes > g->seg0 ? (bytes - g->seg0) / TELE_SEG_BYTES : 0;
    if (g->nseg < TELE_MIN_SEGS) {
        say(why, whyn, "the telemetry region (%llu bytes) holds %llu segments; at least %d are needed",
            (unsigned long long)bytes, (unsigned long long)g->nseg, TELE_MIN_SEGS);
        return -1;
    }
    return 0;
}

uint64_t tele_slot(const struct tele_geom *g, uint64_t seq) { return (seq - 1) % g->nseg; }

uint64_t tele_slot_lba(const struct tele_geom *g, uint64_t slot)
{
    return g->lba + (g->seg0 + slot * TELE_SEG_BYTES) / g->logical_block;
}

/* CRC of a 64-byte structure whose CRC field is at crc_at, seeded with the
 * volume id (a head or segment of an earlier format of the partition never
 * checks). */
static uint32_t struct_crc(const struct tele_geom *g, const uint8_t *buf, unsigned crc_at)
{
    static const uint8_t zero[4];
    uint32_t crc = crc32(g->volume, sizeof g->volume);
    crc = crc32_update(crc, buf, crc_at);
    crc = crc32_update(crc, zero, sizeof zero);
    return crc32_update(crc, buf + crc_at + 4, TELE_HEAD_BYTES - crc_at - 4);
}

int tele_head_decode(const uint8_t *buf, size_t n, const struct tele_geom *g, struct tele_head *out,
                     char *why, size_t whyn)
{
    memset(out, 0, sizeof *out);
    if (n < TELE_HEAD_BYTES || memcmp(buf + H_MAGIC, head_magic, TELE_MAGIC_LEN))
        return TELE_BLANK;
    const uint32_t crc = kdisk_le32(buf + H_CRC);
    if (crc != struct_crc(g, buf, H_CRC))
        return say(why, whyn, "CRC32 mismatch");
    const uint32_t version = kdisk_le32(buf + H_VERSION);
    if (version > TELE_VERSION) {
        say(why, whyn, "format version %u is newer than this release's %d", version, TELE_VERSION);
        return TELE_NEWER;
    }
    if (version != TELE_VERSION)
        return say(why, whyn, "format version %u is unknown", version);
    if (kdisk_le64(buf + H_LBA) != g->lba || kdisk_le64(buf + H_BLOCKS) != g->blocks)
        return say(why, whyn, "it describes the region at LBA %llu (%llu blocks), not this one",
                   (unsigned long long)kdisk_le64(buf + H_LBA),
                   (unsigned long long)kdisk_le64(buf + H_BLOCKS));
    out->generation = kdisk_le64(buf + H_GENERATION);
    out->head_seq = kdisk_le64(buf + H_HEAD);
    out->tail_seq = kdisk_le64(buf + H_TAIL);
    out->head_first = kdisk_le64(buf + H_FIRST);
    if (!out->generation)
        return say(why, whyn, "generation 0");
    if (out->tail_seq < 1 || out->tail_seq > out->head_seq + 1 ||
        out->head_seq - out->tail_seq + 1 > g->nseg - TELE_SPARE)
        return say(why, whyn, "live segments %llu..%llu do not fit the ring of %llu",
                   (unsigned long long)out->tail_seq, (unsigned long long)out->head_seq,
                   (unsigned long long)g->nseg);
    if (out->head_seq && !out->head_first)
        return say(why, whyn, "head segment %llu has no first record number",
                   (unsigned long long)out->head_seq);
    if (out->head_first > UINT64_MAX / 2 || out->head_seq > UINT64_MAX / 2)
        return say(why, whyn, "sequence numbers out of range");
    return TELE_VALID;
}

void tele_head_encode(const struct tele_head *h, const struct tele_geom *g, uint8_t *buf)
{
    memset(buf, 0, TELE_HEAD_BYTES);
    memcpy(buf + H_MAGIC, head_magic, TELE_MAGIC_LEN);
    kdisk_put32(buf + H_VERSION, TELE_VERSION);
    kdisk_put64(buf + H_GENERATION, h->generation);
    kdisk_put64(buf + H_HEAD, h->head_seq);
    kdisk_put64(buf + H_TAIL, h->tail_seq);
    kdisk_put64(buf + H_LBA, g->lba);
    kdisk_put64(buf + H_BLOCKS, g->blocks);
    kdisk_put64(buf + H_FIRST, h->head_first);
    kdisk_put32(buf + H_CRC, struct_crc(g, buf, H_CRC));
}

int tele_seg_decode(const uint8_t *seg, size_t n, const struct tele_geom *g, uint64_t expect_seq,
                    struct tele_seg *out, char *why, size_t whyn)
{
    memset(out, 0, sizeof *out);
    if (n < TELE_SEG_HDR || memcmp(seg + G_MAGIC, seg_magic, TELE_MAGIC_LEN))
        return TELE_BLANK;
    if (kdisk_le32(seg + G_CRC) != struct_crc(g, seg, G_CRC))
        return say(why, whyn, "CRC32 mismatch");
    const uint32_t version = kdisk_le32(seg + G_VERSION);
    if (version > TELE_VERSION) {
        say(why, whyn, "format version %u is newer than this release's %d", version, TELE_VERSION);
        return TELE_NEWER;
    }
    if (version != TELE_VERSION)
        return say(why, whyn, "format version %u is unknown", version);
    out->seq = kdisk_le64(seg + G_SEQ);
    out->first_record = kdisk_le64(seg + G_FIRST);
    out->created_ms = (int64_t)kdisk_le64(seg + G_CREATED);
    out->boot = kdisk_le64(seg + G_BOOT);
    if (out->seq != expect_seq)
        return say(why, whyn, "it holds segment %llu, not %llu (an earlier pass of the ring)",
                   (unsigned long long)out->seq, (unsigned long long)expect_seq);
    if (kdisk_le64(seg + G_LBA) != g->lba)
        return say(why, whyn, "it belongs to the region at LBA %llu",
                   (unsigned long long)kdisk_le64(seg + G_LBA));
    if (kdisk_le32(seg + G_SEG_BYTES) != TELE_SEG_BYTES || kdisk_le32(seg + G_FLAGS))
        return say(why, whyn, "segment size %u or flags 0x%x unknown", kdisk_le32(seg + G_SEG_BYTES),
                   kdisk_le32(seg + G_FLAGS));
    if (!out->first_record || out->first_record > UINT64_MAX / 2)
        return say(why, whyn, "first record number %llu out of range",
                   (unsigned long long)out->first_record);
    return TELE_VALID;
}

void tele_seg_encode(const struct tele_seg *s, const struct tele_geom *g, uint8_t *seg)
{
    memset(seg, 0, TELE_SEG_HDR);
    memcpy(seg + G_MAGIC, seg_magic, TELE_MAGIC_LEN);
    kdisk_put32(seg + G_VERSION, TELE_VERSION);
    kdisk_put64(seg + G_SEQ, s->seq);
    kdisk_put64(seg + G_LBA, g->lba);
    kdisk_put64(seg + G_FIRST, s->first_record);
    kdisk_put64(seg + G_CREATED, (uint64_t)s->created_ms);
    kdisk_put64(seg + G_BOOT, s->boot);
    kdisk_put32(seg + G_SEG_BYTES, TELE_SEG_BYTES);
    kdisk_put32(seg + G_CRC, struct_crc(g, seg, G_CRC));
}

/* A record's CRC: the volume, the segment's sequence, the region's LBA and
 * the record's offset, then its bytes after the CRC field. A record left
 * by an earlier pass of the ring at the same place, or copied elsewhere,
 * fails it. */
static uint32_t rec_crc(const struct tele_geom *g, const struct tele_seg *s, uint32_t offset,
                        const uint8_t *rec, uint32_t bytes)
{
    uint8_t seed[20];
    kdisk_put64(seed, s->seq);
    kdisk_put64(seed + 8, g->lba);
    kdisk_put32(seed + 16, offset);
    uint32_t crc = crc32(g->volume, sizeof g->volume);
    crc = crc32_update(crc, seed, sizeof seed);
    return crc32_update(crc, rec + 4, bytes - 4);
}

static uint32_t rec_span(uint32_t bytes)
{
    return (bytes + TELE_REC_ALIGN - 1) & ~(uint32_t)(TELE_REC_ALIGN - 1);
}

void tele_iter_start(struct tele_iter *it)
{
    it->offset = TELE_SEG_HDR;
    it->index = 0;
}

int tele_rec_next(const uint8_t *seg, size_t n, const struct tele_geom *g, const struct tele_seg *s,
                  struct tele_iter *it, struct tele_rec *out)
{
    if (n > TELE_SEG_BYTES)
        n = TELE_SEG_BYTES;
    if (it->offset < TELE_SEG_HDR || it->offset % TELE_REC_ALIGN || it->offset > n ||
        n - it->offset < TELE_REC_HDR)
        return 0;
    const uint8_t *r = seg + it->offset;
    const uint32_t bytes = kdisk_le16(r + R_BYTES);
    if (bytes < TELE_REC_HDR || bytes > TELE_REC_HDR + TELE_PAYLOAD_MAX || bytes > n - it->offset)
        return 0;
    if (kdisk_le32(r + R_CRC) != rec_crc(g, s, it->offset, r, bytes))
        return 0;
    if (kdisk_le64(r + R_NUMBER) != s->first_record + it->index)
        return 0;
    out->offset = it->offset;
    out->bytes = bytes;
    out->kind = r[R_KIND];
    out->version = r[R_VERSION];
    out->number = kdisk_le64(r + R_NUMBER);
    out->time_ms = (int64_t)kdisk_le64(r + R_TIME);
    out->payload = r + TELE_REC_HDR;
    out->payload_len = bytes - TELE_REC_HDR;
    it->offset += rec_span(bytes);
    it->index++;
    return 1;
}

int tele_rec_append(uint8_t *seg, const struct tele_geom *g, const struct tele_seg *s,
                    struct tele_iter *it, uint8_t kind, uint8_t version, int64_t time_ms,
                    const void *payload, uint32_t len)
{
    if (len > TELE_PAYLOAD_MAX)
        return -1;
    const uint32_t bytes = TELE_REC_HDR + len;
    if (it->offset > TELE_SEG_BYTES || TELE_SEG_BYTES - it->offset < rec_span(bytes))
        return -1;
    uint8_t *r = seg + it->offset;
    memset(r, 0, rec_span(bytes));
    kdisk_put16(r + R_BYTES, (uint16_t)bytes);
    r[R_KIND] = kind;
    r[R_VERSION] = version;
    kdisk_put64(r + R_NUMBER, s->first_record + it->index);
    kdisk_put64(r + R_TIME, (uint64_t)time_ms);
    if (len)
        memcpy(r + TELE_REC_HDR, payload, len);
    kdisk_put32(r + R_CRC, rec_crc(g, s, it->offset, r, bytes));
    it->offset += rec_span(bytes);
    it->index++;
    return 0;
}

/* ---- JSON ---- */

const char *tele_kind_name(uint8_t kind)
{
    switch (kind) {
    case TELE_K_BOOT: return "boot";
    case TELE_K_POWER_CUT: return "power-cut";
    case TELE_K_STOP: return "stop";
    case TELE_K_STATS: return "stats";
    case TELE_K_STORE: return "store";
    case TELE_K_BACKUP: return "backup";
    case TELE_K_CERT: return "certificate";
    default: return "unknown";
    }
}

struct jbuf {
    char *buf;
    size_t n, len;
};

__attribute__((format(printf, 2, 3))) static void jput(struct jbuf *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const size_t room = j->len < j->n ? j->n - j->len : 0;
    const int w = vsnprintf(room ? j->buf + j->len : NULL, room, fmt, ap);
    va_end(ap);
    if (w > 0)
        j->len += (size_t)w;
}

/* A fixed-size text field from the disk: printable ASCII up to its first
 * NUL, anything else (and JSON's specials) escaped or replaced. */
static void jtext(struct jbuf *j, const char *key, const uint8_t *p, size_t n)
{
    jput(j, ",\"%s\":\"", key);
    for (size_t i = 0; i < n && p[i]; i++) {
        const uint8_t c = p[i];
        if (c == '"' || c == '\\')
            jput(j, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            jput(j, "%c", c);
        else
            jput(j, "?");
    }
    jput(j, "\"");
}

static void ju64(struct jbuf *j, const char *key, const uint8_t *p)
{
    jput(j, ",\"%s\":%llu", key, (unsigned long long)kdisk_le64(p));
}

/* Payload sizes of the version-1 kinds (docs/DISK.md). */
enum {
    P_BOOT = 96,
    P_POWER_CUT = 24,
    P_STOP = 8,
    P_STATS = 80,
    P_STORE = 16,
    P_BACKUP = 16,
    P_CERT = 16,
};

static const char *const stats_keys[] = {"boot", "uptime_ms", "clients", "messages_in", "messages_out",
                                         "messages_dropped", "store_commits", "store_failures",
                                         "memory_used", "memory_total"};

static int decode(struct jbuf *j, const struct tele_rec *r)
{
    const uint8_t *p = r->payload;
    if (r->version != 1)
        return 0;
    switch (r->kind) {
    case TELE_K_BOOT:
        if (r->payload_len < P_BOOT)
            return 0;
        ju64(j, "boot", p);
        jput(j, ",\"mode\":\"%s\"", kdisk_le32(p + 8) == 1 ? "disk" : kdisk_le32(p + 8) == 2 ? "live" : "other");
        ju64(j, "partition_bytes", p + 16);
        jtext(j, "release", p + 24, 32);
        jtext(j, "disk", p + 56, 40);
        return 1;
    case TELE_K_POWER_CUT:
        if (r->payload_len < P_POWER_CUT)
            return 0;
        ju64(j, "previous_boot", p);
        ju64(j, "last_record", p + 8);
        jput(j, ",\"last_time_ms\":%lld", (long long)kdisk_le64(p + 16));
        return 1;
    case TELE_K_STOP:
        if (r->payload_len < P_STOP)
            return 0;
        ju64(j, "boot", p);
        return 1;
    case TELE_K_STATS:
        if (r->payload_len < P_STATS)
            return 0;
        for (unsigned i = 0; i < sizeof stats_keys / sizeof stats_keys[0]; i++)
            ju64(j, stats_keys[i], p + 8 * i);
        return 1;
    case TELE_K_STORE:
        if (r->payload_len < P_STORE)
            return 0;
        jput(j, ",\"state\":\"%s\"", kdisk_le32(p) ? "failing" : "working");
        ju64(j, "failed_commits", p + 8);
        return 1;
    case TELE_K_BACKUP:
        if (r->payload_len < P_BACKUP)
            return 0;
        jput(j, ",\"result\":\"%s\"", kdisk_le32(p) ? "failed" : "done");
        ju64(j, "count", p + 8);
        return 1;
    case TELE_K_CERT:
        if (r->payload_len < P_CERT)
            return 0;
        jput(j, ",\"not_after\":%lld,\"days_left\":%d", (long long)kdisk_le64(p),
             (int32_t)kdisk_le32(p + 8));
        return 1;
    default:
        return 0;
    }
}

size_t tele_rec_json(const struct tele_rec *r, char *buf, size_t n)
{
    struct jbuf j = {buf, n, 0};
    if (n)
        buf[0] = 0;
    jput(&j, "{\"kind\":\"%s\",\"record\":%llu,\"time_ms\":%lld", tele_kind_name(r->kind),
         (unsigned long long)r->number, (long long)r->time_ms);
    if (!decode(&j, r))
        jput(&j, ",\"kind_id\":%u,\"version\":%u,\"payload_bytes\":%u", r->kind, r->version,
             r->payload_len);
    jput(&j, "}");
    if (j.len >= n && n) {
        /* Truncated output would not be JSON: give none. */
        buf[0] = 0;
    }
    return j.len;
}

/* ---- the journal over a disk ---- */

static uint32_t per_phys(const struct tele_geom *g) { return g->physical_block / g->logical_block; }

static int read_head(struct tele *t, unsigned copy, struct tele_head *h, char *why, size_t whyn,
                     struct kdisk_report *rep)
{
    const uint64_t lba = t->g.lba + (copy ? t->g.head_b / t->g.logical_block : 0);
    t->reads++;
    if (kdisk_read(t->d, lba, 1, t->d->io, copy ? "telemetry head B" : "telemetry head A", rep))
        return -1;
    return tele_head_decode(t->d->io, t->g.logical_block, &t->g, h, why, whyn);
}

/* Read segment seq into buf and check its header. */
static int read_seg(const struct kdisk *d, const struct tele_geom *g, uint64_t seq, uint8_t *buf,
                    struct tele_seg *s, char *why, size_t whyn, struct kdisk_report *rep)
{
    if (kdisk_read(d, tele_slot_lba(g, tele_slot(g, seq)), TELE_SEG_BYTES / g->logical_block, d->io,
                   "a telemetry segment", rep))
        return -1;
    if (buf != d->io)
        memcpy(buf, d->io, TELE_SEG_BYTES);
    return tele_seg_decode(buf, TELE_SEG_BYTES, g, seq, s, why, whyn);
}

static void walk_to_end(struct tele *t)
{
    struct tele_rec r;
    tele_iter_start(&t->end);
    while (tele_rec_next(t->seg, TELE_SEG_BYTES, &t->g, &t->cur, &t->end, &r))
        ;
    /* What follows the last valid record is untrusted: zero it in memory,
     * so the blocks rewritten at the next sync carry zeros there. */
    memset(t->seg + t->end.offset, 0, TELE_SEG_BYTES - t->end.offset);
    t->synced = t->end.offset;
    t->next_record = t->cur.first_record + t->end.index;
}

int tele_open(struct tele *t, const struct kdisk *d, const struct tele_geom *g, uint8_t *seg,
              tele_discard_fn discard, void *discard_ctx, struct kdisk_report *rep)
{
    memset(t, 0, sizeof *t);
    t->d = d;
    t->g = *g;
    t->seg = seg;
    t->discard = discard;
    t->discard_ctx = discard_ctx;
    int rc = kdisk_check(d, rep);
    if (rc)
        return rc;

    struct tele_head h[2];
    char why[2][KDISK_MSG_MAX] = {"", ""};
    int v[2];
    for (unsigned c = 0; c < 2; c++) {
        v[c] = read_head(t, c, &h[c], why[c], sizeof why[c], rep);
        if (v[c] < 0)
            return KDISK_EIO;
    }
    for (unsigned c = 0; c < 2; c++)
        if (v[c] == TELE_NEWER)
            return kdisk_fail(rep, KDISK_EREFUSED, "telemetry head %c: %s", c ? 'B' : 'A', why[c]);

    if (v[0] == TELE_VALID || v[1] == TELE_VALID) {
        unsigned use = v[0] == TELE_VALID && (v[1] != TELE_VALID || h[0].generation >= h[1].generation) ? 0 : 1;
        if (v[!use] == TELE_CORRUPT)
            kdisk_note(rep, "telemetry head %c is unusable (%s); using head %c (generation %llu)",
                       use ? 'A' : 'B', why[!use], use ? 'B' : 'A',
                       (unsigned long long)h[use].generation);
        t->head = h[use];
        t->head_copy = use;
    } else if (v[0] == TELE_CORRUPT && v[1] == TELE_CORRUPT) {
        return kdisk_fail(rep, KDISK_EREFUSED, "no usable telemetry head: A: %s; B: %s", why[0], why[1]);
    } else {
        /* Neither copy was ever completely written (one may be a torn first
         * write): the journal is empty. The first write goes to A. */
        if (v[0] == TELE_CORRUPT || v[1] == TELE_CORRUPT)
            kdisk_note(rep, "telemetry head %c is unusable (%s) and %c is blank: starting an empty journal",
                       v[0] == TELE_CORRUPT ? 'A' : 'B', v[0] == TELE_CORRUPT ? why[0] : why[1],
                       v[0] == TELE_CORRUPT ? 'B' : 'A');
        t->head = (struct tele_head){.generation = 0, .head_seq = 0, .tail_seq = 1, .head_first = 0};
        t->head_copy = 1;
        t->next_record = 1;
        return KDISK_OK;
    }
    if (!t->head.head_seq) {
        t->next_record = 1;
        return KDISK_OK;
    }

    char w[KDISK_MSG_MAX] = "";
    t->reads++;
    int sv = read_seg(d, &t->g, t->head.head_seq, t->seg, &t->cur, w, sizeof w, rep);
    if (sv < 0)
        return KDISK_EIO;
    if (sv != TELE_VALID) {
        /* The head is written only after its segment was flushed, so this
         * is damage, not a power cut: lose that segment, keep the rest. */
        kdisk_note(rep, "telemetry segment %llu (the head) is unusable (%s); its records are lost",
                   (unsigned long long)t->head.head_seq, sv == TELE_BLANK ? "blank" : w);
        t->next_record = t->head.head_first + TELE_MAX_RECS;
        t->have_seg = 0;
    } else {
        t->have_seg = 1;
        t->cur_named = 1;
        t->cur_expired = 1;
        walk_to_end(t);
    }
    /* A segment started after the head but whose head update was lost. */
    for (unsigned k = 1; k <= TELE_PROBE_MAX; k++) {
        struct tele_seg s;
        t->reads++;
        sv = read_seg(d, &t->g, t->head.head_seq + k, d->io, &s, w, sizeof w, rep);
        if (sv < 0)
            return KDISK_EIO;
        if (sv != TELE_VALID || s.first_record < t->next_record)
            break;
        memcpy(t->seg, d->io, TELE_SEG_BYTES);
        t->cur = s;
        t->have_seg = 1;
        t->cur_named = 0;
        t->cur_expired = 1; /* its slot was expired before it was written */
        walk_to_end(t);
    }
    return KDISK_OK;
}

/* Write h to the copy not written last, then flush. */
static int write_head(struct tele *t, const struct tele_head *h, struct kdisk_report *rep)
{
    const unsigned copy = !t->head_copy;
    struct tele_head nh = *h;
    nh.generation = t->head.generation + 1;
    memset(t->d->io, 0, t->g.physical_block);
    tele_head_encode(&nh, &t->g, t->d->io);
    const uint64_t lba = t->g.lba + (copy ? t->g.head_b / t->g.logical_block : 0);
    if (kdisk_write(t->d, lba, per_phys(&t->g), t->d->io, "the telemetry head", rep) ||
        kdisk_flush(t->d, "the telemetry head", rep))
        return KDISK_EIO;
    t->head = nh;
    t->head_copy = copy;
    return KDISK_OK;
}

/* Before cur's blocks are written: expire the oldest segments so that at
 * most nseg - TELE_SPARE are live with cur, make that durable, then
 * discard the slots that left the ring (never before: a head that still
 * covers a slot must not point at discarded blocks). */
static int expire(struct tele *t, struct kdisk_report *rep)
{
    const uint64_t live_max = t->g.nseg - TELE_SPARE;
    uint64_t tail = t->head.tail_seq;
    if (t->cur.seq >= tail + live_max)
        tail = t->cur.seq - live_max + 1;
    if (tail != t->head.tail_seq) {
        struct tele_head h = t->head;
        h.tail_seq = tail;
        if (write_head(t, &h, rep))
            return KDISK_EIO;
    }
    /* The slots not live once cur is: cur.seq + 1 .. cur.seq + TELE_SPARE. */
    for (uint64_t k = 1; k <= TELE_SPARE; k++) {
        const uint64_t seq = t->cur.seq + k;
        if (t->discard) {
            const int st = t->discard(t->discard_ctx, tele_slot_lba(&t->g, tele_slot(&t->g, seq)),
                                      TELE_SEG_BYTES / t->g.logical_block);
            if (st)
                t->discard_errors++;
            else
                t->discards++;
        }
    }
    t->expired = tail - 1;
    t->cur_expired = 1;
    return KDISK_OK;
}

int tele_sync(struct tele *t, struct kdisk_report *rep)
{
    if (!t->have_seg || (t->cur_named && t->synced == t->end.offset))
        return KDISK_OK;
    if (!t->cur_expired && expire(t, rep))
        return KDISK_EIO;
    const uint32_t pb = t->g.physical_block;
    const uint32_t from = t->cur_named ? t->synced / pb * pb : 0;
    const uint32_t to = (t->end.offset + pb - 1) / pb * pb;
    if (to > from) {
        memcpy(t->d->io, t->seg + from, to - from);
        const uint64_t lba = tele_slot_lba(&t->g, tele_slot(&t->g, t->cur.seq)) + from / t->g.logical_block;
        if (kdisk_write(t->d, lba, (to - from) / t->g.logical_block, t->d->io, "a telemetry segment", rep) ||
            kdisk_flush(t->d, "a telemetry segment", rep))
            return KDISK_EIO;
    }
    t->synced = t->end.offset;
    if (!t->cur_named) {
        struct tele_head h = t->head;
        h.head_seq = t->cur.seq;
        h.head_first = t->cur.first_record;
        if (write_head(t, &h, rep))
            return KDISK_EIO;
        t->cur_named = 1;
    }
    return KDISK_OK;
}

/* Start the segment after the head in memory. */
static void start_seg(struct tele *t, int64_t time_ms)
{
    const uint64_t seq = (t->have_seg ? t->cur.seq : t->head.head_seq) + 1;
    t->cur = (struct tele_seg){.seq = seq, .first_record = t->next_record, .created_ms = time_ms,
                               .boot = t->boot};
    memset(t->seg, 0, TELE_SEG_BYTES);
    tele_seg_encode(&t->cur, &t->g, t->seg);
    tele_iter_start(&t->end);
    t->synced = 0;
    t->have_seg = 1;
    t->cur_named = 0;
    t->cur_expired = 0;
}

int tele_append(struct tele *t, uint8_t kind, uint8_t version, int64_t time_ms, const void *payload,
                uint32_t len, struct kdisk_report *rep)
{
    if (len > TELE_PAYLOAD_MAX)
        return kdisk_fail(rep, KDISK_EINVAL, "a telemetry record of %u bytes is too long", len);
    if (!t->have_seg)
        start_seg(t, time_ms);
    if (tele_rec_append(t->seg, &t->g, &t->cur, &t->end, kind, version, time_ms, payload, len)) {
        /* Full: the segment must be complete on the disk (and named by the
         * head) before the next one starts. */
        if (tele_sync(t, rep))
            return KDISK_EIO;
        start_seg(t, time_ms);
        if (tele_rec_append(t->seg, &t->g, &t->cur, &t->end, kind, version, time_ms, payload, len))
            return kdisk_fail(rep, KDISK_EINVAL, "a telemetry record of %u bytes does not fit a segment", len);
    }
    t->next_record++;
    return KDISK_OK;
}

int tele_scan(const struct kdisk *d, const struct tele_geom *g, const struct tele_head *h,
              uint8_t *seg, tele_rec_fn fn, tele_bad_fn bad, void *ctx, struct kdisk_report *rep)
{
    if (!h->head_seq)
        return KDISK_OK;
    uint64_t next_first = 0;
    for (uint64_t seq = h->tail_seq; seq <= h->head_seq + TELE_PROBE_MAX; seq++) {
        struct tele_seg s;
        char why[KDISK_MSG_MAX] = "";
        const int v = read_seg(d, g, seq, seg, &s, why, sizeof why, rep);
        if (v < 0)
            return KDISK_EIO;
        if (seq > h->head_seq && (v != TELE_VALID || s.first_record < next_first))
            break; /* past the head: only a segment whose head update was lost */
        if (v != TELE_VALID) {
            if (bad)
                bad(ctx, seq, v == TELE_BLANK ? "blank" : why);
            continue;
        }
        struct tele_iter it;
        struct tele_rec r;
        tele_iter_start(&it);
        while (tele_rec_next(seg, TELE_SEG_BYTES, g, &s, &it, &r))
            fn(ctx, &s, &r);
        next_first = s.first_record + it.index;
    }
    return KDISK_OK;
}
