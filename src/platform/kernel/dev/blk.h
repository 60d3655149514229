/*
 * blk.h - the one interface between block device drivers (virtio-blk,
 * virtio-scsi, the RAM disk of test builds) and their users (the disk
 * layout reader, the store's SQLite VFS, the boot log).
 *
 * Requests are asynchronous: the user fills a blk_req, submits it, and the
 * driver calls req->done exactly once, from blk_poll() (never from an
 * interrupt handler and never from inside blk_submit()), with req->status
 * set. Until then the request and its buffer belong to the driver. A
 * driver completes requests in any order; users that need an order (write
 * before flush) wait for the first before submitting the second.
 *
 * Contract of every call, as the connection layer's transport.h does:
 *   - blk_submit: BLK_OK (queued; done will be called), or a negative
 *     status and done is NOT called: BLK_EAGAIN (queue full: poll, then
 *     retry), BLK_ERANGE (beyond the capacity, or a count of 0 for a read
 *     or write), BLK_EUNSUPP (the device does not offer the operation),
 *     BLK_EINVAL (buffer misaligned or not in the direct map), BLK_EIO
 *     (the device is broken for good).
 *   - done: status BLK_OK, or BLK_EIO (the device reported an error or the
 *     request timed out), BLK_EUNSUPP (the device refused the operation).
 *     A failed write leaves the blocks' contents unknown: old, new or torn
 *     at logical block granularity.
 *   - Durability: a completed write is durable only after a later
 *     completed BLK_FLUSH (when topo.write_cache), or at once when it was
 *     submitted with BLK_F_FUA. A device without a volatile write cache
 *     completes BLK_FLUSH at once.
 *   - Device memory and every field the device writes (status bytes, sense
 *     data, used-ring lengths, configuration) are untrusted (ADR-012): the
 *     drivers' parsers are pure functions fuzzed by fuzz_devices.
 *
 * Buffers are kernel virtual addresses in the direct map (kmalloc or the
 * frame allocator, not .data/.bss), aligned to 512 bytes, a whole number of
 * logical blocks long; they need not be physically contiguous (drivers
 * split them at page boundaries).
 */
#ifndef TERN_DEV_BLK_H
#define TERN_DEV_BLK_H

#include <stdbool.h>
#include <stdint.h>

enum blk_op {
    BLK_READ = 0,
    BLK_WRITE,
    BLK_FLUSH,        /* make every completed write durable */
    BLK_DISCARD,      /* the blocks' contents become unspecified */
    BLK_WRITE_ZEROES, /* the blocks read back as zeroes */
};

enum blk_status {
    BLK_OK = 0,
    BLK_EIO = -1,
    BLK_EUNSUPP = -2,
    BLK_ERANGE = -3,
    BLK_EINVAL = -4,
    BLK_EAGAIN = -5,
};

enum {
    BLK_F_FUA = 1, /* BLK_WRITE: durable when done (topo.fua only) */
    BLK_NAME_MAX = 48,
};

struct blk_topology {
    uint32_t logical_block;  /* bytes per LBA: 512 or 4096 */
    uint32_t physical_block; /* bytes the device writes as a unit; a multiple
                                of logical_block (== it when not reported) */
    uint32_t optimal_io;     /* bytes; 0 when the device does not say */
    uint64_t capacity;       /* logical blocks */
    uint32_t max_transfer;   /* largest read/write the driver accepts, bytes */
    bool write_cache;        /* a volatile write cache: writes need a flush */
    bool flush;              /* BLK_FLUSH is offered */
    bool fua;                /* BLK_F_FUA is honoured */
    bool discard;            /* BLK_DISCARD is offered */
    bool write_zeroes;       /* BLK_WRITE_ZEROES is offered */
    bool read_only;
};

struct blk_req;
typedef void (*blk_done_fn)(struct blk_req *req);

struct blk_req {
    /* set by the user before blk_submit; not changed by the driver */
    enum blk_op op;
    uint32_t flags;          /* BLK_F_* */
    uint64_t lba;            /* first logical block */
    uint32_t count;          /* logical blocks (0 for BLK_FLUSH) */
    void *buf;               /* READ/WRITE: count * logical_block bytes */
    blk_done_fn done;
    void *ctx;               /* the user's */
    /* set by the driver before done is called */
    int status;              /* enum blk_status */
    /* the driver's while the request is in flight */
    void *drv;
};

struct blk_dev;

/* What a driver provides; the block layer calls nothing else. */
struct blk_ops {
    int (*submit)(struct blk_dev *d, struct blk_req *req);
    /* Collect completions and call their done; nonzero if any. */
    int (*poll)(struct blk_dev *d);
};

struct blk_dev {
    const struct blk_ops *ops;
    void *drv;                   /* the driver's instance */
    char name[BLK_NAME_MAX];     /* "virtio-blk 00:04.0", for logs */
    char model[BLK_NAME_MAX];    /* serial / vendor+product when known, else "" */
    struct blk_topology topo;
    bool irq;                    /* completions by MSI-X (else polled) */
    /* counters, kept by the block layer (blk.c) */
    uint64_t reads, writes, flushes, errors;
    uint64_t bytes_read, bytes_written;
};

/* Register a driver's device (at most BLK_MAX_DEVICES). 0 or -1 (full). */
enum { BLK_MAX_DEVICES = 8 };
int blk_register(struct blk_dev *d);
unsigned blk_count(void);
struct blk_dev *blk_get(unsigned i);

/* Check req against d's topology and hand it to the driver; counts it. */
int blk_submit(struct blk_dev *d, struct blk_req *req);
/* Poll every registered device; nonzero when something completed. */
int blk_poll_all(void);
/* Nonzero when a device raised an interrupt not yet polled. */
int blk_irq_pending(void);

/*
 * Synchronous helpers for boot-time code (layout reader, formatter): submit
 * and poll until done or timeout_ms passed. A request that times out is
 * never reused: the device is given up (its driver resets it). Returns the
 * request's status.
 */
int blk_read_sync(struct blk_dev *d, uint64_t lba, uint32_t count, void *buf);
int blk_write_sync(struct blk_dev *d, uint64_t lba, uint32_t count, const void *buf, uint32_t flags);
int blk_flush_sync(struct blk_dev *d);

/* One line: name, capacity, block sizes, cache, offered operations. */
void blk_describe(const struct blk_dev *d, char *buf, unsigned n);
/* Text of a status. */
const char *blk_status_text(int status);

#endif
