/*
 * scrub.c - the disk scrubber's passes (scrub.h): a state machine that
 * checks one item (a superblock slot, a GPT copy, a region header pair, a
 * run of pages, a WAL frame) at a time, so the caller can spread a pass
 * over time under an I/O budget.
 */
#include "scrub.h"

#include "../disk/crc32.h"
#include "pagesum.h"
#include "region.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    CHUNK = 32 * 1024,                  /* bytes of pages read at once */
    LEAVES_MAX = 4u << 20,              /* freelist leaves remembered (16 MiB) */
    PENDING_BYTE = 0x40000000,          /* SQLite's lock byte: its page is never written */
};

/* The four SQLite files: region kind, region header role, name. */
static const struct {
    uint32_t kind, role;
    const char *name;
} files[] = {
    {KDISK_REGION_DB, RGN_ROLE_DB, "database"},
    {KDISK_REGION_WAL, RGN_ROLE_LOG, "WAL"},
    {KDISK_REGION_BACKUP_A, RGN_ROLE_BACKUP, "backup A"},
    {KDISK_REGION_BACKUP_B, RGN_ROLE_BACKUP, "backup B"},
};
/* The page files in SCRUB_PH_FILES order: database, backup A, backup B. */
static const int page_files[] = {0, 2, 3};

static uint32_t sc_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void found(struct scrub *s, const char *region, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void found(struct scrub *s, const char *region, uint64_t offset, const char *fmt, ...)
{
    va_list ap;
    s->last.region = region;
    s->last.offset = offset;
    va_start(ap, fmt);
    vsnprintf(s->last.what, sizeof s->last.what, fmt, ap);
    va_end(ap);
    s->corrupt++;
    if (s->report != NULL)
        s->report(s->ctx, &s->last);
}

/* Read n bytes (n + a block <= KDISK_IO_BYTES) at absolute byte offset
 * off into the disk's I/O buffer; *out points at them. 0 or the status. */
static int read_at(struct scrub *s, uint64_t off, size_t n, const uint8_t **out)
{
    const struct kdisk *d = s->disk;
    uint64_t lb = d->logical_block;
    uint64_t first = off / lb, end = (off + n + lb - 1) / lb;
    int rc = d->read(d->ctx, first, (uint32_t)(end - first), d->io);
    s->pass_bytes += (end - first) * lb;
    *out = d->io + (off - first * lb);
    return rc;
}

static const struct kdisk_region *region_of(const struct scrub *s, int file)
{
    return klayout_region(s->layout, files[file].kind);
}

/* Byte offset of a region's data (after its two header blocks). */
static uint64_t data_start(const struct scrub *s, const struct kdisk_region *r)
{
    return r->lba * s->disk->logical_block + 2u * s->disk->physical_block;
}

static uint64_t capacity_of(const struct scrub *s, const struct kdisk_region *r)
{
    return r->blocks * s->disk->logical_block - 2u * s->disk->physical_block;
}

/* Both header copies of file's region: damage reported when report; the
 * picked header in *out. 0, or -1 when neither copy is usable. */
static int region_header(struct scrub *s, int file, bool report, struct rgn_hdr *out)
{
    const struct kdisk_region *r = region_of(s, file);
    struct rgn_hdr h[RGN_HDR_COPIES];
    int rc[RGN_HDR_COPIES];
    unsigned slot;
    for (unsigned c = 0; c < RGN_HDR_COPIES; c++) {
        const uint8_t *p;
        uint64_t off = r->lba * s->disk->logical_block + (uint64_t)c * s->disk->physical_block;
        if (read_at(s, off, RGN_HDR_BYTES, &p) != 0) {
            s->read_errors++;
            if (report)
                found(s, files[file].name, 0, "region header copy %u: read error", c);
            return -1;
        }
        rc[c] = rgn_hdr_parse(p, RGN_HDR_BYTES, files[file].role, r->lba, r->blocks,
                              capacity_of(s, r), &h[c]);
        if (report && rc[c] != RGN_OK && rc[c] != RGN_BLANK)
            found(s, files[file].name, (uint64_t)c * s->disk->physical_block,
                  "region header copy %u: %s", c, rgn_parse_text(rc[c]));
    }
    return rgn_hdr_pick(h, rc, files[file].role, r->lba, r->blocks, out, &slot) == RGN_OK ? 0
                                                                                       : -1;
}

static void check_super(struct scrub *s, int slot)
{
    const uint8_t *p;
    struct ksuper sb;
    char why[128];
    const char *name = slot ? "superblock B" : "superblock A";
    uint64_t off = s->layout->part.first * s->disk->logical_block +
                   (slot ? KSUPER_SLOT_B : KSUPER_SLOT_A);
    if (read_at(s, off, KSUPER_READ_BYTES, &p) != 0) {
        s->read_errors++;
        found(s, name, 0, "read error");
        return;
    }
    enum ksuper_slot_state st = ksuper_decode(p, KSUPER_READ_BYTES, &sb, why, sizeof why);
    if (st != KSUPER_VALID && st != KSUPER_BLANK)
        found(s, name, 0, "%s", why);
}

static void check_gpt(struct scrub *s, int copy)
{
    const struct kdisk *d = s->disk;
    const char *name = copy ? "GPT backup" : "GPT primary";
    uint64_t lba = copy ? s->layout->gpt.hdr.alternate_lba : 1;
    struct gpt_header h;
    char why[128];
    const uint8_t *p;
    if (copy && s->layout->gpt.from_backup)
        lba = d->capacity - 1;
    if (read_at(s, lba * d->logical_block, d->logical_block, &p) != 0) {
        s->read_errors++;
        found(s, name, 0, "read error");
        return;
    }
    if (gpt_header_parse(p, d->logical_block, d->capacity, lba, &h, why, sizeof why) != 0) {
        found(s, name, 0, "header: %s", why);
        return;
    }
    /* The partition array, in pieces the I/O buffer holds. */
    uint64_t bytes = (uint64_t)h.entries * h.entry_size, done = 0;
    uint32_t crc = 0;
    bool first = true;
    while (done < bytes) {
        size_t n = bytes - done < CHUNK ? (size_t)(bytes - done) : CHUNK;
        if (read_at(s, h.array_lba * d->logical_block + done, n, &p) != 0) {
            s->read_errors++;
            found(s, name, 0, "partition array: read error");
            return;
        }
        crc = first ? crc32(p, n) : crc32_update(crc, p, n);
        first = false;
        done += n;
    }
    if (crc != h.array_crc)
        found(s, name, h.array_lba * d->logical_block,
              "partition array CRC32 mismatch (stored 0x%08x, computed 0x%08x)",
              (unsigned)h.array_crc, (unsigned)crc);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static bool is_leaf(const struct scrub *s, uint32_t pgno)
{
    size_t lo = 0, hi = s->leaf_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->leaves[mid] == pgno)
            return true;
        if (s->leaves[mid] < pgno)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* The freelist's leaf pages, from the trunk chain (pages hold no checksum
 * there: SQLite does not write a leaf's content). */
static void load_leaves(struct scrub *s, const struct kdisk_region *r, const uint8_t *hdr)
{
    uint32_t trunk = sc_be32(hdr + 32), count = sc_be32(hdr + 36);
    uint32_t pages = (uint32_t)(s->size / s->page_size);
    if (count == 0 || count > LEAVES_MAX)
        return;
    s->leaves = malloc((size_t)count * sizeof *s->leaves);
    if (s->leaves == NULL)
        return;
    for (uint32_t hops = 0; trunk != 0 && trunk <= pages && hops <= count; hops++) {
        const uint8_t *p;
        if (read_at(s, data_start(s, r) + (uint64_t)(trunk - 1) * s->page_size, s->page_size, &p))
            break;
        uint32_t n = sc_be32(p + 4), max = s->page_size / 4 - 2;
        for (uint32_t i = 0; i < n && i < max && s->leaf_count < count; i++)
            s->leaves[s->leaf_count++] = sc_be32(p + 8 + 4 * i);
        trunk = sc_be32(p);
    }
    qsort(s->leaves, s->leaf_count, sizeof *s->leaves, cmp_u32);
}

/* Start a page file: size, page size, freelist. false: nothing to check. */
static bool start_file(struct scrub *s, int file)
{
    const struct kdisk_region *r = region_of(s, file);
    struct rgn_hdr h;
    struct pagesum_db db;
    char why[96];
    const uint8_t *p;
    free(s->leaves);
    s->leaves = NULL;
    s->leaf_count = 0;
    if (region_header(s, file, false, &h) != 0 || h.owner != RGN_OWNER_MAIN || h.size == 0)
        return false;
    if (read_at(s, data_start(s, r), PAGESUM_DB_HEADER, &p) != 0) {
        s->read_errors++;
        found(s, files[file].name, 0, "read error");
        return false;
    }
    if (pagesum_db_parse(p, PAGESUM_DB_HEADER, &db, why, sizeof why) != 0) {
        found(s, files[file].name, 0, "page 1: %s", why);
        return false;
    }
    if (db.reserve != PAGESUM_BYTES) {
        found(s, files[file].name, 20, "no page checksums (reserve bytes %u, layout v3 needs 8)",
              (unsigned)db.reserve);
        return false;
    }
    s->page_size = db.page_size;
    s->size = h.size / db.page_size * db.page_size;
    uint8_t hdr[PAGESUM_DB_HEADER];
    memcpy(hdr, p, sizeof hdr);
    load_leaves(s, r, hdr);
    return true;
}

/* The next run of pages of the current file. */
static void check_pages(struct scrub *s, int file)
{
    const struct kdisk_region *r = region_of(s, file);
    uint64_t n = s->size - s->pos;
    if (n > CHUNK)
        n = CHUNK / s->page_size * s->page_size;
    const uint8_t *p;
    uint64_t base = data_start(s, r) + s->pos;
    if (read_at(s, base, (size_t)n, &p) != 0) {
        s->read_errors++;
        found(s, files[file].name, s->pos, "read error");
        s->pos += n;
        return;
    }
    for (uint64_t off = 0; off < n; off += s->page_size) {
        uint32_t pgno = (uint32_t)((s->pos + off) / s->page_size + 1);
        if (pgno == PENDING_BYTE / s->page_size + 1 || is_leaf(s, pgno) ||
            pagesum_page_ok(p + off, s->page_size))
            continue;
        /* Once more, alone, before it is damage. */
        const uint8_t *again;
        bool bad = read_at(s, base + off, s->page_size, &again) != 0 ||
                   !pagesum_page_ok(again, s->page_size);
        if (bad)
            found(s, files[file].name, s->pos + off, "page %u: checksum mismatch",
                  (unsigned)pgno);
        if (read_at(s, base, (size_t)n, &p) != 0)
            break; /* the buffer held the run: read it again for the rest */
    }
    s->pos += n;
}

/* Start the WAL: false when there is no log to check. */
static bool start_wal(struct scrub *s)
{
    const struct kdisk_region *r = region_of(s, 1);
    struct rgn_hdr h;
    struct pagesum_wal_hdr w;
    char why[96];
    const uint8_t *p;
    if (region_header(s, 1, false, &h) != 0 || h.owner != RGN_OWNER_WAL ||
        h.size < PAGESUM_WAL_HEADER)
        return false;
    if (read_at(s, data_start(s, r), PAGESUM_WAL_HEADER, &p) != 0) {
        s->read_errors++;
        found(s, "WAL", 0, "read error");
        return false;
    }
    int rc = pagesum_wal_parse(p, PAGESUM_WAL_HEADER, &w, why, sizeof why);
    if (rc == -2)
        found(s, "WAL", 0, "header: %s", why);
    if (rc != 0 || w.page_size + PAGESUM_WAL_FRAME_HEADER + 2 * s->disk->logical_block >
                       KDISK_IO_BYTES)
        return false;
    s->page_size = w.page_size;
    s->wal_s[0] = w.cksum[0];
    s->wal_s[1] = w.cksum[1];
    s->wal_salt[0] = w.salt[0];
    s->wal_salt[1] = w.salt[1];
    s->wal_big_endian = w.big_endian;
    s->wal_break = 0;
    s->size = h.size;
    s->pos = PAGESUM_WAL_HEADER;
    return true;
}

/* The log was restarted (new salts in its header) since start_wal: the
 * store wrote between two steps, and what follows is not one generation. */
static bool wal_restarted(struct scrub *s)
{
    const uint8_t *p;
    struct pagesum_wal_hdr w;
    char why[64];
    if (read_at(s, data_start(s, region_of(s, 1)), PAGESUM_WAL_HEADER, &p) != 0 ||
        pagesum_wal_parse(p, PAGESUM_WAL_HEADER, &w, why, sizeof why) != 0)
        return true;
    return w.salt[0] != s->wal_salt[0] || w.salt[1] != s->wal_salt[1];
}

/* The next WAL frame; false at the end of what is checked. */
static bool check_frame(struct scrub *s)
{
    const struct kdisk_region *r = region_of(s, 1);
    uint64_t frame = (uint64_t)s->page_size + PAGESUM_WAL_FRAME_HEADER;
    const uint8_t *p;
    if (s->pos + frame > s->size)
        return false;
    if (read_at(s, data_start(s, r) + s->pos, (size_t)frame, &p) != 0) {
        s->read_errors++;
        found(s, "WAL", s->pos, "read error");
        return false;
    }
    uint64_t at = s->pos;
    s->pos += frame;
    bool salts = sc_be32(p + 8) == s->wal_salt[0] && sc_be32(p + 12) == s->wal_salt[1];
    if (s->wal_break != 0) {
        if (!salts)
            return true; /* look on: a later frame of this generation decides */
        if (wal_restarted(s))
            return false; /* the store restarted the log since the pass began */
        found(s, "WAL", s->wal_break,
              "frame %llu breaks the checksum chain and the log goes on past it",
              (unsigned long long)((s->wal_break - PAGESUM_WAL_HEADER) / frame + 1));
        return false;
    }
    struct pagesum_wal_hdr w = {.big_endian = s->wal_big_endian, .page_size = s->page_size,
                                .salt = {s->wal_salt[0], s->wal_salt[1]}};
    uint32_t commit;
    if (!salts || pagesum_wal_frame(&w, p, s->wal_s, &commit) != 1) {
        s->wal_break = at; /* the log ends here, unless a later frame says otherwise */
        return true;
    }
    if (!pagesum_page_ok(p + PAGESUM_WAL_FRAME_HEADER, s->page_size))
        found(s, "WAL", at, "frame %llu (page %u): page checksum mismatch",
              (unsigned long long)((at - PAGESUM_WAL_HEADER) / frame + 1), (unsigned)sc_be32(p));
    return true;
}

static uint64_t tele_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The telemetry heads: damage reported, the newest valid head kept. false:
 * no journal to check. */
static bool tele_heads(struct scrub *s)
{
    const struct kdisk_region *r = klayout_region(s->layout, KDISK_REGION_TELEMETRY);
    const struct kdisk *d = s->disk;
    char why[128];
    bool have = false;
    if (r == NULL || tele_geom_init(&s->tele, s->layout->super.sb.volume_id, r->lba, r->blocks,
                                    d->logical_block, d->physical_block, why, sizeof why) != 0)
        return false;
    for (unsigned c = 0; c < 2; c++) {
        const uint8_t *p;
        struct tele_head h;
        uint64_t off = r->lba * d->logical_block + (c ? s->tele.head_b : 0);
        if (read_at(s, off, TELE_HEAD_BYTES, &p) != 0) {
            s->read_errors++;
            found(s, "telemetry", off - r->lba * d->logical_block, "head copy %u: read error", c);
            continue;
        }
        int v = tele_head_decode(p, TELE_HEAD_BYTES, &s->tele, &h, why, sizeof why);
        /* The journal's writer runs on its own thread: once more, in case
         * the read met its write of this copy. */
        if (v == TELE_CORRUPT && read_at(s, off, TELE_HEAD_BYTES, &p) == 0)
            v = tele_head_decode(p, TELE_HEAD_BYTES, &s->tele, &h, why, sizeof why);
        if (v == TELE_CORRUPT)
            found(s, "telemetry", c ? s->tele.head_b : 0, "head copy %u: %s", c, why);
        if (v == TELE_VALID && (!have || h.generation > s->tele_head.generation)) {
            s->tele_head = h;
            have = true;
        }
    }
    return have && s->tele_head.head_seq != 0;
}

/* Is there a record numbered want at offset at of seg? */
static bool tele_numbered(const uint8_t *seg, uint32_t at, uint64_t want)
{
    if (at + TELE_REC_HDR > TELE_SEG_BYTES)
        return false;
    uint32_t bytes = (uint32_t)seg[at + 4] | (uint32_t)seg[at + 5] << 8;
    return bytes >= TELE_REC_HDR && bytes <= TELE_REC_HDR + TELE_PAYLOAD_MAX &&
           tele_le64(seg + at + 8) == want;
}

/* One live segment: its header and its records. */
static void tele_segment(struct scrub *s, uint64_t seq)
{
    const struct kdisk *d = s->disk;
    uint64_t lba = tele_slot_lba(&s->tele, tele_slot(&s->tele, seq));
    uint64_t at = lba * d->logical_block - s->tele.lba * d->logical_block;
    const uint8_t *p;
    char why[128];
    struct tele_seg sg;
    if (read_at(s, lba * d->logical_block, TELE_SEG_BYTES, &p) != 0) {
        s->read_errors++;
        found(s, "telemetry", at, "segment %llu: read error", (unsigned long long)seq);
        return;
    }
    if (tele_seg_decode(p, TELE_SEG_BYTES, &s->tele, seq, &sg, why, sizeof why) != TELE_VALID &&
        (read_at(s, lba * d->logical_block, TELE_SEG_BYTES, &p) != 0 ||
         tele_seg_decode(p, TELE_SEG_BYTES, &s->tele, seq, &sg, why, sizeof why) != TELE_VALID)) {
        found(s, "telemetry", at, "segment %llu: %s", (unsigned long long)seq, why);
        return;
    }
    struct tele_iter it;
    struct tele_rec rec;
    tele_iter_start(&it);
    while (tele_rec_next(p, TELE_SEG_BYTES, &s->tele, &sg, &it, &rec) == 1)
        ;
    /* The walk's end: a record of this segment that fails, or the end? */
    uint64_t want = sg.first_record + it.index;
    bool head = seq == s->tele_head.head_seq;
    bool here = tele_numbered(p, it.offset, want);
    bool next = false;
    if (here) {
        uint32_t bytes = (uint32_t)p[it.offset + 4] | (uint32_t)p[it.offset + 5] << 8;
        uint32_t after = (it.offset + bytes + TELE_REC_ALIGN - 1) / TELE_REC_ALIGN * TELE_REC_ALIGN;
        next = tele_numbered(p, after, want + 1);
    }
    if ((here && !head) || next)
        found(s, "telemetry", at + it.offset, "segment %llu: record %llu fails its check",
              (unsigned long long)seq, (unsigned long long)want);
}

static uint64_t estimate_total(const struct scrub *s)
{
    uint64_t t = 2 * KSUPER_READ_BYTES + 2 * 17 * 1024 + 8 * 4096;
    for (unsigned f = 0; f < sizeof files / sizeof files[0]; f++) {
        struct rgn_hdr h;
        if (region_header((struct scrub *)s, (int)f, false, &h) == 0)
            t += h.size;
    }
    return t;
}

void scrub_init(struct scrub *s, const struct kdisk *d, const struct klayout *l,
                scrub_report_fn report, void *ctx)
{
    memset(s, 0, sizeof *s);
    s->disk = d;
    s->layout = l;
    s->report = report;
    s->ctx = ctx;
}

static void next_item(struct scrub *s, int items)
{
    s->pos = 0;
    s->size = 0;
    if (++s->item >= items) {
        s->item = 0;
        s->phase++;
    }
}

bool scrub_step(struct scrub *s, uint64_t budget)
{
    uint64_t start = s->pass_bytes;
    if (s->phase == SCRUB_PH_SUPER && s->item == 0 && s->pos == 0) {
        s->pass_bytes = 0;
        start = 0;
        s->pass_total = estimate_total(s);
        s->pass_bytes = 0;
    }
    do {
        switch (s->phase) {
        case SCRUB_PH_SUPER:
            check_super(s, s->item);
            next_item(s, 2);
            break;
        case SCRUB_PH_GPT:
            check_gpt(s, s->item);
            next_item(s, 2);
            break;
        case SCRUB_PH_HEADERS: {
            struct rgn_hdr h;
            (void)region_header(s, s->item, true, &h);
            next_item(s, 4);
            break;
        }
        case SCRUB_PH_FILES: {
            int file = page_files[s->item];
            if (s->size == 0 && !start_file(s, file)) {
                next_item(s, 3);
                break;
            }
            check_pages(s, file);
            if (s->pos >= s->size)
                next_item(s, 3);
            break;
        }
        case SCRUB_PH_WAL:
            if (s->size == 0 && !start_wal(s)) {
                next_item(s, 1);
                break;
            }
            if (!check_frame(s))
                next_item(s, 1);
            break;
        case SCRUB_PH_TELE:
            if (s->tele_seq == 0) {
                if (!tele_heads(s)) {
                    next_item(s, 1);
                    break;
                }
                s->tele_seq = s->tele_head.tail_seq;
                /* never more than the ring holds, whatever the head says */
                if (s->tele_head.head_seq - s->tele_seq >= s->tele.nseg)
                    s->tele_seq = s->tele_head.head_seq - s->tele.nseg + 1;
            }
            if (s->tele_seq == 0 || s->tele_seq > s->tele_head.head_seq) {
                s->tele_seq = 0;
                next_item(s, 1);
                break;
            }
            tele_segment(s, s->tele_seq++);
            break;
        default:
            free(s->leaves);
            s->leaves = NULL;
            s->leaf_count = 0;
            s->phase = SCRUB_PH_SUPER;
            s->item = 0;
            s->pos = 0;
            s->size = 0;
            s->passes++;
            return true;
        }
    } while (s->pass_bytes - start < budget);
    return false;
}

unsigned scrub_progress(const struct scrub *s)
{
    if (s->phase == SCRUB_PH_SUPER && s->item == 0 && s->passes > 0)
        return 100; /* a pass just ended; the next starts at the next step */
    if (s->pass_total == 0)
        return 0;
    uint64_t pct = s->pass_bytes * 100 / s->pass_total;
    return pct > 99 && s->phase != SCRUB_PH_END ? 99 : (unsigned)pct;
}

void scrub_free(struct scrub *s)
{
    free(s->leaves);
    s->leaves = NULL;
}
