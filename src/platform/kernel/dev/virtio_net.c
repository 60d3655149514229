/*
 * virtio_net.c - virtio-net over the modern PCI transport. Receive is
 * interrupt-driven when MSI-X works: the receive queue's completions raise
 * an MSI-X message to a CPU vector whose handler only counts and sets a
 * flag; the main loop drains the ring when the flag is up and nothing else
 * reads it. If any step fails (no capability, a table outside its BAR, no
 * free vector, the device answering NO_VECTOR) the queue is polled on every
 * loop turn instead, and the boot log says why. Transmit completions are
 * collected lazily on each turn, so their interrupts are suppressed. Only
 * VERSION_1, MAC and STATUS are negotiated: no offloads, so every frame is
 * a plain Ethernet frame after a 12-byte header (5.1.6) that we zero on
 * transmit and ignore on receive. Receive buffers are 2 KiB halves of
 * pages, posted device-writable; a completion is accepted only if virtq.c
 * found it well formed, and a frame shorter than the header plus an
 * Ethernet header is dropped. Transmit buffers come from a free stack and
 * return to it when the device reports them used.
 */
#include "dev/virtio_net.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/lapic.h"
#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/trap.h"
#include "clock.h"
#include "console.h"
#include "dev/virtio_pci.h"
#include "mm/pmm.h"

#include <stdio.h>
#include <string.h>

enum {
    F_MAC = 5,
    F_STATUS = 16,
    S_LINK_UP = 1,
    CFG_MAC = 0,
    CFG_STATUS = 6,
    HDR = 12,                   /* struct virtio_net_hdr with VERSION_1 */
    BUF = 2048,
    QSIZE = 256,
    RXQ = 0,
    TXQ = 1,
    ETH_HDR = 14,
    TX_WAIT_NS = 2000000,
    RX_ENTRY = 0,               /* MSI-X table entry of the receive queue */
};

struct vnet {
    struct virtio_dev vd;
    struct virtq rx, tx;
    uint16_t rx_n, tx_n;                  /* buffers actually used (<= queue sizes) */
    uint64_t rx_pa[QSIZE], tx_pa[QSIZE];
    uint16_t tx_free[QSIZE];
    uint16_t tx_nfree;
    int rx_dirty;                         /* buffers posted since the last kick */
    uint8_t mac[6];
    int up;
    int msix;                             /* receive interrupts in use */
    unsigned rx_vector;
    const char *polled_why;               /* why not, for the log */
};

/* Written by the interrupt handler, read by the main loop. */
static volatile int rx_flag;
static volatile uint64_t rx_irqs;

/* The one network device driven (multi-queue and several NICs later). */
static struct vnet net;

static uint8_t *buf_va(uint64_t pa) { return phys_to_virt(pa); }

/* Cookies are index + 1: virtq cookies must not be NULL. */
static void *cookie(unsigned i) { return (void *)(uintptr_t)(i + 1); }

static int post_rx(unsigned i)
{
    struct virtq_buf b = {.addr = net.rx_pa[i], .len = BUF, .device_writes = 1};
    if (virtq_add(&net.rx, &b, 1, cookie(i)) < 0)
        return -1;
    net.rx_dirty = 1;
    return 0;
}

static int alloc_bufs(uint64_t *pa, unsigned n)
{
    for (unsigned i = 0; i < n; i += PAGE_SIZE / BUF) {
        uint64_t page = pmm_alloc();
        if (!page)
            return -1;
        for (unsigned j = 0; j < PAGE_SIZE / BUF && i + j < n; j++)
            pa[i + j] = page + (uint64_t)j * BUF;
    }
    return 0;
}

static void read_mac(void)
{
    /* Repeat until the device's configuration did not change under us. */
    for (int tries = 0; tries < 10; tries++) {
        uint8_t gen = virtio_cfg_generation(&net.vd);
        for (unsigned i = 0; i < 6; i++)
            net.mac[i] = virtio_cfg8(&net.vd, CFG_MAC + i);
        if (virtio_cfg_generation(&net.vd) == gen)
            return;
    }
}

static void on_rx_interrupt(struct trap_frame *tf)
{
    (void)tf;
    rx_irqs++;
    rx_flag = 1;
    lapic_eoi();
}

/* MSI-X on, the receive entry aimed at a fresh vector; 0 or -1 with
 * net.polled_why. The queue itself is tied to the entry afterwards. */
static int msix_setup(struct virtio_dev *vd)
{
    const char *err;
    if (virtio_msix_init(vd, &err) < 0) {
        net.polled_why = err;
        return -1;
    }
    if (!net.rx_vector)
        net.rx_vector = trap_alloc_vector(on_rx_interrupt);
    if (!net.rx_vector || msix_route(&vd->msix, RX_ENTRY, (uint8_t)net.rx_vector) < 0) {
        net.polled_why = net.rx_vector ? "MSI-X table has no entry 0" : "no free CPU vector";
        msix_stop(&vd->msix);
        return -1;
    }
    return 0;
}

int virtio_net_init(const struct pci_dev *pd)
{
    if (net.up)
        return -1;
    struct virtio_dev *vd = &net.vd;
    if (virtio_pci_init(vd, pd) < 0 ||
        virtio_negotiate(vd, 1ull << F_MAC | 1ull << F_STATUS) < 0)
        return -1;
    int accepted = 0;
    net.msix = msix_setup(vd) == 0;
    if (virtio_queue_setup_msix(vd, RXQ, QSIZE, &net.rx,
                                net.msix ? RX_ENTRY : VIRTIO_NO_VECTOR, &accepted) < 0 ||
        virtio_queue_setup(vd, TXQ, QSIZE, &net.tx) < 0)
        return -1;
    if (net.msix && !accepted) {
        net.polled_why = "the device refused the receive queue's MSI-X entry";
        net.msix = 0;
        msix_stop(&vd->msix);
    }
    virtq_suppress_interrupts(&net.tx);
    net.rx_n = net.rx.size;
    net.tx_n = net.tx.size;
    if (alloc_bufs(net.rx_pa, net.rx_n) < 0 || alloc_bufs(net.tx_pa, net.tx_n) < 0) {
        virtio_fail(vd, "out of memory for buffers");
        return -1;
    }
    if (vd->features & (1ull << F_MAC)) {
        read_mac();
    } else {
        /* A locally administered address from the PCI location. */
        uint8_t m[6] = {0x02, 0x74, 0x65, pd->bus, pd->dev, pd->fn};
        memcpy(net.mac, m, 6);
    }
    if (vd->failed) {
        virtio_fail(vd, "device configuration too small");
        return -1;
    }
    for (unsigned i = 0; i < net.tx_n; i++)
        net.tx_free[i] = (uint16_t)i;
    net.tx_nfree = net.tx_n;
    for (unsigned i = 0; i < net.rx_n; i++)
        post_rx(i);
    if (net.msix)
        msix_start(&vd->msix);
    virtio_driver_ok(vd);
    virtio_kick(vd, &net.rx);
    net.rx_dirty = 0;
    net.up = 1;
    if (net.msix)
        kprintf("tern: virtio-net %02x:%02x.%u: receive interrupts by MSI-X (vector %u)\n",
                pd->bus, pd->dev, pd->fn, net.rx_vector);
    else
        kprintf("tern: virtio-net %02x:%02x.%u: polled (%s)\n", pd->bus, pd->dev, pd->fn,
                net.polled_why);
    return 0;
}

int virtio_net_rx_take(void)
{
    if (!net.msix)
        return 1;
    return __atomic_exchange_n(&rx_flag, 0, __ATOMIC_SEQ_CST);
}

void virtio_net_rx_again(void)
{
    if (net.msix)
        rx_flag = 1;
}

int virtio_net_rx_flagged(void) { return net.msix && rx_flag; }

void virtio_net_irq_describe(char *buf, size_t n)
{
    if (net.msix)
        snprintf(buf, n, "msi-x, %llu interrupts", (unsigned long long)rx_irqs);
    else
        snprintf(buf, n, "polled");
}

int virtio_net_present(void) { return net.up && !net.vd.failed; }

void virtio_net_mac(uint8_t mac[6]) { memcpy(mac, net.mac, 6); }

int virtio_net_link_up(void)
{
    if (!(net.vd.features & (1ull << F_STATUS)))
        return 1;
    return virtio_cfg16(&net.vd, CFG_STATUS) & S_LINK_UP;
}

static int broken(struct virtq *q)
{
    virtio_fail(&net.vd, q->error);
    return -1;
}

int virtio_net_rx(const uint8_t **frame, uint32_t *len, unsigned *token)
{
    if (!virtio_net_present())
        return -1;
    for (;;) {
        void *c;
        uint32_t n;
        int r = virtq_get(&net.rx, &c, &n);
        if (r <= 0)
            return r < 0 ? broken(&net.rx) : 0;
        unsigned i = (unsigned)((uintptr_t)c - 1);   /* our own cookie: in range */
        if (n < HDR + ETH_HDR) {
            post_rx(i);                              /* runt: drop, reuse */
            continue;
        }
        *frame = buf_va(net.rx_pa[i]) + HDR;
        *len = n - HDR;
        *token = i;
        return 1;
    }
}

void virtio_net_rx_release(unsigned token)
{
    if (token < net.rx_n)
        post_rx(token);
}

static int reclaim_tx(void)
{
    int n = 0;
    void *c;
    uint32_t len;
    int r;
    while ((r = virtq_get(&net.tx, &c, &len)) > 0) {
        net.tx_free[net.tx_nfree++] = (uint16_t)((uintptr_t)c - 1);
        n++;
    }
    return r < 0 ? broken(&net.tx) : n;
}

uint8_t *virtio_net_tx_buf(unsigned *token)
{
    if (!virtio_net_present())
        return NULL;
    /* All buffers in flight: the device is working on them (in QEMU, in
     * another thread), so wait a little rather than make lwIP drop the
     * segment and retry only on its next timer, 250 ms away. */
    uint64_t deadline = 0;
    while (net.tx_nfree == 0) {
        if (reclaim_tx() < 0)
            return NULL;
        if (net.tx_nfree)
            break;
        uint64_t t = clock_mono_ns();
        if (!deadline)
            deadline = t + TX_WAIT_NS;
        else if (t > deadline)
            return NULL;
        cpu_relax();
    }
    unsigned i = net.tx_free[--net.tx_nfree];
    *token = i;
    uint8_t *b = buf_va(net.tx_pa[i]);
    memset(b, 0, HDR);
    return b + HDR;
}

int virtio_net_tx_send(unsigned token, uint32_t len)
{
    if (token >= net.tx_n)
        return -1;
    struct virtq_buf b = {.addr = net.tx_pa[token], .len = HDR + len, .device_writes = 0};
    if (len > VIRTIO_NET_FRAME_MAX || virtq_add(&net.tx, &b, 1, cookie(token)) < 0) {
        net.tx_free[net.tx_nfree++] = (uint16_t)token;
        return -1;
    }
    virtio_kick(&net.vd, &net.tx);
    return 0;
}

int virtio_net_service(void)
{
    if (!virtio_net_present())
        return -1;
    if (net.rx_dirty) {
        net.rx_dirty = 0;
        virtio_kick(&net.vd, &net.rx);
    }
    return reclaim_tx();
}
