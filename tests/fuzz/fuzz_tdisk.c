/*
 * fuzz_tdisk.c - libFuzzer target for tern-disk's own parsers (SPEC H3,
 * issue 14 F2) and the telemetry journal's reader (disk/tele.c), which
 * fuzz_disk does not cover. The first byte picks:
 *   0  tdisk_detect: the input as an image's head, slot B and tail;
 *   1  tdisk_rgn_examine and tdisk_partition_base: two region header
 *      copies for a fuzzed region and block sizes;
 *   2  tele_head_decode and tele_seg_decode of raw bytes for a fuzzed
 *      geometry, then tele_rec_next over whatever the segment holds;
 *   3  a segment built by the writer (tele_seg_encode, tele_rec_append
 *      with fuzzed records), then bytes changed at fuzzed places, read
 *      back with tele_rec_next and shown with tele_rec_json.
 * Properties:
 *   - nothing is read outside the input or the segment (ASan);
 *   - detection gives a known kind and a logical block of 512 or 4096, and
 *     the same answer twice;
 *   - an examined region's state fits its capacity, comes from a copy that
 *     parsed (or is the empty region), and a partition base found from a
 *     copy plus the region's place gives the LBA the copy names;
 *   - records come back in order, 8-aligned, inside the segment, numbered
 *     from the segment's first record on; with no byte changed, exactly
 *     the records appended, with their payloads;
 *   - tele_rec_json always NUL-terminates and says how long it needed.
 */
#include "platform/kernel/disk/tele.h"
#include "../../tools/disk/tern-disk.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

static uint64_t take(const uint8_t **p, size_t *n, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes && *n; i++, (*p)++, (*n)--)
        v |= (uint64_t)**p << (8 * i);
    return v;
}

static void detect(const uint8_t *d, size_t n)
{
    size_t head = n < TDISK_HEAD_BYTES ? n : TDISK_HEAD_BYTES;
    size_t rest = n - head, slot_b = rest < 64 ? rest : 64;
    const uint8_t *tail = d + head + slot_b;
    size_t tail_len = rest - slot_b;
    uint32_t lb1 = 0, lb2 = 0;
    enum tdisk_kind k1 = tdisk_detect(d, head, d + head, slot_b, tail, tail_len, &lb1);
    enum tdisk_kind k2 = tdisk_detect(d, head, d + head, slot_b, tail, tail_len, &lb2);
    FUZZ_ASSERT(k1 == k2 && lb1 == lb2);
    FUZZ_ASSERT(k1 <= TDISK_UNKNOWN && (lb1 == 512 || lb1 == 4096));
    FUZZ_ASSERT(tdisk_kind_text(k1)[0]);
}

static void region(const uint8_t *d, size_t n)
{
    static const uint32_t sizes[] = {512, 1024, 2048, 4096};
    uint8_t sel = (uint8_t)take(&d, &n, 1);
    uint32_t lb = sizes[sel & 3], pb = lb << ((sel >> 2) & 3);
    uint32_t kind = (uint32_t)take(&d, &n, 1) % 7;
    uint64_t lba = take(&d, &n, 4), blocks = take(&d, &n, 4);
    uint8_t *c[2];
    for (int i = 0; i < 2; i++) {
        c[i] = calloc(1, pb);
        size_t m = n < RGN_HDR_BYTES ? n : RGN_HDR_BYTES;
        memcpy(c[i], d, m);
        d += m, n -= m;
    }
    struct tdisk_rgn_view v;
    if (tdisk_rgn_examine(c[0], c[1], lb, pb, kind, lba, blocks, &v) == 0) {
        FUZZ_ASSERT(tdisk_rgn_role(kind) != 0);
        if (v.pick_rc == RGN_OK) {
            FUZZ_ASSERT(v.size <= v.capacity && v.slot < 2);
            FUZZ_ASSERT(v.copy_rc[v.slot] == RGN_OK || v.seq == 0);
            if (v.copy_rc[v.slot] == RGN_OK)
                FUZZ_ASSERT(v.seq == v.copy_seq[v.slot]);
        }
    } else {
        FUZZ_ASSERT(tdisk_rgn_role(kind) == 0 || blocks / (pb / lb) < 3);
    }
    uint64_t base;
    if (tdisk_partition_base(c[0], pb, kind, lba, &base) == 0) {
        struct rgn_hdr h;
        int rc = rgn_hdr_parse(c[0], pb, tdisk_rgn_role(kind), UINT64_MAX, 0, 0, &h);
        FUZZ_ASSERT((rc == RGN_OK || rc == RGN_FOREIGN) && h.lba == base + lba);
    }
    free(c[0]);
    free(c[1]);
}

/* A geometry from the input: 16 volume bytes, a region LBA on 4096 bytes. */
static int geometry(const uint8_t **d, size_t *n, struct tele_geom *g)
{
    uint8_t vol[16] = {0};
    for (int i = 0; i < 16; i++)
        vol[i] = (uint8_t)take(d, n, 1);
    uint64_t lba = take(d, n, 4) * 8;
    char why[KDISK_MSG_MAX];
    return tele_geom_init(g, vol, lba, 16 * TELE_SEG_BYTES / 512, 512, 512, why, sizeof why);
}

/* Walk seg's records; check order and place; show each. Returns how many. */
static uint32_t walk(const uint8_t *seg, const struct tele_geom *g, const struct tele_seg *s)
{
    struct tele_iter it;
    struct tele_rec r;
    uint32_t last_end = TELE_SEG_HDR, count = 0;
    tele_iter_start(&it);
    while (tele_rec_next(seg, TELE_SEG_BYTES, g, s, &it, &r)) {
        FUZZ_ASSERT(r.offset >= last_end && r.offset % TELE_REC_ALIGN == 0);
        FUZZ_ASSERT(r.offset + r.bytes <= TELE_SEG_BYTES && r.payload == seg + r.offset + TELE_REC_HDR);
        FUZZ_ASSERT(r.payload_len + TELE_REC_HDR == r.bytes && r.payload_len <= TELE_PAYLOAD_MAX);
        FUZZ_ASSERT(r.number == s->first_record + count);
        last_end = r.offset + r.bytes;
        char small[24], big[8192];
        size_t need = tele_rec_json(&r, small, sizeof small);
        FUZZ_ASSERT(strlen(small) < sizeof small);
        size_t got = tele_rec_json(&r, big, sizeof big);
        FUZZ_ASSERT(got == need && (got >= sizeof big || strlen(big) == got));
        FUZZ_ASSERT(big[0] == '{');
        count++;
    }
    return count;
}

static void tele_raw(const uint8_t *d, size_t n)
{
    struct tele_geom g;
    if (geometry(&d, &n, &g))
        return;
    uint64_t expect = take(&d, &n, 2) + 1;
    struct tele_head h;
    char why[KDISK_MSG_MAX];
    int v = tele_head_decode(d, n, &g, &h, why, sizeof why);
    FUZZ_ASSERT(v >= TELE_VALID && v <= TELE_NEWER && strlen(why) < sizeof why);
    uint8_t *seg = calloc(1, TELE_SEG_BYTES);
    memcpy(seg, d, n < TELE_SEG_BYTES ? n : TELE_SEG_BYTES);
    struct tele_seg s;
    if (tele_seg_decode(seg, TELE_SEG_BYTES, &g, expect, &s, why, sizeof why) == TELE_VALID) {
        FUZZ_ASSERT(s.seq == expect && s.first_record != 0);
        walk(seg, &g, &s);
    }
    free(seg);
}

static void tele_built(const uint8_t *d, size_t n)
{
    struct tele_geom g;
    if (geometry(&d, &n, &g))
        return;
    struct tele_seg s = {.seq = take(&d, &n, 2) + 1, .first_record = take(&d, &n, 3) + 1,
                         .created_ms = (int64_t)take(&d, &n, 4), .boot = take(&d, &n, 1)};
    uint8_t *seg = calloc(1, TELE_SEG_BYTES);
    tele_seg_encode(&s, &g, seg);
    struct tele_seg back;
    char why[KDISK_MSG_MAX];
    FUZZ_ASSERT(tele_seg_decode(seg, TELE_SEG_BYTES, &g, s.seq, &back, why, sizeof why) == TELE_VALID);
    struct tele_iter it;
    tele_iter_start(&it);
    uint32_t appended = 0, records = (uint32_t)take(&d, &n, 1) % 40;
    for (uint32_t i = 0; i < records && n >= 3; i++) {
        uint8_t kind = (uint8_t)take(&d, &n, 1), version = (uint8_t)take(&d, &n, 1);
        uint32_t len = (uint32_t)take(&d, &n, 1);
        if (len > n)
            len = (uint32_t)n;
        if (tele_rec_append(seg, &g, &s, &it, kind, version, (int64_t)i, d, len) == 0)
            appended++;
        d += len, n -= len;
    }
    /* The rest: (offset, value) pairs changed in the segment. */
    uint32_t changes = 0;
    while (n >= 3) {
        uint32_t off = (uint32_t)take(&d, &n, 2);
        seg[off % TELE_SEG_BYTES] ^= (uint8_t)(take(&d, &n, 1) | 1);
        changes++;
    }
    if (tele_seg_decode(seg, TELE_SEG_BYTES, &g, s.seq, &back, why, sizeof why) == TELE_VALID) {
        uint32_t got = walk(seg, &g, &back);
        FUZZ_ASSERT(changes || got == appended);
    }
    free(seg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 0:
        detect(data + 1, size - 1);
        break;
    case 1:
        region(data + 1, size - 1);
        break;
    case 2:
        tele_raw(data + 1, size - 1);
        break;
    default:
        tele_built(data + 1, size - 1);
        break;
    }
    return 0;
}
