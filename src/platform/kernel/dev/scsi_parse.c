/*
 * scsi_parse.c - the pure parsers of scsi_parse.h. SCSI data is big-endian,
 * virtio's is little-endian. Every length a device states (sense length,
 * additional length, page length, LUN list length, mode data length, block
 * descriptor length, page lengths inside mode data) is bounded by the
 * bytes actually received before it is used.
 */
#include "scsi_parse.h"

#include "blk.h"
#include "blk_parse.h"

#include <stdio.h>
#include <string.h>

static uint16_t sp_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t sp_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t sp_be64(const uint8_t *p) { return (uint64_t)sp_be32(p) << 32 | sp_be32(p + 4); }
static uint32_t sp_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static size_t sp_min(size_t a, size_t b) { return a < b ? a : b; }

int vscsi_parse_config(const uint8_t *cfg, size_t len, struct vscsi_config *out,
                       const char **err)
{
    memset(out, 0, sizeof *out);
    if (len < VSCSI_CFG_BYTES) {
        *err = "configuration too short";
        return -1;
    }
    out->num_queues = sp_le32(cfg + VSCSI_CFG_NUM_QUEUES);
    out->seg_max = sp_le32(cfg + VSCSI_CFG_SEG_MAX);
    out->max_sectors = sp_le32(cfg + VSCSI_CFG_MAX_SECTORS);
    out->cmd_per_lun = sp_le32(cfg + VSCSI_CFG_CMD_PER_LUN);
    out->max_target = (uint16_t)(cfg[VSCSI_CFG_MAX_TARGET] | cfg[VSCSI_CFG_MAX_TARGET + 1] << 8);
    out->max_lun = sp_le32(cfg + VSCSI_CFG_MAX_LUN);
    if (out->num_queues == 0) {
        *err = "no request queue";
        return -1;
    }
    if (sp_le32(cfg + VSCSI_CFG_SENSE_SIZE) != VSCSI_SENSE_SIZE ||
        sp_le32(cfg + VSCSI_CFG_CDB_SIZE) != VSCSI_CDB_SIZE) {
        *err = "sense or CDB size other than the defaults (96, 32)";
        return -1;
    }
    *err = NULL;
    return 0;
}

void scsi_sense_parse(const uint8_t *s, size_t len, struct scsi_sense *out)
{
    memset(out, 0, sizeof *out);
    if (len < 1)
        return;
    uint8_t code = s[0] & 0x7F;
    if ((code == 0x70 || code == 0x71) && len >= 3) {
        /* Fixed format: the key in byte 2; ASC and ASCQ at 12 and 13 when
         * the additional length (byte 7) and the data reach them. */
        out->valid = true;
        out->key = s[2] & 0x0F;
        size_t stated = len >= 8 ? 8 + (size_t)s[7] : 0;
        if (sp_min(len, stated) >= 14) {
            out->asc = s[12];
            out->ascq = s[13];
        }
    } else if ((code == 0x72 || code == 0x73) && len >= 4) {
        out->valid = true;
        out->key = s[1] & 0x0F;
        out->asc = s[2];
        out->ascq = s[3];
    }
}

void vscsi_resp_parse(const uint8_t resp[VSCSI_RESP_BYTES], struct scsi_result *out)
{
    memset(out, 0, sizeof *out);
    uint32_t sense_len = sp_le32(resp);
    out->residual = sp_le32(resp + 4);
    out->status = resp[10];
    out->response = resp[11];
    if (out->response == VSCSI_S_OK && out->status == SCSI_STATUS_CHECK)
        scsi_sense_parse(resp + 12, sp_min(sense_len, VSCSI_SENSE_SIZE), &out->sense);
}

enum scsi_outcome scsi_classify(const struct scsi_result *r)
{
    switch (r->response) {
    case VSCSI_S_OK: break;
    case VSCSI_S_BAD_TARGET: return SCSI_NO_TARGET;
    case VSCSI_S_RESET:
    case VSCSI_S_BUSY: return SCSI_RETRY;
    default: return SCSI_ERROR;
    }
    switch (r->status) {
    case SCSI_STATUS_GOOD: return SCSI_GOOD;
    case SCSI_STATUS_BUSY:
    case SCSI_STATUS_TASK_SET_FULL: return SCSI_RETRY;
    case SCSI_STATUS_CHECK: break;
    default: return SCSI_ERROR;
    }
    const struct scsi_sense *s = &r->sense;
    if (!s->valid)
        return SCSI_ERROR;
    switch (s->key) {
    case SCSI_KEY_RECOVERED: return SCSI_GOOD;
    case SCSI_KEY_UNIT_ATTENTION:
    case SCSI_KEY_ABORTED: return SCSI_RETRY;
    case SCSI_KEY_NOT_READY:
        /* 04/xx: becoming ready, or in progress of something: wait. */
        return s->asc == 0x04 ? SCSI_RETRY : SCSI_ERROR;
    case SCSI_KEY_ILLEGAL_REQUEST:
        if (s->asc == 0x20 || s->asc == 0x24)
            return SCSI_UNSUPPORTED;    /* invalid operation code / field in CDB */
        if (s->asc == 0x25)
            return SCSI_NO_TARGET;      /* logical unit not supported */
        return SCSI_ERROR;
    default: return SCSI_ERROR;
    }
}

bool scsi_write_protected(const struct scsi_result *r)
{
    return r->response == VSCSI_S_OK && r->status == SCSI_STATUS_CHECK && r->sense.valid &&
           r->sense.key == SCSI_KEY_DATA_PROTECT;
}

void scsi_result_text(const struct scsi_result *r, char *buf, size_t n)
{
    static const char *const keys[16] = {
        "no sense", "recovered error", "not ready", "medium error", "hardware error",
        "illegal request", "unit attention", "data protect", "blank check", "vendor specific",
        "copy aborted", "aborted command", "key 0xc", "volume overflow", "miscompare",
        "key 0xf"};
    if (r->response != VSCSI_S_OK)
        snprintf(buf, n, "virtio-scsi response %u", r->response);
    else if (r->status != SCSI_STATUS_CHECK)
        snprintf(buf, n, "SCSI status 0x%02x", r->status);
    else if (!r->sense.valid)
        snprintf(buf, n, "check condition without readable sense data");
    else
        snprintf(buf, n, "%s %02x/%02x", keys[r->sense.key & 0xF], r->sense.asc, r->sense.ascq);
}

int scsi_inquiry_parse(const uint8_t *d, size_t len, struct scsi_inquiry *out)
{
    memset(out, 0, sizeof *out);
    if (len < 36)
        return -1;
    out->qualifier = d[0] >> 5;
    out->type = d[0] & 0x1F;
    blk_text_clean(out->vendor, sizeof out->vendor, d + 8, 8);
    blk_text_clean(out->product, sizeof out->product, d + 16, 16);
    return 0;
}

unsigned scsi_report_luns_parse(const uint8_t *d, size_t len, uint16_t *luns, unsigned max,
                                unsigned *skipped)
{
    *skipped = 0;
    if (len < 8)
        return 0;
    size_t bytes = sp_min(sp_be32(d), len - 8);
    unsigned n = 0;
    for (size_t off = 8; off + 8 <= 8 + bytes; off += 8) {
        const uint8_t *e = d + off;
        static const uint8_t zero[6];
        unsigned method = e[0] >> 6;
        /* Single level only: the second to fourth levels are zero. */
        bool single = memcmp(e + 2, zero, 6) == 0;
        if (single && method == 0 && (e[0] & 0x3F) == 0 && n < max)
            luns[n++] = e[1];
        else if (single && method == 1 && n < max)
            luns[n++] = (uint16_t)((e[0] & 0x3F) << 8 | e[1]);
        else
            (*skipped)++;
    }
    return n;
}

int scsi_readcap16_parse(const uint8_t *d, size_t len, struct scsi_capacity *out,
                         const char **err)
{
    memset(out, 0, sizeof *out);
    if (len < 32) {
        *err = "READ CAPACITY(16) data too short";
        return -1;
    }
    uint64_t last = sp_be64(d);
    uint32_t bl = sp_be32(d + 8);
    unsigned exp = d[13] & 0x0F;
    if (last == UINT64_MAX) {
        *err = "capacity beyond 2^64 blocks";
        return -1;
    }
    if ((bl & (bl - 1)) || bl < BLK_BLOCK_MIN || bl > BLK_BLOCK_MAX) {
        *err = "block length not a power of two between 512 and 65536";
        return -1;
    }
    if (((uint64_t)bl << exp) > BLK_PHYS_MAX) {
        *err = "physical block larger than 1 MiB";
        return -1;
    }
    out->blocks = last + 1;
    out->block_len = bl;
    out->physical = bl << exp;
    out->lbpme = d[14] & 0x80;
    out->lbprz = d[14] & 0x40;
    *err = NULL;
    return 0;
}

/* The bytes of a VPD page that are both received and inside its stated
 * length; 0 if it is not page code. */
static size_t sp_vpd_bytes(const uint8_t *d, size_t len, uint8_t code)
{
    if (len < 4 || d[1] != code)
        return 0;
    return sp_min(len, 4 + (size_t)sp_be16(d + 2));
}

int scsi_vpd_lists(const uint8_t *d, size_t len, uint8_t page)
{
    size_t n = sp_vpd_bytes(d, len, 0x00);
    for (size_t i = 4; i < n; i++)
        if (d[i] == page)
            return 1;
    return 0;
}

int scsi_vpd_b0_parse(const uint8_t *d, size_t len, struct scsi_block_limits *out)
{
    memset(out, 0, sizeof *out);
    size_t n = sp_vpd_bytes(d, len, 0xB0);
    if (n == 0)
        return -1;
    if (n >= 12)
        out->max_transfer = sp_be32(d + 8);
    if (n >= 16)
        out->opt_transfer = sp_be32(d + 12);
    if (n >= 28) {
        out->max_unmap = sp_be32(d + 20);
        out->max_unmap_desc = sp_be32(d + 24);
    }
    if (n >= 44)
        out->max_write_same = sp_be64(d + 36);
    return 0;
}

int scsi_vpd_b2_parse(const uint8_t *d, size_t len, struct scsi_provisioning *out)
{
    memset(out, 0, sizeof *out);
    size_t n = sp_vpd_bytes(d, len, 0xB2);
    if (n < 6)
        return -1;
    out->lbpu = d[5] & 0x80;
    out->lbpws = d[5] & 0x40;
    out->lbprz = (d[5] >> 2) & 7;
    return 0;
}

int scsi_mode_caching_parse(const uint8_t *d, size_t len, bool ten, struct scsi_caching *out)
{
    memset(out, 0, sizeof *out);
    size_t hdr = ten ? 8 : 4;
    if (len < hdr)
        return -1;
    size_t total = ten ? (size_t)sp_be16(d) + 2 : (size_t)d[0] + 1;
    size_t bdlen = ten ? sp_be16(d + 6) : d[3];
    uint8_t devspec = ten ? d[3] : d[2];
    out->write_protected = devspec & 0x80;
    out->dpofua = devspec & 0x10;
    size_t end = sp_min(len, total);
    /* Pages follow the block descriptors; each states its own length. */
    for (size_t off = hdr + bdlen; off + 2 <= end;) {
        const uint8_t *p = d + off;
        bool spf = p[0] & 0x40;
        size_t plen = spf ? (off + 4 <= end ? 4 + (size_t)sp_be16(p + 2) : end - off)
                          : 2 + (size_t)p[1];
        if ((p[0] & 0x3F) == 0x08 && !spf && off + 3 <= end) {
            out->page = true;
            out->wce = p[2] & 0x04;
            break;
        }
        off += plen;
    }
    return 0;
}
