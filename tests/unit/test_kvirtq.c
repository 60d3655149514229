/*
 * test_kvirtq.c - the kernel's split virtqueue (dev/virtq.c) on the host,
 * under ASan/UBSan, against a simulated device that consumes the available
 * ring and fills the used ring the way a virtio device does. Then a hostile
 * device: used entries with ids out of range, ids not in flight, lengths
 * beyond the buffer, and an index running ahead must each be rejected
 * without touching memory outside the queue.
 */
#include "test.h"

#include "platform/kernel/dev/virtq.c"

#include <stdlib.h>

struct sim {
    struct virtq q;
    void *ring, *priv;
    uint16_t dev_avail;      /* next available entry the device will take */
    uint16_t dev_used;       /* the device's used index */
};

static void sim_open(struct sim *s, uint16_t size)
{
    memset(s, 0, sizeof *s);
    s->ring = aligned_alloc(4096, (virtq_ring_bytes(size) + 4095) / 4096 * 4096);
    s->priv = aligned_alloc(16, (virtq_priv_bytes(size) + 15) / 16 * 16);
    virtq_init(&s->q, size, s->ring, 0x100000, s->priv);
}

static void sim_close(struct sim *s)
{
    free(s->ring);
    free(s->priv);
}

/* The device completes the next available chain, reporting len written
 * (or the chain's writable total when len < 0). Returns the head. */
static int dev_complete(struct sim *s, long len)
{
    struct virtq *q = &s->q;
    if (s->dev_avail == q->avail->idx)
        return -1;
    uint16_t head = q->avail->ring[s->dev_avail++ & (q->size - 1)];
    uint32_t writable = 0;
    for (uint16_t d = head, n = 0;; n++) {
        if (n > q->size)
            return -2; /* a descriptor loop: the driver wrote a bad chain */
        if (q->desc[d].flags & VIRTQ_DESC_F_WRITE)
            writable += q->desc[d].len;
        if (!(q->desc[d].flags & VIRTQ_DESC_F_NEXT))
            break;
        d = q->desc[d].next;
    }
    q->used->ring[s->dev_used & (q->size - 1)] =
        (struct virtq_used_elem){head, len < 0 ? writable : (uint32_t)len};
    s->dev_used++;
    q->used->idx = s->dev_used;
    return head;
}

/* The device writes a raw used entry (for the hostile cases). */
static void dev_raw(struct sim *s, uint32_t id, uint32_t len)
{
    struct virtq *q = &s->q;
    q->used->ring[s->dev_used & (q->size - 1)] = (struct virtq_used_elem){id, len};
    s->dev_used++;
    q->used->idx = s->dev_used;
}

TEST(kvirtq_init_rejects_bad_sizes)
{
    struct virtq q;
    static uint8_t ring[65536], priv[8192];
    CHECK_EQ(virtq_init(&q, 0, ring, 0, priv), -1);
    CHECK_EQ(virtq_init(&q, 3, ring, 0, priv), -1);
    CHECK_EQ(virtq_init(&q, 100, ring, 0, priv), -1);
    CHECK_EQ(virtq_init(&q, 256, ring, 0, priv), 0);
    CHECK_EQ(q.num_free, 256);
    CHECK_EQ(q.avail_pa - q.desc_pa, 16 * 256);
    CHECK(q.used_pa % 4 == 0 && q.used_pa > q.avail_pa + 6 + 2 * 256 - 1);
}

TEST(kvirtq_add_get_roundtrip_and_wraparound)
{
    struct sim s;
    sim_open(&s, 8);
    int cookies[8];
    /* Far more than 65536 operations, so both 16-bit indices wrap. */
    for (unsigned round = 0; round < 70000; round++) {
        unsigned k = round % 8;
        struct virtq_buf b = {.addr = 0x2000 + 64 * k, .len = 64, .device_writes = 1};
        CHECK_EQ(virtq_add(&s.q, &b, 1, &cookies[k]), 0);
        CHECK(dev_complete(&s, 10 + (long)k) >= 0);
        void *c;
        uint32_t len;
        CHECK_EQ(virtq_get(&s.q, &c, &len), 1);
        CHECK(c == &cookies[k]);
        CHECK_EQ(len, 10 + k);
        CHECK_EQ(virtq_get(&s.q, &c, &len), 0);
    }
    CHECK_EQ(s.q.num_free, 8);
    sim_close(&s);
}

TEST(kvirtq_fills_up_and_recovers_out_of_order)
{
    struct sim s;
    sim_open(&s, 16);
    int token[16];
    /* Chains of 3 (1 readable + 2 writable): 5 fit, the 6th does not. */
    for (int i = 0; i < 6; i++) {
        struct virtq_buf b[3] = {{0x1000, 12, 0}, {0x2000, 100, 1}, {0x3000, 200, 1}};
        CHECK_EQ(virtq_add(&s.q, b, 3, &token[i]), i < 5 ? 0 : -1);
    }
    CHECK_EQ(virtq_free(&s.q), 1);
    /* The device completes them; the driver may get them in any order the
     * device chose: here the device takes them in order but we check every
     * chain's length is bounded by its 300 writable bytes. */
    for (int i = 0; i < 5; i++)
        CHECK(dev_complete(&s, -1) >= 0);
    for (int i = 0; i < 5; i++) {
        void *c;
        uint32_t len;
        CHECK_EQ(virtq_get(&s.q, &c, &len), 1);
        CHECK(c == &token[i]);
        CHECK_EQ(len, 300);
    }
    CHECK_EQ(virtq_free(&s.q), 16);
    /* Free-list reuse: a full queue of single buffers works after chains. */
    for (int i = 0; i < 16; i++) {
        struct virtq_buf b = {0x4000, 8, 1};
        CHECK_EQ(virtq_add(&s.q, &b, 1, &token[i % 16]), 0);
    }
    struct virtq_buf b = {0x4000, 8, 1};
    CHECK_EQ(virtq_add(&s.q, &b, 1, &token[0]), -1);
    sim_close(&s);
}

TEST(kvirtq_rejects_malformed_requests)
{
    struct sim s;
    sim_open(&s, 8);
    int t;
    struct virtq_buf wr_then_rd[2] = {{0x1000, 8, 1}, {0x2000, 8, 0}};
    CHECK_EQ(virtq_add(&s.q, wr_then_rd, 2, &t), -1);
    struct virtq_buf one = {0x1000, 8, 1};
    CHECK_EQ(virtq_add(&s.q, &one, 1, NULL), -1);
    CHECK_EQ(virtq_add(&s.q, &one, 0, &t), -1);
    struct virtq_buf huge[2] = {{0x1000, 0xFFFFFFFF, 1}, {0x2000, 2, 1}};
    CHECK_EQ(virtq_add(&s.q, huge, 2, &t), -1);
    CHECK_EQ(virtq_free(&s.q), 8);
    sim_close(&s);
}

/* Post two buffers, then let the device write a bad entry. */
static int hostile(uint32_t id, uint32_t len, uint16_t used_jump)
{
    struct sim s;
    sim_open(&s, 8);
    int t[2];
    struct virtq_buf b = {0x1000, 100, 1};
    virtq_add(&s.q, &b, 1, &t[0]);
    virtq_add(&s.q, &b, 1, &t[1]);
    dev_raw(&s, id, len);
    if (used_jump) {
        s.dev_used = (uint16_t)(s.dev_used + used_jump);
        s.q.used->idx = s.dev_used;
    }
    void *c;
    uint32_t n;
    int r = virtq_get(&s.q, &c, &n);
    /* Broken is sticky. */
    int again = virtq_get(&s.q, &c, &n);
    int add = virtq_add(&s.q, &b, 1, &t[0]);
    int ok = r == -1 && again == -1 && add == -1 && s.q.broken && s.q.error;
    sim_close(&s);
    return ok;
}

TEST(kvirtq_rejects_hostile_used_entries)
{
    CHECK(hostile(8, 10, 0));              /* id == size */
    CHECK(hostile(0xFFFFFFFF, 10, 0));     /* id far out of range */
    CHECK(hostile(5, 10, 0));              /* id in range but never posted */
    CHECK(hostile(0, 101, 0));             /* longer than the buffer */
    CHECK(hostile(0, 0xFFFFFFFF, 0));
    CHECK(hostile(0, 10, 1000));           /* index ran far ahead */
    CHECK(hostile(0, 10, 2));              /* more completions than posted */
}

TEST(kvirtq_clamp_len_cuts_an_overlong_used_length_to_the_buffer)
{
    struct sim s;
    sim_open(&s, 8);
    s.q.clamp_len = 1;
    int t;
    struct virtq_buf b[2] = {{0x1000, 4096, 0}, {0x3000, 108, 1}};
    CHECK_EQ(virtq_add(&s.q, b, 2, &t), 0);
    dev_raw(&s, 0, 4096 + 108);            /* data-out counted, as QEMU's virtio-scsi does */
    void *c;
    uint32_t n;
    CHECK_EQ(virtq_get(&s.q, &c, &n), 1);
    CHECK(c == &t);
    CHECK_EQ(n, 108);
    CHECK(!s.q.broken);
    dev_raw(&s, 5, 10);                    /* ids are still checked */
    CHECK_EQ(virtq_get(&s.q, &c, &n), -1);
    sim_close(&s);
}

TEST(kvirtq_rejects_double_completion)
{
    struct sim s;
    sim_open(&s, 8);
    int t;
    struct virtq_buf b = {0x1000, 100, 1};
    CHECK_EQ(virtq_add(&s.q, &b, 1, &t), 0);
    CHECK_EQ(virtq_add(&s.q, &b, 1, &t), 0);
    int head = dev_complete(&s, 5);
    void *c;
    uint32_t n;
    CHECK_EQ(virtq_get(&s.q, &c, &n), 1);
    dev_raw(&s, (uint32_t)head, 5); /* the same chain again */
    CHECK_EQ(virtq_get(&s.q, &c, &n), -1);
    CHECK(s.q.broken);
    sim_close(&s);
}

TEST(kvirtq_notify_suppression)
{
    struct sim s;
    sim_open(&s, 8);
    CHECK(virtq_should_notify(&s.q));
    s.q.used->flags = VIRTQ_USED_F_NO_NOTIFY;
    CHECK(!virtq_should_notify(&s.q));
    sim_close(&s);
}

TEST(kvirtq_interrupt_suppression_is_visible_to_the_device)
{
    struct sim s;
    sim_open(&s, 8);
    CHECK_EQ(s.q.avail->flags, 0);       /* interrupts wanted by default */
    virtq_suppress_interrupts(&s.q);
    CHECK_EQ(s.q.avail->flags, VIRTQ_AVAIL_F_NO_INTERRUPT);
    /* Posting buffers does not undo it. */
    struct virtq_buf b = {.addr = 0x2000, .len = 64, .device_writes = 0};
    CHECK_EQ(virtq_add(&s.q, &b, 1, (void *)1), 0);
    CHECK_EQ(s.q.avail->flags, VIRTQ_AVAIL_F_NO_INTERRUPT);
    sim_close(&s);
}
