/*
 * virtio_rng.c - virtio-rng: post one device-writable buffer, poll the
 * used ring for it. The buffer is a page from the frame allocator (the
 * device writes it by DMA); the returned length is checked by virtq_get
 * against the buffer size, so the device cannot make us read beyond it.
 */
#include "dev/virtio_rng.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "dev/virtio_pci.h"
#include "mm/pmm.h"

#include <string.h>

enum { BUF_BYTES = 256, QUEUE_SIZE = 8 };

struct virtio_rng {
    struct virtio_dev vd;
    struct virtq q;
    uint64_t buf_pa;
    int up;
};

/* The one entropy device driven. */
static struct virtio_rng rng;

int virtio_rng_init(const struct pci_dev *pd)
{
    if (rng.up)
        return -1;
    if (virtio_pci_init(&rng.vd, pd) < 0 || virtio_negotiate(&rng.vd, 0) < 0 ||
        virtio_queue_setup(&rng.vd, 0, QUEUE_SIZE, &rng.q) < 0)
        return -1;
    rng.buf_pa = pmm_alloc();
    if (!rng.buf_pa) {
        virtio_fail(&rng.vd, "out of memory");
        return -1;
    }
    virtio_driver_ok(&rng.vd);
    rng.up = 1;
    return 0;
}

int virtio_rng_present(void) { return rng.up && !rng.vd.failed; }

int virtio_rng_read(void *buf, size_t n, unsigned timeout_ms)
{
    if (!virtio_rng_present())
        return -1;
    if (n > BUF_BYTES)
        n = BUF_BYTES;
    struct virtq_buf b = {.addr = rng.buf_pa, .len = (uint32_t)n, .device_writes = 1};
    if (virtq_add(&rng.q, &b, 1, &rng) < 0) {
        virtio_fail(&rng.vd, "entropy queue full");
        return -1;
    }
    virtio_kick(&rng.vd, &rng.q);
    uint64_t deadline = clock_mono_ns() + (uint64_t)timeout_ms * 1000000;
    void *cookie;
    uint32_t len;
    for (;;) {
        int r = virtq_get(&rng.q, &cookie, &len);
        if (r < 0) {
            virtio_fail(&rng.vd, rng.q.error);
            return -1;
        }
        if (r > 0)
            break;
        if (clock_mono_ns() > deadline) {
            /* The buffer stays posted; the device may still fill it, and
             * we cannot reuse it, so give up on the device. */
            virtio_fail(&rng.vd, "no entropy within the time limit");
            return -1;
        }
        cpu_relax();
    }
    memcpy(buf, phys_to_virt(rng.buf_pa), len);
    return (int)len;
}
