/*
 * virtq.h - a virtio 1.x split virtqueue seen from the driver: the
 * descriptor table, the available ring (driver -> device) and the used ring
 * (device -> driver), laid out in one physically contiguous DMA area.
 *
 * The device is untrusted. Everything the driver needs to find its own
 * buffers again (free list, chain lengths, cookies) lives in driver-private
 * memory that the device cannot reach; from device memory only the used
 * ring's index and entries are read, and each is range-checked before use.
 * A queue that sees a malformed entry is marked broken and returns errors
 * from then on: the driver resets the device rather than guess.
 *
 * No transport or allocator here, so host unit tests can drive it with a
 * simulated device (tests/unit/test_kvirtq.c).
 */
#ifndef TERN_DEV_VIRTQ_H
#define TERN_DEV_VIRTQ_H

#include <stddef.h>
#include <stdint.h>

enum {
    VIRTQ_DESC_F_NEXT = 1,
    VIRTQ_DESC_F_WRITE = 2,
    VIRTQ_USED_F_NO_NOTIFY = 1,
    VIRTQ_AVAIL_F_NO_INTERRUPT = 1,
    VIRTQ_MAX_SIZE = 32768,   /* the largest split queue the spec allows */
};

struct virtq_desc {
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
};

struct virtq_avail {
    uint16_t flags;
    uint16_t idx;
    uint16_t ring[];
};

struct virtq_used_elem {
    uint32_t id;
    uint32_t len;
};

struct virtq_used {
    uint16_t flags;
    uint16_t idx;
    struct virtq_used_elem ring[];
};

/* Driver-private state of one descriptor chain, indexed by its head. */
struct virtq_slot {
    void *cookie;
    uint32_t in_len;      /* total device-writable bytes in the chain */
    uint16_t ndesc;
    uint16_t busy;
};

struct virtq {
    uint16_t size;                       /* power of two, <= VIRTQ_MAX_SIZE */
    volatile struct virtq_desc *desc;
    volatile struct virtq_avail *avail;
    volatile struct virtq_used *used;
    uint64_t desc_pa, avail_pa, used_pa; /* bus addresses for the transport */
    uint16_t free_head, num_free;
    uint16_t avail_idx;                  /* our copy: never read back from the device */
    uint16_t last_used;
    uint16_t *next;                      /* private chain links / free list */
    struct virtq_slot *slot;
    uint16_t index;                      /* transport: queue number */
    uint32_t notify_off;                 /* transport: offset in the notify region */
    int broken;                          /* a malformed used entry was seen */
    int clamp_len;                       /* set by the driver: a used length beyond
                                            the chain's writable size is cut to it,
                                            not fatal (QEMU's virtio-scsi counts
                                            data-out bytes in it) */
    const char *error;                   /* why, for the log */
};

/* One buffer of a chain: bus address, length, and who writes it. */
struct virtq_buf {
    uint64_t addr;
    uint32_t len;
    int device_writes;
};

/* Bytes of DMA memory (rings) and of private memory for a queue of size. */
size_t virtq_ring_bytes(uint16_t size);
size_t virtq_priv_bytes(uint16_t size);
/* Lay a queue out in ring (zeroed here; bus address ring_pa) and priv.
 * Returns 0, or -1 if size is not a power of two in 1..VIRTQ_MAX_SIZE. */
int virtq_init(struct virtq *q, uint16_t size, void *ring, uint64_t ring_pa, void *priv);
/* Post a chain of n buffers (device-readable ones first) under cookie
 * (not NULL). Returns 0, or -1 if there is no room or the request is
 * malformed. The device sees it at once; call virtq_should_notify next. */
int virtq_add(struct virtq *q, const struct virtq_buf *bufs, unsigned n, void *cookie);
/* Ask the device not to interrupt when it uses buffers (a hint, 2.7.7):
 * for queues whose completions are collected lazily. */
void virtq_suppress_interrupts(struct virtq *q);
/* 1 if the device asked to be told about new buffers. */
int virtq_should_notify(const struct virtq *q);
/* Take one completed chain: 1 with *cookie and *len (bytes the device
 * wrote, never more than the chain's writable length), 0 if none, -1 if the
 * device wrote something malformed (the queue is then broken for good). */
int virtq_get(struct virtq *q, void **cookie, uint32_t *len);
/* Free descriptors. */
static inline unsigned virtq_free(const struct virtq *q) { return q->num_free; }

/* x86 keeps stores in order and loads in order (TSO), so publishing a
 * buffer and reading a completion need only stop the compiler; the one
 * store-then-load case (publish, then read the device's notify flag) needs
 * a full fence. Other architectures get real barriers here. */
static inline void virtq_wmb(void) { __asm__ volatile("" ::: "memory"); }
static inline void virtq_rmb(void) { __asm__ volatile("" ::: "memory"); }
static inline void virtq_mb(void) { __asm__ volatile("mfence" ::: "memory"); }

#endif
