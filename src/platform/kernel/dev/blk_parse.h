/*
 * blk_parse.h - pure parsers for what a virtio-blk device writes (virtio
 * 1.x, 5.2): its configuration space, read into a snapshot, turned into a
 * blk_topology and the driver's segment limits, and the status byte of a
 * request; and the cleaning of identification text (serial numbers, SCSI
 * vendor and product) a device supplies. The device controls every byte:
 * values are range-checked, nothing is read beyond the snapshot, and the
 * fuzz target fuzz_devices calls these directly.
 */
#ifndef TERN_DEV_BLK_PARSE_H
#define TERN_DEV_BLK_PARSE_H

#include "blk.h"

#include <stddef.h>
#include <stdint.h>

/* Feature bits (5.2.3) and configuration layout (5.2.4). */
enum {
    VBLK_F_SIZE_MAX = 1,
    VBLK_F_SEG_MAX = 2,
    VBLK_F_RO = 5,
    VBLK_F_BLK_SIZE = 6,
    VBLK_F_FLUSH = 9,
    VBLK_F_TOPOLOGY = 10,
    VBLK_F_CONFIG_WCE = 11,
    VBLK_F_DISCARD = 13,
    VBLK_F_WRITE_ZEROES = 14,

    VBLK_CFG_CAPACITY = 0,      /* le64, 512-byte sectors */
    VBLK_CFG_SIZE_MAX = 8,      /* le32 */
    VBLK_CFG_SEG_MAX = 12,      /* le32 */
    VBLK_CFG_BLK_SIZE = 20,     /* le32 */
    VBLK_CFG_PHYS_EXP = 24,     /* u8 */
    VBLK_CFG_ALIGN_OFF = 25,    /* u8 */
    VBLK_CFG_MIN_IO = 26,       /* le16, blocks */
    VBLK_CFG_OPT_IO = 28,       /* le32, blocks */
    VBLK_CFG_WRITEBACK = 32,    /* u8 */
    VBLK_CFG_MAX_DISCARD = 36,  /* le32, sectors */
    VBLK_CFG_MAX_DISCARD_SEG = 40,
    VBLK_CFG_DISCARD_ALIGN = 44,
    VBLK_CFG_MAX_WZ = 48,       /* le32, sectors */
    VBLK_CFG_MAX_WZ_SEG = 52,
    VBLK_CFG_WZ_MAY_UNMAP = 56, /* u8 */
    VBLK_CFG_BYTES = 60,        /* the part of the layout this driver reads */

    VBLK_SECTOR = 512,          /* the unit of request sectors and capacity */
    VBLK_S_OK = 0,
    VBLK_S_IOERR = 1,
    VBLK_S_UNSUPP = 2,
};

/* What the driver needs beyond the topology. */
struct vblk_params {
    struct blk_topology topo;
    uint32_t seg_size;      /* largest data segment: a power of two <= 4096 */
    uint32_t max_segs;      /* data segments per request */
    bool wz_may_unmap;      /* write-zeroes may deallocate (VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP) */
};

/*
 * Parse a configuration snapshot of len bytes (fields beyond len read as
 * absent) under the negotiated features. drv_segs is the most data
 * segments the driver will put in one request (its queue minus header and
 * status). The write cache follows 5.2.5.1: the writeback field when
 * CONFIG_WCE was negotiated, else present exactly when FLUSH was. 0, or -1
 * with *err naming the field at fault.
 */
int vblk_parse_config(const uint8_t *cfg, size_t len, uint64_t features, uint32_t drv_segs,
                      struct vblk_params *out, const char **err);
/* A request's status byte as a blk_status: unknown values are errors. */
int vblk_status(uint8_t status);

/* Copy device text (at most len bytes, up to a NUL) into dst (n > 0):
 * printable ASCII kept, anything else (and '"') as '?', leading and
 * trailing spaces and runs of spaces reduced. Always terminated. */
void blk_text_clean(char *dst, size_t n, const uint8_t *src, size_t len);

#endif
