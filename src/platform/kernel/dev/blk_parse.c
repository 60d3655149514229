/*
 * blk_parse.c - the pure parsers of blk_parse.h. Limits derived from the
 * device (segments, transfer size, discard counts) are clamped to what the
 * driver and blk.h can represent; values that make no sense (a block size
 * that is not a power of two, a physical block larger than BLK_PHYS_MAX,
 * no capacity) refuse the device rather than being guessed around.
 */
#include "blk_parse.h"

#include <string.h>

enum { PAGE = 4096 };

static uint32_t vb_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool vb_pow2(uint64_t v) { return v && !(v & (v - 1)); }

static uint32_t vb_floor_pow2(uint32_t v)
{
    while (v & (v - 1))
        v &= v - 1;
    return v;
}

/* A field of width w at off, or false when the snapshot ends before it. */
static bool vb_field(const uint8_t *cfg, size_t len, unsigned off, unsigned w, uint32_t *v)
{
    if (off + w > len)
        return false;
    *v = w == 1 ? cfg[off] : w == 2 ? (uint32_t)(cfg[off] | cfg[off + 1] << 8) : vb_le32(cfg + off);
    return true;
}

static bool vb_has(uint64_t features, unsigned bit) { return (features >> bit) & 1; }

/* Whole blocks of lbs bytes in a count of 512-byte sectors. */
static uint32_t sectors_to_blocks(uint32_t sectors, uint32_t lbs)
{
    return sectors / (lbs / VBLK_SECTOR);
}

int vblk_parse_config(const uint8_t *cfg, size_t len, uint64_t features, uint32_t drv_segs,
                      struct vblk_params *out, const char **err)
{
    memset(out, 0, sizeof *out);
    struct blk_topology *t = &out->topo;
    uint32_t lo, hi, v, w;
    *err = "configuration too short for the offered features";
    if (!vb_field(cfg, len, VBLK_CFG_CAPACITY, 4, &lo) ||
        !vb_field(cfg, len, VBLK_CFG_CAPACITY + 4, 4, &hi))
        return -1;
    uint64_t sectors = (uint64_t)hi << 32 | lo;

    t->logical_block = VBLK_SECTOR;
    if (vb_has(features, VBLK_F_BLK_SIZE)) {
        if (!vb_field(cfg, len, VBLK_CFG_BLK_SIZE, 4, &v))
            return -1;
        if (!vb_pow2(v) || v < BLK_BLOCK_MIN || v > BLK_BLOCK_MAX) {
            *err = "block size not a power of two between 512 and 65536";
            return -1;
        }
        t->logical_block = v;
    }
    t->capacity = sectors / (t->logical_block / VBLK_SECTOR);
    if (t->capacity == 0) {
        *err = "capacity 0";
        return -1;
    }

    t->physical_block = t->logical_block;
    if (vb_has(features, VBLK_F_TOPOLOGY)) {
        if (!vb_field(cfg, len, VBLK_CFG_PHYS_EXP, 1, &v) || !vb_field(cfg, len, VBLK_CFG_OPT_IO, 4, &w))
            return -1;
        if (v > 20 || ((uint64_t)t->logical_block << v) > BLK_PHYS_MAX) {
            *err = "physical block larger than 1 MiB";
            return -1;
        }
        t->physical_block = t->logical_block << v;
        /* An optimal size we cannot represent or that is no multiple of the
         * physical block is ignored, not fatal: it is a hint. */
        uint64_t opt = (uint64_t)w * t->logical_block;
        if (opt <= (1u << 30) && opt % t->physical_block == 0)
            t->optimal_io = (uint32_t)opt;
    }

    out->seg_size = PAGE;
    if (vb_has(features, VBLK_F_SIZE_MAX)) {
        if (!vb_field(cfg, len, VBLK_CFG_SIZE_MAX, 4, &v))
            return -1;
        if (v < VBLK_SECTOR) {
            *err = "size_max below 512 bytes";
            return -1;
        }
        if (v < PAGE)
            out->seg_size = vb_floor_pow2(v);
    }
    out->max_segs = drv_segs;
    if (vb_has(features, VBLK_F_SEG_MAX)) {
        if (!vb_field(cfg, len, VBLK_CFG_SEG_MAX, 4, &v))
            return -1;
        if (v < out->max_segs)
            out->max_segs = v;
    }
    /* A buffer at any alignment needs one segment more than its size in
     * whole segments. */
    if (out->max_segs < 2) {
        *err = "seg_max below 2";
        return -1;
    }
    uint64_t xfer = (uint64_t)(out->max_segs - 1) * out->seg_size;
    xfer -= xfer % t->logical_block;
    if (xfer == 0) {
        *err = "segments too small for one block";
        return -1;
    }
    t->max_transfer = (uint32_t)xfer;

    t->flush = vb_has(features, VBLK_F_FLUSH);
    if (vb_has(features, VBLK_F_CONFIG_WCE)) {
        if (!vb_field(cfg, len, VBLK_CFG_WRITEBACK, 1, &v))
            return -1;
        t->write_cache = v != 0;
    } else {
        t->write_cache = t->flush;
    }
    t->read_only = vb_has(features, VBLK_F_RO);

    if (vb_has(features, VBLK_F_DISCARD)) {
        if (!vb_field(cfg, len, VBLK_CFG_MAX_DISCARD, 4, &v) ||
            !vb_field(cfg, len, VBLK_CFG_MAX_DISCARD_SEG, 4, &w))
            return -1;
        t->max_discard = sectors_to_blocks(v, t->logical_block);
        t->discard = t->max_discard > 0 && w > 0;
        if (!t->discard)
            t->max_discard = 0;
    }
    if (vb_has(features, VBLK_F_WRITE_ZEROES)) {
        if (!vb_field(cfg, len, VBLK_CFG_MAX_WZ, 4, &v) || !vb_field(cfg, len, VBLK_CFG_MAX_WZ_SEG, 4, &w) ||
            !vb_field(cfg, len, VBLK_CFG_WZ_MAY_UNMAP, 1, &lo))
            return -1;
        t->max_write_zeroes = sectors_to_blocks(v, t->logical_block);
        t->write_zeroes = t->max_write_zeroes > 0 && w > 0;
        if (!t->write_zeroes)
            t->max_write_zeroes = 0;
        out->wz_may_unmap = t->write_zeroes && lo != 0;
    }
    *err = NULL;
    return 0;
}

int vblk_status(uint8_t status)
{
    switch (status) {
    case VBLK_S_OK: return BLK_OK;
    case VBLK_S_UNSUPP: return BLK_EUNSUPP;
    default: return BLK_EIO;
    }
}

void blk_text_clean(char *dst, size_t n, const uint8_t *src, size_t len)
{
    size_t o = 0;
    bool space = false;
    for (size_t i = 0; i < len && src[i]; i++) {
        uint8_t c = src[i];
        if (c == ' ') {
            space = o > 0;       /* leading spaces dropped, runs become one */
            continue;
        }
        if (space && o + 1 < n)
            dst[o++] = ' ';
        space = false;
        if (o + 1 < n)
            dst[o++] = c > 0x20 && c < 0x7F && c != '"' ? (char)c : '?';
    }
    dst[o] = 0;
}
