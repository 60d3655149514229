/*
 * test_kblk_parse.c - virtio-blk's configuration and status parsers and
 * the device-text cleaner (dev/blk_parse.c) on the host: QEMU-like
 * configurations give the topology they describe (512/4096 and 4096/4096
 * disks, optimal I/O, discard and write-zeroes limits); the write cache
 * follows the spec's rules (CONFIG_WCE's writeback field, else FLUSH);
 * impossible values (block size not a power of two, a huge physical block,
 * no capacity, seg_max below 2) refuse the device; a snapshot shorter than
 * the offered features need is refused; unknown status bytes are errors.
 */
#include "test.h"

#include "platform/kernel/dev/blk_parse.c"

static void put32(uint8_t *c, unsigned off, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        c[off + i] = (uint8_t)(v >> (8 * i));
}

/* What QEMU's virtio-blk-pci shows for a 64 MiB image with the given
 * logical block and physical exponent. */
static void qemu_cfg(uint8_t c[VBLK_CFG_BYTES], uint32_t lbs, uint8_t exp)
{
    memset(c, 0, VBLK_CFG_BYTES);
    put32(c, VBLK_CFG_CAPACITY, 131072);         /* 64 MiB in 512-byte sectors */
    put32(c, VBLK_CFG_SIZE_MAX, 0);
    put32(c, VBLK_CFG_SEG_MAX, 254);
    put32(c, VBLK_CFG_BLK_SIZE, lbs);
    c[VBLK_CFG_PHYS_EXP] = exp;
    put32(c, VBLK_CFG_OPT_IO, 0);
    c[VBLK_CFG_WRITEBACK] = 1;
    put32(c, VBLK_CFG_MAX_DISCARD, 0x3FFFFF);
    put32(c, VBLK_CFG_MAX_DISCARD_SEG, 1);
    put32(c, VBLK_CFG_DISCARD_ALIGN, lbs / 512);
    put32(c, VBLK_CFG_MAX_WZ, 0x3FFFFF);
    put32(c, VBLK_CFG_MAX_WZ_SEG, 1);
    c[VBLK_CFG_WZ_MAY_UNMAP] = 1;
}

static const uint64_t QEMU_FEATURES = 1ull << VBLK_F_SEG_MAX | 1ull << VBLK_F_BLK_SIZE |
    1ull << VBLK_F_FLUSH | 1ull << VBLK_F_TOPOLOGY | 1ull << VBLK_F_CONFIG_WCE |
    1ull << VBLK_F_DISCARD | 1ull << VBLK_F_WRITE_ZEROES;

TEST(kblk_parse_512_logical_4096_physical_topology)
{
    uint8_t c[VBLK_CFG_BYTES];
    qemu_cfg(c, 512, 3);
    put32(c, VBLK_CFG_OPT_IO, 128);               /* 64 KiB */
    struct vblk_params p;
    const char *err;
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), 0);
    CHECK_EQ(p.topo.logical_block, 512);
    CHECK_EQ(p.topo.physical_block, 4096);
    CHECK_EQ(p.topo.optimal_io, 65536);
    CHECK_EQ(p.topo.capacity, 131072);
    CHECK_EQ(p.seg_size, 4096);
    CHECK_EQ(p.max_segs, 65);
    CHECK_EQ(p.topo.max_transfer, 64 * 4096);
    CHECK(p.topo.write_cache && p.topo.flush && !p.topo.fua && !p.topo.read_only);
    CHECK(p.topo.discard && p.topo.write_zeroes && p.wz_may_unmap);
    CHECK_EQ(p.topo.max_discard, 0x3FFFFF);
}

TEST(kblk_parse_4096_logical_counts_capacity_in_its_blocks)
{
    uint8_t c[VBLK_CFG_BYTES];
    qemu_cfg(c, 4096, 0);
    put32(c, VBLK_CFG_SEG_MAX, 8);
    put32(c, VBLK_CFG_SIZE_MAX, 2048 + 100);      /* segments of 2 KiB */
    struct vblk_params p;
    const char *err;
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES | 1ull << VBLK_F_SIZE_MAX, 65, &p, &err), 0);
    CHECK_EQ(p.topo.logical_block, 4096);
    CHECK_EQ(p.topo.physical_block, 4096);
    CHECK_EQ(p.topo.capacity, 16384);             /* 64 MiB of 4 KiB blocks */
    CHECK_EQ(p.topo.max_discard, 0x3FFFFF / 8);   /* device limits are in sectors */
    CHECK_EQ(p.seg_size, 2048);
    CHECK_EQ(p.max_segs, 8);
    CHECK_EQ(p.topo.max_transfer, 12288);         /* 7 x 2 KiB, whole 4 KiB blocks */
    CHECK_EQ(p.topo.optimal_io, 0);
}

TEST(kblk_parse_write_cache_follows_the_spec)
{
    uint8_t c[VBLK_CFG_BYTES];
    qemu_cfg(c, 512, 0);
    struct vblk_params p;
    const char *err;
    uint64_t f = 1ull << VBLK_F_BLK_SIZE;
    CHECK_EQ(vblk_parse_config(c, sizeof c, f, 65, &p, &err), 0);
    CHECK(!p.topo.write_cache && !p.topo.flush);  /* neither: write-through */
    CHECK_EQ(vblk_parse_config(c, sizeof c, f | 1ull << VBLK_F_FLUSH, 65, &p, &err), 0);
    CHECK(p.topo.write_cache && p.topo.flush);    /* FLUSH alone: assume write-back */
    c[VBLK_CFG_WRITEBACK] = 0;
    CHECK_EQ(vblk_parse_config(c, sizeof c, f | 1ull << VBLK_F_FLUSH | 1ull << VBLK_F_CONFIG_WCE,
                               65, &p, &err), 0);
    CHECK(!p.topo.write_cache && p.topo.flush);   /* the field says write-through */
    c[VBLK_CFG_WRITEBACK] = 1;
    CHECK_EQ(vblk_parse_config(c, sizeof c, f | 1ull << VBLK_F_CONFIG_WCE, 65, &p, &err), 0);
    CHECK(p.topo.write_cache && !p.topo.flush);   /* write-back and no flush: refused later */
    CHECK_EQ(vblk_parse_config(c, sizeof c, f | 1ull << VBLK_F_RO, 65, &p, &err), 0);
    CHECK(p.topo.read_only);
}

TEST(kblk_parse_refuses_impossible_configurations)
{
    uint8_t c[VBLK_CFG_BYTES];
    struct vblk_params p;
    const char *err;
    qemu_cfg(c, 1000, 0);
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), -1);
    CHECK(strstr(err, "block size"));
    qemu_cfg(c, 131072, 0);
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), -1);
    qemu_cfg(c, 4096, 9);                         /* 2 MiB physical */
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), -1);
    CHECK(strstr(err, "physical"));
    qemu_cfg(c, 4096, 255);
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), -1);
    qemu_cfg(c, 4096, 0);
    put32(c, VBLK_CFG_CAPACITY, 7);               /* less than one 4 KiB block */
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), -1);
    CHECK(strstr(err, "capacity"));
    qemu_cfg(c, 512, 0);
    put32(c, VBLK_CFG_SEG_MAX, 1);
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), -1);
    CHECK(strstr(err, "seg_max"));
    qemu_cfg(c, 512, 0);
    put32(c, VBLK_CFG_SIZE_MAX, 100);
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES | 1ull << VBLK_F_SIZE_MAX, 65, &p, &err), -1);
    qemu_cfg(c, 512, 0);
    /* Too short for the discard fields the features promise. */
    CHECK_EQ(vblk_parse_config(c, 36, QEMU_FEATURES, 65, &p, &err), -1);
    CHECK(strstr(err, "too short"));
    CHECK_EQ(vblk_parse_config(c, 4, 0, 65, &p, &err), -1);
    /* Without those features the same short snapshot is fine. */
    CHECK_EQ(vblk_parse_config(c, 36, QEMU_FEATURES & ~(1ull << VBLK_F_DISCARD |
                                                         1ull << VBLK_F_WRITE_ZEROES),
                               65, &p, &err), 0);
    CHECK(!p.topo.discard && !p.topo.write_zeroes);
    /* Discard limits of zero mean no discard, not a zero-block limit. */
    qemu_cfg(c, 512, 0);
    put32(c, VBLK_CFG_MAX_DISCARD_SEG, 0);
    put32(c, VBLK_CFG_MAX_WZ, 0);
    CHECK_EQ(vblk_parse_config(c, sizeof c, QEMU_FEATURES, 65, &p, &err), 0);
    CHECK(!p.topo.discard && p.topo.max_discard == 0);
    CHECK(!p.topo.write_zeroes && !p.wz_may_unmap);
}

TEST(kblk_parse_status_byte_unknown_values_are_errors)
{
    CHECK_EQ(vblk_status(0), BLK_OK);
    CHECK_EQ(vblk_status(1), BLK_EIO);
    CHECK_EQ(vblk_status(2), BLK_EUNSUPP);
    CHECK_EQ(vblk_status(3), BLK_EIO);
    CHECK_EQ(vblk_status(0xFF), BLK_EIO);
}

TEST(kblk_text_clean_keeps_printable_text_only)
{
    char out[17];
    blk_text_clean(out, sizeof out, (const uint8_t *)"  QEMU HARDDISK   ", 18);
    CHECK(strcmp(out, "QEMU HARDDISK") == 0);
    blk_text_clean(out, sizeof out, (const uint8_t *)"a\x01\"b  \xff  c", 11);
    CHECK(strcmp(out, "a??b ? c") == 0);
    blk_text_clean(out, sizeof out, (const uint8_t *)"serial\0junk", 11);
    CHECK(strcmp(out, "serial") == 0);
    blk_text_clean(out, 4, (const uint8_t *)"abcdefgh", 8);
    CHECK(strcmp(out, "abc") == 0);
    blk_text_clean(out, sizeof out, (const uint8_t *)"", 0);
    CHECK(out[0] == 0);
}
