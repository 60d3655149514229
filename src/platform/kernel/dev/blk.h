/*
 * blk.h - the one interface between block device drivers (virtio-blk,
 * virtio-scsi, the RAM disk of test builds) and their users (the disk
 * layout reader, the store's SQLite VFS, the boot log).
 *
 * Requests are asynchronous: the user fills a blk_req, submits it, and the
 * driver completes it exactly once, from blk_poll_all() or a *_sync helper
 * (never from an interrupt handler and never from inside blk_submit()),
 * with req->status set, by calling blk_complete(), which counts it and
 * calls req->done. Until then the request and its buffer belong to the
 * driver. A driver completes requests in any order; users that need an
 * order (write before flush) wait for the first before submitting the
 * second.
 *
 * Contract of every call, as the connection layer's transport.h does:
 *   - blk_submit: BLK_OK (queued; done will be called), or a negative
 *     status and done is NOT called: BLK_EAGAIN (queue full: poll, then
 *     retry), BLK_ERANGE (beyond the capacity, a count of 0 for anything
 *     but a flush, a flush with a count, or more than max_transfer /
 *     max_discard / max_write_zeroes allow), BLK_EUNSUPP (the device does
 *     not offer the operation, or it is a write to a read-only device),
 *     BLK_EINVAL (no buffer, unknown operation or flag, or a buffer outside
 *     the direct map), BLK_EIO (the device was given up).
 *   - done: status BLK_OK, or BLK_EIO (the device reported an error, or it
 *     was given up: see below), BLK_EUNSUPP (the device refused the
 *     operation). A failed write leaves the blocks' contents unknown: old,
 *     new or torn at logical block granularity.
 *   - Timeouts: a device with requests in flight that completes none for
 *     BLK_TIMEOUT_MS is given up: its driver resets it (so it no longer
 *     touches memory) and every request in flight completes with BLK_EIO;
 *     later submits return BLK_EIO. A request's buffer is therefore always
 *     the user's again once done was called.
 *   - Durability: a completed write is durable only after a later
 *     completed BLK_FLUSH (when topo.write_cache), or at once when it was
 *     submitted with BLK_F_FUA. A device without a volatile write cache
 *     completes BLK_FLUSH at once. blk_durable_ok() says whether a device
 *     can keep that promise at all.
 *   - Device memory and every field the device writes (status bytes, sense
 *     data, used-ring lengths, configuration) are untrusted (ADR-012): the
 *     drivers' parsers are pure functions fuzzed by fuzz_devices.
 *
 * Buffers are kernel virtual addresses in the direct map (kmalloc or the
 * frame allocator, not .data/.bss or stacks), a whole number of logical
 * blocks long, at any alignment; they need not be physically contiguous
 * (drivers split them at page boundaries).
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
    BLK_TIMEOUT_MS = 30000, /* no completion for this long: device given up */
    BLK_BLOCK_MIN = 512,    /* logical block sizes accepted from a device */
    BLK_BLOCK_MAX = 65536,
    BLK_PHYS_MAX = 1 << 20, /* largest physical block accepted (layout alignment) */
};

struct blk_topology {
    uint32_t logical_block;  /* bytes per LBA: a power of two, 512..65536 */
    uint32_t physical_block; /* bytes the device writes as a unit; a multiple
                                of logical_block (== it when not reported) */
    uint32_t optimal_io;     /* bytes; 0 when the device does not say */
    uint64_t capacity;       /* logical blocks */
    uint32_t max_transfer;   /* largest read/write the driver accepts, bytes
                                (a multiple of logical_block) */
    uint32_t max_discard;    /* logical blocks per BLK_DISCARD (if offered) */
    uint32_t max_write_zeroes; /* logical blocks per BLK_WRITE_ZEROES */
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
    /* Queue a request blk_submit checked: BLK_OK, BLK_EAGAIN, BLK_EINVAL
     * (buffer outside the direct map) or BLK_EIO. */
    int (*submit)(struct blk_dev *d, struct blk_req *req);
    /* Collect completions and blk_complete them; nonzero if any. */
    int (*poll)(struct blk_dev *d);
    /* Give the device up: stop it touching memory (reset), then
     * blk_complete every request in flight with BLK_EIO. */
    void (*fail)(struct blk_dev *d, const char *why);
    /* Optional: read the device's capacity (logical blocks) again, for a
     * disk resized while in use (virtio-blk's configuration). 0 or -1. */
    int (*capacity)(struct blk_dev *d, uint64_t *blocks);
};

struct blk_dev {
    const struct blk_ops *ops;
    void *drv;                   /* the driver's instance */
    char name[BLK_NAME_MAX];     /* "virtio-blk 00:04.0", for logs */
    char model[BLK_NAME_MAX];    /* serial / vendor+product when known, else "" */
    struct blk_topology topo;
    bool irq;                    /* completions by MSI-X (else polled) */
    bool cfg_irq;                /* configuration changes (a resize) raise an
                                    interrupt: cfg_changes counts them; else
                                    the capacity must be polled */
    volatile uint32_t cfg_changes; /* bumped by blk_config_irq(), read by users */
    volatile uint8_t cfg_cpu;    /* the CPU that took the last one: the disks'
                                    owner, whose MSI-X entries aim at it */
    /* kept by the block layer (blk.c) */
    bool failed;                 /* given up: every request fails */
    unsigned inflight;           /* submitted, not yet completed */
    uint64_t progress_ns;        /* last submit into an idle device or completion */
    uint64_t reads, writes, flushes, discards, zeroes, errors;
    uint64_t bytes_read, bytes_written;
};

/* Register a driver's device (at most BLK_MAX_DEVICES). 0 or -1 (full). */
enum { BLK_MAX_DEVICES = 8 };
int blk_register(struct blk_dev *d);
unsigned blk_count(void);
struct blk_dev *blk_get(unsigned i);

/* Check req against d's topology and hand it to the driver. Only on the
 * devices' owner (blk_set_owner): elsewhere a bug, refused with
 * BLK_EINVAL and a console line. */
int blk_submit(struct blk_dev *d, struct blk_req *req);
/* For drivers: req is finished with status; count it, call req->done. */
void blk_complete(struct blk_dev *d, struct blk_req *req, int status);
/*
 * Which CPU drives the disks (ADR-064): every registered device is
 * submitted to, polled and given up by one CPU only, its owner - CPU 0
 * until blk_set_owner hands them all to the storage core. Its driver
 * state (virtqueues, counters, inflight) then has one writer and needs no
 * lock. blk_set_cpu_fn tells the layer how to learn the calling CPU (the
 * kernel: smp_cpu_id; unset, every caller is CPU 0, as in host tests).
 */
void blk_set_cpu_fn(unsigned (*cpu_id)(void));
/* Hand every device to cpu (CPU 0, at boot, with nothing in flight:
 * panics otherwise). The devices' interrupts must be aimed at that CPU
 * (virtio_disk.h: vdisk_irq_to) for it to sleep between completions. */
int blk_set_owner(unsigned cpu); /* 0, or -1 after saying why */
/* The CPU the devices belong to. */
unsigned blk_owner(void);
/* Poll every registered device and give up those past BLK_TIMEOUT_MS;
 * nonzero when something completed. On any CPU but the owner: nothing
 * (0), and the devices are left alone. */
int blk_poll_all(void);
/* Nonzero when a device raised an interrupt this CPU has not yet polled,
 * or a polled device has requests in flight (the caller's loop must not
 * sleep then); always 0 on any CPU but the owner. Called with interrupts
 * off by the idle decision. */
int blk_irq_pending(void);
/* For drivers' interrupt handlers: completions are waiting. */
void blk_irq_raise(void);
/* For drivers' configuration-change interrupt handlers (one vector shared
 * by every disk, so it cannot say which changed): each device with cfg_irq
 * counts a change and notes the CPU it came on, and the main loop takes
 * another turn before it sleeps (so a thread waiting on cfg_changes is
 * looked at). No I/O. */
void blk_config_irq(void);
/* Give d up now (see Timeouts above), saying why on the console. */
void blk_fail(struct blk_dev *d, const char *why);

/*
 * Synchronous helpers for boot-time code (layout reader, formatter): submit
 * and poll d until done; BLK_EAGAIN is retried after polling. A device that
 * completes nothing for BLK_TIMEOUT_MS is given up (BLK_EIO). Returns the
 * request's status.
 */
int blk_read_sync(struct blk_dev *d, uint64_t lba, uint32_t count, void *buf);
int blk_write_sync(struct blk_dev *d, uint64_t lba, uint32_t count, const void *buf, uint32_t flags);
int blk_flush_sync(struct blk_dev *d);
/* BLK_DISCARD or BLK_WRITE_ZEROES of count blocks at lba. */
int blk_erase_sync(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t count);

/*
 * Whether d can hold durable data: not given up, writable, and either no
 * volatile write cache or a flush to empty it. false with *why (a phrase
 * for the console: "volatile write cache without flush") otherwise.
 */
bool blk_durable_ok(const struct blk_dev *d, const char **why);

/* Ask the driver for d's capacity again: 1 when it grew (topo.capacity
 * updated), 0 when unchanged or the driver cannot tell, -1 when the device
 * now reports less (topo.capacity kept: the disk is not shrunk under the
 * data; requests past the new end fail at the device). */
int blk_recheck_capacity(struct blk_dev *d);

/* One line: name, model, capacity, block sizes, cache, offered operations,
 * interrupts. */
void blk_describe(const struct blk_dev *d, char *buf, unsigned n);
/* Text of a status. */
const char *blk_status_text(int status);

#endif
