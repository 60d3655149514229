/*
 * net.c - lwIP (NO_SYS, raw API) on the virtio-net driver, with a static
 * address from the configuration or one from DHCP. A /32 address routes
 * everything through its gateway, which lwIP then reaches on the link
 * (etharp_output asks for the gateway's hardware address directly). Frames are
 * copied between the driver's DMA buffers and pbufs: on receive into a
 * pool pbuf (the DMA buffer is reposted at once), on transmit out of the
 * pbuf chain into a free transmit buffer. lwIP's timers run from
 * sys_check_timeouts() on every poll; sys_now() is the kernel's monotonic
 * clock in milliseconds.
 */
#include "net/net.h"

#include "clock.h"
#include "console.h"
#include "dev/virtio_net.h"
#include "dev/virtio_pci.h"

#include "lwip/dhcp.h"
#include "lwip/etharp.h"
#include "lwip/init.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"

#include <stdio.h>
#include <string.h>

/* Frames handed to lwIP per poll: its work on them (segments, acks,
 * callbacks) is bounded so that the broker's turn comes soon. Frames the
 * gate refuses (a storm's SYNs) cost a parse and a hash each and have a
 * budget of their own, the whole receive ring: under a storm they are
 * most of what arrives, and counted against lwIP's budget they left the
 * ring full between polls, so QEMU stopped taking frames and the host
 * dropped them whatever they were (established clients' segments, the
 * ACKs that finish admitted handshakes), which cost those clients
 * retransmission timeouts of seconds (docs/PERFORMANCE.md, "The kernel's
 * storm on a tap network"). */
enum { RX_BUDGET = 64, RX_GATE_BUDGET = 256 };

struct net {
    struct netif netif;
    int up;
    int static_ip;
    int link;
    unsigned long rx_dropped, tx_dropped;
    net_rx_gate gate; /* sees each frame before lwIP (net_set_rx_gate) */
    void *gate_ctx;
};

/* The one interface (lwIP keeps pointers to it). */
static struct net knet;

void net_set_rx_gate(net_rx_gate gate, void *ctx)
{
    knet.gate = gate;
    knet.gate_ctx = ctx;
}

u32_t sys_now(void);
u32_t sys_now(void) { return (u32_t)(clock_mono_ns() / 1000000); }

static err_t linkoutput(struct netif *nif, struct pbuf *p)
{
    (void)nif;
    unsigned token;
    uint8_t *buf = virtio_net_tx_buf(&token);
    if (!buf || p->tot_len > VIRTIO_NET_FRAME_MAX) {
        if (buf)
            virtio_net_tx_send(token, VIRTIO_NET_FRAME_MAX + 1); /* returns it unused */
        knet.tx_dropped++;
        return ERR_MEM;
    }
    u16_t n = pbuf_copy_partial(p, buf, p->tot_len, 0);
    if (virtio_net_tx_send(token, n) < 0) {
        knet.tx_dropped++;
        return ERR_IF;
    }
    return ERR_OK;
}

static err_t netif_setup(struct netif *nif)
{
    nif->name[0] = 'v';
    nif->name[1] = 'n';
    nif->hwaddr_len = ETH_HWADDR_LEN;
    virtio_net_mac(nif->hwaddr);
    nif->mtu = VIRTIO_NET_MTU;
    nif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
    nif->output = etharp_output;
    nif->linkoutput = linkoutput;
    netif_set_hostname(nif, "tern");
    return ERR_OK;
}

int net_init(const struct pci_dev *devs, unsigned n, const tern_config_net *cfg)
{
    for (unsigned i = 0; i < n && !virtio_net_present(); i++)
        if (virtio_pci_type(&devs[i]) == VIRTIO_ID_NET)
            virtio_net_init(&devs[i]);
    if (!virtio_net_present())
        return -1;
    lwip_init();
    if (cfg && cfg->ipv4.set) {
        const uint8_t *a = cfg->ipv4.addr, *g = cfg->gateway.addr;
        unsigned prefix = cfg->ipv4.prefix; /* 1..32, checked by the parser */
        ip4_addr_t ip, mask, gw;
        IP4_ADDR(&ip, a[0], a[1], a[2], a[3]);
        ip4_addr_set_u32(&mask, lwip_htonl(prefix >= 32 ? 0xFFFFFFFFu
                                                         : ~(0xFFFFFFFFu >> prefix)));
        if (cfg->gateway.set)
            IP4_ADDR(&gw, g[0], g[1], g[2], g[3]);
        else
            ip4_addr_set_any(&gw);
        if (!netif_add(&knet.netif, &ip, &mask, &gw, NULL, netif_setup, ethernet_input))
            return -1;
        knet.static_ip = 1;
    } else if (!netif_add_noaddr(&knet.netif, NULL, netif_setup, ethernet_input)) {
        return -1;
    }
    netif_set_default(&knet.netif);
    netif_set_up(&knet.netif);
    knet.link = virtio_net_link_up();
    if (knet.link)
        netif_set_link_up(&knet.netif);
    if (!knet.static_ip && dhcp_start(&knet.netif) != ERR_OK)
        return -1;
    knet.up = 1;
    return 0;
}

int net_poll(void)
{
    if (!knet.up)
        return 0;
    int work = 0, gated = 0;
    const uint8_t *frame;
    uint32_t len;
    unsigned token;
    /* With MSI-X the ring is read only after an interrupt said so. */
    if (virtio_net_rx_take()) {
        while (work < RX_BUDGET && gated < RX_GATE_BUDGET &&
               virtio_net_rx(&frame, &len, &token) > 0) {
            if (knet.gate && !knet.gate(knet.gate_ctx, frame, len)) {
                virtio_net_rx_release(token); /* refused before lwIP: no pbuf, no answer */
                gated++;
                continue;
            }
            struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_POOL);
            if (p) {
                pbuf_take(p, frame, (u16_t)len);
                virtio_net_rx_release(token);
                if (knet.netif.input(p, &knet.netif) != ERR_OK)
                    pbuf_free(p);
            } else {
                virtio_net_rx_release(token);
                knet.rx_dropped++;
            }
            work++;
        }
        if (work == RX_BUDGET || gated == RX_GATE_BUDGET)
            virtio_net_rx_again();
        work += gated;
    }
    int done = virtio_net_service();
    if (done > 0)
        work += done;
    int link = virtio_net_link_up();
    if (link != knet.link) {
        knet.link = link;
        if (link)
            netif_set_link_up(&knet.netif);
        else
            netif_set_link_down(&knet.netif);
    }
    sys_check_timeouts();
    return work;
}

int net_irq_pending(void) { return knet.up && virtio_net_rx_flagged(); }

int net_has_address(void)
{
    return knet.up && (knet.static_ip || dhcp_supplied_address(&knet.netif));
}

int net_ipv4(char *addr, size_t n, unsigned *prefix, int *dhcp)
{
    if (!net_has_address())
        return 0;
    ip4addr_ntoa_r(netif_ip4_addr(&knet.netif), addr, (int)n);
    *prefix = 0;
    for (u32_t mask = ip4_addr_get_u32(netif_ip4_netmask(&knet.netif)); mask; mask &= mask - 1)
        (*prefix)++;
    *dhcp = !knet.static_ip;
    return 1;
}

void net_describe(char *buf, size_t n)
{
    if (!knet.up) {
        snprintf(buf, n, "no virtio-net device");
        return;
    }
    const uint8_t *m = knet.netif.hwaddr;
    char mac[24], irq[40];
    snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
             m[5]);
    virtio_net_irq_describe(irq, sizeof irq);
    if (!net_has_address()) {
        snprintf(buf, n, "%s link %s, dhcp pending; %s", mac, knet.link ? "up" : "down", irq);
        return;
    }
    char ip[16], gw[16] = "none";
    ip4addr_ntoa_r(netif_ip4_addr(&knet.netif), ip, sizeof ip);
    if (!ip4_addr_isany(netif_ip4_gw(&knet.netif)))
        ip4addr_ntoa_r(netif_ip4_gw(&knet.netif), gw, sizeof gw);
    unsigned prefix = 0;
    for (u32_t mask = ip4_addr_get_u32(netif_ip4_netmask(&knet.netif)); mask; mask &= mask - 1)
        prefix++;
    snprintf(buf, n, "%s link %s, %s %s/%u gw %s; %s", mac, knet.link ? "up" : "down",
             knet.static_ip ? "static" : "dhcp", ip, prefix, gw, irq);
}
