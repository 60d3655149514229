/*
 * virtq.c - split virtqueue bookkeeping (virtio 1.x, 2.7). Descriptors are
 * handed out from a free list kept in private memory (q->next), never from
 * the `next` fields in the shared table, which the device could rewrite.
 * Completions are validated before anything is trusted: the used index may
 * run at most one queue ahead of us, an id must name the head of a chain we
 * posted and have not had back yet, and a length must fit the chain's
 * device-writable space.
 */
#include "virtq.h"

#include <string.h>

static size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

static size_t avail_off(uint16_t size) { return (size_t)16 * size; }

/* The used ring starts on its own cache line (the device writes it, we
 * write the other two: no false sharing). */
static size_t used_off(uint16_t size)
{
    return align_up(avail_off(size) + 6 + (size_t)2 * size, 64);
}

size_t virtq_ring_bytes(uint16_t size)
{
    return used_off(size) + 6 + (size_t)8 * size;
}

size_t virtq_priv_bytes(uint16_t size)
{
    return align_up((size_t)2 * size, 16) + sizeof(struct virtq_slot) * size;
}

int virtq_init(struct virtq *q, uint16_t size, void *ring, uint64_t ring_pa, void *priv)
{
    if (size == 0 || size > VIRTQ_MAX_SIZE || (size & (size - 1)))
        return -1;
    memset(q, 0, sizeof *q);
    memset(ring, 0, virtq_ring_bytes(size));
    memset(priv, 0, virtq_priv_bytes(size));
    q->size = size;
    q->desc = ring;
    q->avail = (void *)((char *)ring + avail_off(size));
    q->used = (void *)((char *)ring + used_off(size));
    q->desc_pa = ring_pa;
    q->avail_pa = ring_pa + avail_off(size);
    q->used_pa = ring_pa + used_off(size);
    q->next = priv;
    q->slot = (void *)((char *)priv + align_up((size_t)2 * size, 16));
    for (uint16_t i = 0; i < size; i++)
        q->next[i] = (uint16_t)(i + 1); /* the last link is never followed */
    q->free_head = 0;
    q->num_free = size;
    return 0;
}

int virtq_add(struct virtq *q, const struct virtq_buf *bufs, unsigned n, void *cookie)
{
    if (q->broken || n == 0 || n > q->num_free || !cookie)
        return -1;
    /* Readable buffers must precede writable ones (2.7.4.2). */
    uint32_t in_len = 0;
    for (unsigned i = 0; i < n; i++) {
        if (i > 0 && bufs[i - 1].device_writes && !bufs[i].device_writes)
            return -1;
        if (bufs[i].device_writes) {
            if (bufs[i].len > UINT32_MAX - in_len)
                return -1;
            in_len += bufs[i].len;
        }
    }

    uint16_t head = q->free_head, d = head;
    for (unsigned i = 0; i < n; i++) {
        volatile struct virtq_desc *e = &q->desc[d];
        e->addr = bufs[i].addr;
        e->len = bufs[i].len;
        uint16_t flags = bufs[i].device_writes ? VIRTQ_DESC_F_WRITE : 0;
        uint16_t nd = q->next[d];
        if (i + 1 < n) {
            flags |= VIRTQ_DESC_F_NEXT;
            e->next = nd;
        } else {
            e->next = 0;
        }
        e->flags = flags;
        d = nd;
    }
    q->free_head = d;
    q->num_free = (uint16_t)(q->num_free - n);
    q->slot[head] = (struct virtq_slot){
        .cookie = cookie, .in_len = in_len, .ndesc = (uint16_t)n, .busy = 1,
    };

    q->avail->ring[q->avail_idx & (q->size - 1)] = head;
    /* The descriptors and ring entry must be visible before the index. */
    virtq_wmb();
    q->avail_idx++;
    q->avail->idx = q->avail_idx;
    return 0;
}

void virtq_suppress_interrupts(struct virtq *q)
{
    q->avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;
}

int virtq_should_notify(const struct virtq *q)
{
    /* Our index store must land before we read the device's flag, or we
     * could miss a device that just went back to sleep. */
    virtq_mb();
    return !(q->used->flags & VIRTQ_USED_F_NO_NOTIFY);
}

static int fail(struct virtq *q, const char *why)
{
    q->broken = 1;
    q->error = why;
    return -1;
}

int virtq_get(struct virtq *q, void **cookie, uint32_t *len)
{
    if (q->broken)
        return -1;
    uint16_t used_idx = q->used->idx;
    if (used_idx == q->last_used)
        return 0;
    uint16_t pending = (uint16_t)(used_idx - q->last_used);
    if (pending > q->size - q->num_free)
        return fail(q, "used index ran ahead of the buffers posted");
    /* Read the entry only after seeing the index that covers it. */
    virtq_rmb();
    volatile struct virtq_used_elem *u = &q->used->ring[q->last_used & (q->size - 1)];
    uint32_t id = u->id, n = u->len;
    if (id >= q->size)
        return fail(q, "used entry names a descriptor out of range");
    struct virtq_slot *s = &q->slot[id];
    if (!s->busy)
        return fail(q, "used entry names a chain not in flight");
    if (n > s->in_len) {
        if (!q->clamp_len)
            return fail(q, "used length exceeds the buffer's writable size");
        n = s->in_len;
    }

    /* Give the chain back to the free list by its private links. */
    uint16_t last = (uint16_t)id;
    for (uint16_t i = 1; i < s->ndesc; i++)
        last = q->next[last];
    q->next[last] = q->free_head;
    q->free_head = (uint16_t)id;
    q->num_free = (uint16_t)(q->num_free + s->ndesc);

    *cookie = s->cookie;
    *len = n;
    *s = (struct virtq_slot){0};
    q->last_used++;
    return 1;
}
