/*
 * test_ktele.c - the telemetry journal (disk/tele.c): the pure parsers
 * (heads, segments, records; truncated, corrupt, stale and garbage input),
 * the JSON rendering, and the protocol on a memory disk that models a
 * volatile write cache: a power cut keeps what was flushed plus none, all,
 * or all but a torn last one of the writes since. Checked: every record
 * synced before a cut is read back after it, in order, with numbers that
 * only grow; wrap-around expires and discards the slot ahead of the head;
 * zeroed (discarded) and garbage segments are never taken for records;
 * boot reads at most four times whatever the region's size.
 */
#include "test.h"

#include "platform/kernel/disk/crc32.h"
#include "platform/kernel/disk/tele.h"

#include <stdlib.h>

enum { KIB = 1024, MIB = 1024 * 1024, LOGICAL = 512 };

static const uint8_t vol[16] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

/* ---- a disk with a volatile write cache ---- */

struct pend {
    uint64_t off;
    uint32_t len;
};

struct cdisk {
    struct kdisk disk;
    uint8_t *now;         /* what reads see */
    uint8_t *stable;      /* as of the last flush */
    size_t bytes;
    struct pend pend[64]; /* writes since the last flush, in order */
    unsigned npend;
    unsigned writes, flushes, reads, discards;
    unsigned cut_at;      /* the write with this number cuts the power (0: never) */
    int dead;
    uint8_t io[KDISK_IO_BYTES] __attribute__((aligned(512)));
};

static int c_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    struct cdisk *c = ctx;
    c->reads++;
    memcpy(buf, c->now + lba * LOGICAL, (size_t)count * LOGICAL);
    return 0;
}

static int c_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    struct cdisk *c = ctx;
    if (c->dead)
        return -1;
    c->writes++;
    memcpy(c->now + lba * LOGICAL, buf, (size_t)count * LOGICAL);
    if (c->npend == 64)
        abort(); /* the journal flushes after every write or two */
    c->pend[c->npend++] = (struct pend){lba * LOGICAL, count * LOGICAL};
    if (c->cut_at && c->writes == c->cut_at) {
        c->dead = 1;
        return -1;
    }
    return 0;
}

static int c_flush(void *ctx)
{
    struct cdisk *c = ctx;
    if (c->dead)
        return -1;
    c->flushes++;
    for (unsigned i = 0; i < c->npend; i++)
        memcpy(c->stable + c->pend[i].off, c->now + c->pend[i].off, c->pend[i].len);
    c->npend = 0;
    return 0;
}

static int c_discard(void *ctx, uint64_t lba, uint32_t count)
{
    struct cdisk *c = ctx;
    if (c->dead)
        return -1;
    c->discards++;
    /* A discarded block reads as anything: here 0xA5, then flushed. */
    memset(c->now + lba * LOGICAL, 0xA5, (size_t)count * LOGICAL);
    memset(c->stable + lba * LOGICAL, 0xA5, (size_t)count * LOGICAL);
    return 0;
}

static void c_init(struct cdisk *c, size_t bytes)
{
    memset(c, 0, sizeof *c);
    c->now = calloc(1, bytes);
    c->stable = calloc(1, bytes);
    c->bytes = bytes;
    c->disk = (struct kdisk){.read = c_read, .write = c_write, .flush = c_flush, .ctx = c,
                             .logical_block = LOGICAL, .physical_block = 4096,
                             .capacity = bytes / LOGICAL, .io = c->io};
}

static void c_free(struct cdisk *c)
{
    free(c->now);
    free(c->stable);
}

/* Power cut: keep the stable image plus, by mode, no pending write (0),
 * all of them (1), or all with the last torn after its first sector (2). */
static void c_cut(struct cdisk *c, int mode)
{
    uint8_t *img = malloc(c->bytes);
    memcpy(img, c->stable, c->bytes);
    for (unsigned i = 0; mode && i < c->npend; i++) {
        uint32_t len = c->pend[i].len;
        if (mode == 2 && i + 1 == c->npend)
            len = LOGICAL;
        memcpy(img + c->pend[i].off, c->now + c->pend[i].off, len);
    }
    memcpy(c->now, img, c->bytes);
    memcpy(c->stable, img, c->bytes);
    free(img);
    c->npend = 0;
    c->dead = 0;
    c->cut_at = 0;
}

/* A region of `bytes` at 1 MiB. */
static void geom(struct tele_geom *g, uint64_t bytes)
{
    char why[KDISK_MSG_MAX];
    int rc = tele_geom_init(g, vol, MIB / LOGICAL, bytes / LOGICAL, LOGICAL, 4096, why, sizeof why);
    (void)rc;
}

static uint8_t segbuf[TELE_SEG_BYTES];

static int open_t(struct tele *t, struct cdisk *c, const struct tele_geom *g, struct kdisk_report *rep)
{
    kdisk_report_clear(rep);
    return tele_open(t, &c->disk, g, segbuf, c_discard, c, rep);
}

/* A stats-like payload carrying its record's intended number. */
static int append_n(struct tele *t, uint64_t n, uint32_t len, struct kdisk_report *rep)
{
    uint8_t p[TELE_PAYLOAD_MAX];
    memset(p, 0, sizeof p);
    kdisk_put64(p, n);
    return tele_append(t, TELE_K_STATS, 1, (int64_t)n * 1000, p, len, rep);
}

/* Everything a scan returns. */
struct seen {
    uint64_t numbers[20000];
    uint64_t tags[20000];
    unsigned n, bad;
    int order_ok;
};

static uint8_t scanbuf[TELE_SEG_BYTES];

static void on_rec(void *ctx, const struct tele_seg *s, const struct tele_rec *r)
{
    (void)s;
    struct seen *v = ctx;
    if (v->n && r->number <= v->numbers[v->n - 1])
        v->order_ok = 0;
    if (v->n < 20000) {
        v->numbers[v->n] = r->number;
        v->tags[v->n] = r->payload_len >= 8 ? kdisk_le64(r->payload) : 0;
        v->n++;
    }
}

static void on_bad(void *ctx, uint64_t seq, const char *why)
{
    (void)seq;
    (void)why;
    ((struct seen *)ctx)->bad++;
}

static struct seen seen;

static int scan(struct cdisk *c, const struct tele_geom *g, const struct tele_head *h)
{
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    memset(&seen, 0, sizeof seen);
    seen.order_ok = 1;
    return tele_scan(&c->disk, g, h, scanbuf, on_rec, on_bad, &seen, &rep);
}

/* ---- parsers ---- */

TEST(ktele_geometry_counts_slots_and_refuses_small_regions)
{
    struct tele_geom g;
    char why[KDISK_MSG_MAX];
    CHECK_EQ(tele_geom_init(&g, vol, 2048, 2048, 512, 4096, why, sizeof why), 0);
    CHECK_EQ(g.head_b, 32 * KIB);
    CHECK_EQ(g.seg0, 64 * KIB);
    CHECK_EQ(g.nseg, 15);
    CHECK_EQ(tele_geom_init(&g, vol, 2048, 256 * 2048, 512, 4096, why, sizeof why), 0);
    CHECK_EQ(g.nseg, 4095);
    CHECK_EQ(tele_geom_init(&g, vol, 128, 2048, 512, 65536, why, sizeof why), 0);
    CHECK_EQ(g.head_b, 64 * KIB);
    CHECK_EQ(g.nseg, 14);
    CHECK_EQ(tele_geom_init(&g, vol, 2048, 512, 512, 4096, why, sizeof why), -1);
    CHECK(strstr(why, "at least 4"));
    CHECK_EQ(tele_geom_init(&g, vol, 2049, 2048, 512, 4096, why, sizeof why), -1);
    CHECK(strstr(why, "physical blocks"));
}

TEST(ktele_head_decode_tells_blank_corrupt_newer_and_foreign_region)
{
    struct tele_geom g, other;
    geom(&g, MIB);
    geom(&other, 2 * MIB);
    struct tele_head h = {.generation = 3, .head_seq = 20, .tail_seq = 7, .head_first = 500}, back;
    uint8_t buf[TELE_HEAD_BYTES];
    char why[KDISK_MSG_MAX];
    tele_head_encode(&h, &g, buf);
    CHECK_EQ(tele_head_decode(buf, sizeof buf, &g, &back, why, sizeof why), TELE_VALID);
    CHECK_EQ(back.generation, 3);
    CHECK_EQ(back.head_seq, 20);
    CHECK_EQ(back.tail_seq, 7);
    CHECK_EQ(back.head_first, 500);
    CHECK_EQ(tele_head_decode(buf, sizeof buf - 1, &g, &back, why, sizeof why), TELE_BLANK);
    CHECK_EQ(tele_head_decode(buf, sizeof buf, &other, &back, why, sizeof why), TELE_CORRUPT);
    /* another volume: the CRC seed differs */
    struct tele_geom g2 = g;
    g2.volume[0] ^= 1;
    CHECK_EQ(tele_head_decode(buf, sizeof buf, &g2, &back, why, sizeof why), TELE_CORRUPT);
    CHECK(strstr(why, "CRC32"));
    for (unsigned i = 0; i < sizeof buf; i++) {
        uint8_t x[TELE_HEAD_BYTES];
        memcpy(x, buf, sizeof x);
        x[i] ^= 0x40;
        int v = tele_head_decode(x, sizeof x, &g, &back, why, sizeof why);
        CHECK(v == TELE_BLANK || v == TELE_CORRUPT);
    }
    memset(buf, 0, sizeof buf);
    CHECK_EQ(tele_head_decode(buf, sizeof buf, &g, &back, why, sizeof why), TELE_BLANK);
    /* too many live segments for the ring (15 slots, one spare) */
    h = (struct tele_head){.generation = 1, .head_seq = 15, .tail_seq = 1, .head_first = 1};
    tele_head_encode(&h, &g, buf);
    CHECK_EQ(tele_head_decode(buf, sizeof buf, &g, &back, why, sizeof why), TELE_CORRUPT);
    h.tail_seq = 2;
    tele_head_encode(&h, &g, buf);
    CHECK_EQ(tele_head_decode(buf, sizeof buf, &g, &back, why, sizeof why), TELE_VALID);
    /* a newer version, resealed */
    kdisk_put32(buf + 8, 2);
    kdisk_put32(buf + 12, 0);
    uint32_t crc = crc32_update(crc32(vol, 16), buf, TELE_HEAD_BYTES);
    kdisk_put32(buf + 12, crc);
    CHECK_EQ(tele_head_decode(buf, sizeof buf, &g, &back, why, sizeof why), TELE_NEWER);
    CHECK(strstr(why, "newer"));
}

TEST(ktele_records_walk_stops_at_torn_stale_and_zeroed_records)
{
    struct tele_geom g;
    geom(&g, MIB);
    static uint8_t seg[TELE_SEG_BYTES];
    memset(seg, 0, sizeof seg);
    struct tele_seg s = {.seq = 17, .first_record = 100, .created_ms = 5, .boot = 2}, back;
    char why[KDISK_MSG_MAX];
    tele_seg_encode(&s, &g, seg);
    CHECK_EQ(tele_seg_decode(seg, sizeof seg, &g, 17, &back, why, sizeof why), TELE_VALID);
    CHECK_EQ(back.boot, 2);
    CHECK_EQ(tele_seg_decode(seg, sizeof seg, &g, 17 + g.nseg, &back, why, sizeof why), TELE_CORRUPT);
    CHECK(strstr(why, "earlier pass"));
    struct tele_iter it;
    tele_iter_start(&it);
    for (unsigned i = 0; i < 5; i++)
        CHECK_EQ(tele_rec_append(seg, &g, &s, &it, TELE_K_STORE, 1, 7, "abcdefghijklmnop", 16), 0);
    struct tele_rec r;
    struct tele_iter w;
    unsigned n = 0;
    tele_iter_start(&w);
    while (tele_rec_next(seg, sizeof seg, &g, &s, &w, &r))
        CHECK_EQ(r.number, 100 + n++);
    CHECK_EQ(n, 5);
    /* the same bytes in the segment of another pass: no record checks */
    struct tele_seg later = s;
    later.seq += g.nseg;
    tele_iter_start(&w);
    CHECK_EQ(tele_rec_next(seg, sizeof seg, &g, &later, &w, &r), 0);
    /* a torn third record: the walk stops after two */
    seg[TELE_SEG_HDR + 2 * 40 + 30] ^= 1;
    tele_iter_start(&w);
    n = 0;
    while (tele_rec_next(seg, sizeof seg, &g, &s, &w, &r))
        n++;
    CHECK_EQ(n, 2);
    /* truncated buffers never read past n */
    for (size_t len = 0; len < TELE_SEG_HDR + 3 * 40; len++) {
        tele_iter_start(&w);
        unsigned k = 0;
        while (tele_rec_next(seg, len, &g, &s, &w, &r))
            k++;
        CHECK(k <= 2);
    }
    /* payload limits */
    CHECK_EQ(tele_rec_append(seg, &g, &s, &it, 1, 1, 0, seg, TELE_PAYLOAD_MAX + 1), -1);
}

TEST(ktele_garbage_segments_never_yield_records)
{
    struct tele_geom g;
    geom(&g, MIB);
    static uint8_t seg[TELE_SEG_BYTES];
    srand(7);
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof seg; i++)
            seg[i] = (uint8_t)rand();
        if (round % 2)
            memcpy(seg, "tern-tsg", 8);
        struct tele_seg s;
        char why[KDISK_MSG_MAX];
        int v = tele_seg_decode(seg, sizeof seg, &g, 1, &s, why, sizeof why);
        CHECK(v == TELE_BLANK || v == TELE_CORRUPT);
        /* even given a header, random bytes hold no record */
        struct tele_seg fake = {.seq = 1, .first_record = 1};
        struct tele_iter it;
        struct tele_rec r;
        tele_iter_start(&it);
        CHECK_EQ(tele_rec_next(seg, sizeof seg, &g, &fake, &it, &r), 0);
    }
}

TEST(ktele_json_is_bounded_and_escapes_disk_text)
{
    uint8_t p[96];
    memset(p, 0, sizeof p);
    kdisk_put64(p, 4);
    kdisk_put32(p + 8, 1);
    memcpy(p + 24, "0.1\"x\\\n", 7);
    memcpy(p + 56, "virtio-blk 00:04.0", 18);
    struct tele_rec r = {.kind = TELE_K_BOOT, .version = 1, .number = 9, .time_ms = 1234,
                         .payload = p, .payload_len = 96};
    char buf[512];
    size_t need = tele_rec_json(&r, buf, sizeof buf);
    CHECK(need < sizeof buf);
    CHECK(strstr(buf, "\"kind\":\"boot\""));
    CHECK(strstr(buf, "\"boot\":4"));
    CHECK(strstr(buf, "\"release\":\"0.1\\\"x\\\\?\""));
    CHECK(strstr(buf, "\"disk\":\"virtio-blk 00:04.0\""));
    /* short payload: not decoded */
    r.payload_len = 10;
    tele_rec_json(&r, buf, sizeof buf);
    CHECK(strstr(buf, "\"payload_bytes\":10"));
    /* too small a buffer: nothing rather than broken JSON */
    CHECK(tele_rec_json(&r, buf, 20) >= 20);
    CHECK_EQ(buf[0], 0);
    r.kind = 200;
    r.payload_len = 0;
    tele_rec_json(&r, buf, sizeof buf);
    CHECK(strstr(buf, "\"kind\":\"unknown\"") && strstr(buf, "\"kind_id\":200"));
}

/* ---- the protocol ---- */

TEST(ktele_round_trip_and_reopen_reads_four_blocks_at_most)
{
    static struct cdisk c;
    c_init(&c, 300 * MIB);
    struct tele_geom g;
    geom(&g, 256 * MIB);
    struct tele t;
    struct kdisk_report rep;
    CHECK_EQ(open_t(&t, &c, &g, &rep), KDISK_OK);
    CHECK_EQ(t.head.head_seq, 0);
    for (uint64_t i = 1; i <= 3000; i++) {
        CHECK_EQ(append_n(&t, i, 80, &rep), KDISK_OK);
        if (i % 7 == 0)
            CHECK_EQ(tele_sync(&t, &rep), KDISK_OK);
    }
    CHECK_EQ(tele_sync(&t, &rep), KDISK_OK);
    CHECK(t.head.head_seq >= 2);
    unsigned before = c.reads;
    struct tele t2;
    CHECK_EQ(open_t(&t2, &c, &g, &rep), KDISK_OK);
    CHECK(c.reads - before <= 4);
    CHECK_EQ(t2.reads, 4);
    CHECK_EQ(t2.head.head_seq, t.head.head_seq);
    CHECK_EQ(t2.next_record, 3001);
    CHECK_EQ(scan(&c, &g, &t2.head), KDISK_OK);
    CHECK_EQ(seen.n, 3000);
    CHECK(seen.order_ok);
    for (unsigned i = 0; i < 3000; i++)
        CHECK_EQ(seen.tags[i], i + 1);
    c_free(&c);
}

TEST(ktele_wrap_expires_oldest_and_discards_the_slot_ahead)
{
    static struct cdisk c;
    c_init(&c, 3 * MIB);
    struct tele_geom g;
    geom(&g, MIB); /* 15 slots */
    struct tele t;
    struct kdisk_report rep;
    CHECK_EQ(open_t(&t, &c, &g, &rep), KDISK_OK);
    /* 1000-byte payloads: 63 records a segment; five passes of the ring */
    const uint64_t total = 63 * 15 * 5;
    for (uint64_t i = 1; i <= total; i++) {
        CHECK_EQ(append_n(&t, i, TELE_PAYLOAD_MAX, &rep), KDISK_OK);
        if (i % 10 == 0)
            CHECK_EQ(tele_sync(&t, &rep), KDISK_OK);
    }
    CHECK_EQ(tele_sync(&t, &rep), KDISK_OK);
    CHECK_EQ(t.head.head_seq - t.head.tail_seq + 1, g.nseg - TELE_SPARE);
    CHECK(c.discards >= t.head.head_seq - 1);
    /* the slot ahead of the head holds discarded bytes, not a segment */
    const uint8_t *ahead = c.now + tele_slot_lba(&g, tele_slot(&g, t.head.head_seq + 1)) * LOGICAL;
    CHECK_EQ(ahead[0], 0xA5);
    CHECK_EQ(ahead[TELE_SEG_BYTES - 1], 0xA5);
    CHECK_EQ(scan(&c, &g, &t.head), KDISK_OK);
    CHECK_EQ(seen.bad, 0);
    CHECK(seen.order_ok);
    CHECK(seen.n >= 63 * 13);
    CHECK_EQ(seen.tags[seen.n - 1], total);
    for (unsigned i = 1; i < seen.n; i++)
        CHECK_EQ(seen.tags[i], seen.tags[i - 1] + 1);
    struct tele t2;
    CHECK_EQ(open_t(&t2, &c, &g, &rep), KDISK_OK);
    CHECK_EQ(t2.reads, 4);
    CHECK_EQ(t2.next_record, total + 1);
    c_free(&c);
}

/* The script the power-cut test replays: appends with syncs, crossing
 * segment boundaries and wrapping a 15-slot ring. Returns the last record
 * a completed sync made durable, or stops at the first failure. */
static uint64_t script(struct tele *t, uint64_t first, uint64_t count, uint64_t *durable)
{
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    for (uint64_t i = first; i < first + count; i++) {
        if (append_n(t, i, TELE_PAYLOAD_MAX, &rep))
            return i;
        if (i % 9 == 0) {
            if (tele_sync(t, &rep))
                return i;
            *durable = i;
        }
    }
    if (!tele_sync(t, &rep))
        *durable = first + count - 1;
    return first + count;
}

TEST(ktele_power_cut_at_every_write_keeps_synced_records_in_order)
{
    static struct cdisk c;
    struct tele_geom g;
    geom(&g, MIB);
    const uint64_t count = 63 * 16; /* 63 records a segment: once round the ring */
    /* count the writes of an uninterrupted run */
    c_init(&c, 3 * MIB);
    struct tele t;
    struct kdisk_report rep;
    CHECK_EQ(open_t(&t, &c, &g, &rep), KDISK_OK);
    uint64_t durable = 0;
    script(&t, 1, count, &durable);
    const unsigned total_writes = c.writes;
    c_free(&c);
    CHECK(total_writes > 100);
    unsigned cases = 0;
    for (unsigned cut = 1; cut <= total_writes; cut++) {
        for (int mode = 0; mode < 3; mode++) {
            c_init(&c, 2 * MIB);
            CHECK_EQ(open_t(&t, &c, &g, &rep), KDISK_OK);
            c.cut_at = cut;
            durable = 0;
            script(&t, 1, count, &durable);
            c_cut(&c, mode);
            struct tele t2;
            CHECK_EQ(open_t(&t2, &c, &g, &rep), KDISK_OK);
            CHECK(t2.reads <= 4);
            CHECK_EQ(scan(&c, &g, &t2.head), KDISK_OK);
            CHECK(seen.order_ok);
            CHECK_EQ(seen.bad, 0);
            /* every durable record that is still live is there, contiguous */
            CHECK(seen.n == 0 || seen.tags[seen.n - 1] >= durable);
            for (unsigned i = 1; i < seen.n; i++)
                CHECK_EQ(seen.tags[i], seen.tags[i - 1] + 1);
            CHECK(durable == 0 || seen.n > 0);
            /* the journal goes on after the cut: numbers only grow */
            const uint64_t last = seen.n ? seen.numbers[seen.n - 1] : 0;
            CHECK(t2.next_record > last);
            uint64_t d2 = 0;
            t2.boot = 2;
            script(&t2, 1000000, 70, &d2);
            CHECK_EQ(d2, 1000000 + 70 - 1);
            struct tele t3;
            CHECK_EQ(open_t(&t3, &c, &g, &rep), KDISK_OK);
            CHECK_EQ(scan(&c, &g, &t3.head), KDISK_OK);
            CHECK(seen.order_ok);
            CHECK_EQ(seen.tags[seen.n - 1], 1000000 + 70 - 1);
            c_free(&c);
            cases++;
        }
    }
    CHECK_EQ(cases, 3 * total_writes);
}

TEST(ktele_zeroed_or_damaged_segments_and_heads)
{
    static struct cdisk c;
    c_init(&c, 3 * MIB);
    struct tele_geom g;
    geom(&g, MIB);
    struct tele t;
    struct kdisk_report rep;
    CHECK_EQ(open_t(&t, &c, &g, &rep), KDISK_OK);
    for (uint64_t i = 1; i <= 500; i++)
        CHECK_EQ(append_n(&t, i, 600, &rep), KDISK_OK);
    CHECK_EQ(tele_sync(&t, &rep), KDISK_OK);
    const uint64_t head = t.head.head_seq;
    CHECK(head >= 5);
    /* a live middle segment zeroed (as a discard may read): reported, skipped */
    uint8_t *mid = c.now + tele_slot_lba(&g, tele_slot(&g, head - 2)) * LOGICAL;
    memset(mid, 0, TELE_SEG_BYTES);
    CHECK_EQ(scan(&c, &g, &t.head), KDISK_OK);
    CHECK_EQ(seen.bad, 1);
    CHECK(seen.order_ok);
    /* the head segment zeroed: a note, its records lost, numbering goes on above */
    uint8_t *hs = c.now + tele_slot_lba(&g, tele_slot(&g, head)) * LOGICAL;
    memset(hs, 0, TELE_SEG_BYTES);
    struct tele t2;
    CHECK_EQ(open_t(&t2, &c, &g, &rep), KDISK_OK);
    CHECK_EQ(rep.note_count, 1);
    CHECK(strstr(rep.notes[0], "is unusable"));
    CHECK(t2.next_record > 500);
    CHECK_EQ(append_n(&t2, 9999, 8, &rep), KDISK_OK);
    CHECK_EQ(tele_sync(&t2, &rep), KDISK_OK);
    CHECK_EQ(t2.head.head_seq, head + 1);
    /* one head copy damaged: the other is used, with a note */
    uint8_t *copy = c.now + (t2.head_copy ? g.head_b : 0) + MIB;
    copy[30] ^= 1;
    struct tele t3;
    CHECK_EQ(open_t(&t3, &c, &g, &rep), KDISK_OK);
    CHECK_EQ(rep.note_count, 2); /* that copy, and the zeroed segment it names */
    CHECK(strstr(rep.notes[0], "telemetry head"));
    CHECK(strstr(rep.notes[1], "is unusable"));
    CHECK_EQ(t3.head.head_seq, head); /* the older copy: the probe finds head + 1 */
    CHECK_EQ(t3.cur.seq, head + 1);
    /* both damaged: refused without a write */
    uint8_t *other = c.now + (t2.head_copy ? 0 : g.head_b) + MIB;
    other[30] ^= 1;
    unsigned w = c.writes;
    CHECK_EQ(open_t(&t3, &c, &g, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "no usable telemetry head"));
    CHECK_EQ(c.writes, w);
    c_free(&c);
}
