/*
 * scsi_parse.h - pure parsers for what a virtio-scsi device and the SCSI
 * target behind it write: the device's configuration (virtio 1.x, 5.6.4),
 * the response header of a command (5.6.6), sense data (SPC-4 4.5, fixed
 * and descriptor formats), standard INQUIRY data, REPORT LUNS, READ
 * CAPACITY(16), the VPD pages 0x00 (supported pages), 0xB0 (block limits)
 * and 0xB2 (logical block provisioning), and MODE SENSE's caching page
 * with its header. Everything is untrusted (ADR-012): each parser takes
 * the bytes actually received, reads nothing beyond them or beyond the
 * lengths the data states, and is called by fuzz_devices.
 */
#ifndef TERN_DEV_SCSI_PARSE_H
#define TERN_DEV_SCSI_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- virtio-scsi ---- */

enum {
    VSCSI_CFG_NUM_QUEUES = 0,   /* le32 each, unless noted */
    VSCSI_CFG_SEG_MAX = 4,
    VSCSI_CFG_MAX_SECTORS = 8,
    VSCSI_CFG_CMD_PER_LUN = 12,
    VSCSI_CFG_EVENT_INFO = 16,
    VSCSI_CFG_SENSE_SIZE = 20,
    VSCSI_CFG_CDB_SIZE = 24,
    VSCSI_CFG_MAX_CHANNEL = 28, /* le16 */
    VSCSI_CFG_MAX_TARGET = 30,  /* le16 */
    VSCSI_CFG_MAX_LUN = 32,     /* le32 */
    VSCSI_CFG_BYTES = 36,

    VSCSI_CDB_SIZE = 32,        /* the defaults after reset (5.6.4): the */
    VSCSI_SENSE_SIZE = 96,      /* request and response layouts use them */
    VSCSI_REQ_BYTES = 19 + VSCSI_CDB_SIZE,   /* lun, id, attr, prio, crn, cdb */
    VSCSI_RESP_BYTES = 12 + VSCSI_SENSE_SIZE, /* sense_len .. response, sense */

    VSCSI_S_OK = 0,
    VSCSI_S_OVERRUN = 1,
    VSCSI_S_ABORTED = 2,
    VSCSI_S_BAD_TARGET = 3,
    VSCSI_S_RESET = 4,
    VSCSI_S_BUSY = 5,
};

struct vscsi_config {
    uint32_t num_queues, seg_max, max_sectors, cmd_per_lun;
    uint16_t max_target;
    uint32_t max_lun;
};

/* 0, or -1 with *err: too short, no request queue, or sense/cdb sizes
 * other than the defaults the layouts assume. */
int vscsi_parse_config(const uint8_t *cfg, size_t len, struct vscsi_config *out,
                       const char **err);

/* ---- a command's outcome ---- */

enum {
    SCSI_STATUS_GOOD = 0x00,
    SCSI_STATUS_CHECK = 0x02,
    SCSI_STATUS_BUSY = 0x08,
    SCSI_STATUS_TASK_SET_FULL = 0x28,

    SCSI_KEY_NO_SENSE = 0x0,
    SCSI_KEY_RECOVERED = 0x1,
    SCSI_KEY_NOT_READY = 0x2,
    SCSI_KEY_MEDIUM_ERROR = 0x3,
    SCSI_KEY_HARDWARE_ERROR = 0x4,
    SCSI_KEY_ILLEGAL_REQUEST = 0x5,
    SCSI_KEY_UNIT_ATTENTION = 0x6,
    SCSI_KEY_DATA_PROTECT = 0x7,
    SCSI_KEY_ABORTED = 0xB,
};

struct scsi_sense {
    bool valid;                 /* a fixed or descriptor format we read */
    uint8_t key, asc, ascq;
};

struct scsi_result {
    uint8_t response;           /* VSCSI_S_* */
    uint8_t status;             /* SCSI status byte */
    uint32_t residual;          /* bytes of the data buffer not transferred */
    struct scsi_sense sense;
};

/* Sense data of len bytes (len beyond what the format states is ignored). */
void scsi_sense_parse(const uint8_t *s, size_t len, struct scsi_sense *out);
/* The response header (VSCSI_RESP_BYTES written by the device); the sense
 * length it states is clamped to VSCSI_SENSE_SIZE. */
void vscsi_resp_parse(const uint8_t resp[VSCSI_RESP_BYTES], struct scsi_result *out);

enum scsi_outcome {
    SCSI_GOOD,
    SCSI_RETRY,          /* unit attention, busy, reset, not ready yet: try again */
    SCSI_NO_TARGET,      /* no such target or LUN */
    SCSI_UNSUPPORTED,    /* invalid operation code or field: the device lacks it */
    SCSI_ERROR,
};
enum scsi_outcome scsi_classify(const struct scsi_result *r);
/* The device refused a command because its medium is write-protected
 * (check condition, sense key DATA PROTECT: 27/xx "write protected" and
 * its kin), which a device whose MODE SENSE did not say WP can still
 * answer to a write. */
bool scsi_write_protected(const struct scsi_result *r);
/* A phrase for the log ("medium error 11/00"), into buf. */
void scsi_result_text(const struct scsi_result *r, char *buf, size_t n);

/* ---- data-in of the commands the driver sends ---- */

struct scsi_inquiry {
    uint8_t qualifier, type;    /* peripheral qualifier and device type */
    char vendor[9], product[17];
};
/* At least 36 bytes: 0, else -1. */
int scsi_inquiry_parse(const uint8_t *d, size_t len, struct scsi_inquiry *out);

/* LUN numbers (peripheral or flat addressing, single level) from a REPORT
 * LUNS list, up to max; others counted in *skipped. Returns the number. */
unsigned scsi_report_luns_parse(const uint8_t *d, size_t len, uint16_t *luns, unsigned max,
                                unsigned *skipped);

struct scsi_capacity {
    uint64_t blocks;            /* last LBA + 1 */
    uint32_t block_len;         /* a power of two, 512..65536 */
    uint32_t physical;          /* bytes: block_len << exponent, <= 1 MiB */
    bool lbpme, lbprz;          /* provisioning management, zeroes after unmap */
};
/* READ CAPACITY(16): at least 32 bytes and sane values; 0, else -1 with *err. */
int scsi_readcap16_parse(const uint8_t *d, size_t len, struct scsi_capacity *out,
                         const char **err);

/* 1 if the supported-pages VPD page (0x00) lists page. */
int scsi_vpd_lists(const uint8_t *d, size_t len, uint8_t page);

struct scsi_block_limits {
    uint32_t max_transfer;      /* blocks, 0 = not reported */
    uint32_t opt_transfer;      /* blocks, 0 = not reported */
    uint32_t max_unmap;         /* blocks per UNMAP, 0 = not reported */
    uint32_t max_unmap_desc;
    uint64_t max_write_same;    /* blocks, 0 = not reported */
};
/* VPD 0xB0; fields beyond the page's stated length read as 0. 0, or -1
 * if it is not a block limits page. */
int scsi_vpd_b0_parse(const uint8_t *d, size_t len, struct scsi_block_limits *out);

struct scsi_provisioning {
    bool lbpu, lbpws;           /* UNMAP, WRITE SAME(16) with UNMAP supported */
    bool lbprz;
};
int scsi_vpd_b2_parse(const uint8_t *d, size_t len, struct scsi_provisioning *out);

struct scsi_caching {
    bool write_protected;       /* header: WP */
    bool dpofua;                /* header: DPO and FUA honoured */
    bool page;                  /* the caching page was present */
    bool wce;                   /* a volatile write cache is enabled */
};
/* MODE SENSE(10) (ten) or (6) data with the caching page (0x08); 0, or -1
 * when the header itself is unusable. */
int scsi_mode_caching_parse(const uint8_t *d, size_t len, bool ten, struct scsi_caching *out);

#endif
