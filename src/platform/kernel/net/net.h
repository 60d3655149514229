/*
 * net.h - the kernel's network stack: lwIP over the virtio-net device, an
 * IPv4 address from the configuration (net.ipv4, net.gateway) or else from
 * DHCP, serviced from the main loop.
 */
#ifndef TERN_NET_NET_H
#define TERN_NET_NET_H

#include "config/config.h"
#include "dev/pci.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Find and bring up the first virtio-net device among devs, start lwIP with
 * the static address in cfg (when cfg->ipv4.set) or else DHCP. Returns 0,
 * or -1 if there is no usable device. */
int net_init(const struct pci_dev *devs, unsigned n, const tern_config_net *cfg);
/* A look at every received frame before lwIP's: false drops the frame
 * unseen (the server's SYN admission, serve/tcp.c). One gate; NULL: none. */
typedef bool (*net_rx_gate)(void *ctx, const uint8_t *frame, uint32_t len);
void net_set_rx_gate(net_rx_gate gate, void *ctx);
/* Receive, transmit-complete and timer work; returns how much was done
 * (0 when idle). */
int net_poll(void);
/* 1 if a device interrupt flagged work net_poll has not done yet (call
 * with interrupts off, just before halting). */
int net_irq_pending(void);
/* 1 with a static address, or once DHCP has supplied one. */
int net_has_address(void);
/* The IPv4 address as text into addr[0..n), its prefix length and whether
 * DHCP gave it: 1, or 0 without an address (not started, DHCP pending). */
int net_ipv4(char *addr, size_t n, unsigned *prefix, int *dhcp);
/* One line for the console: MAC, link, address or why there is none. */
void net_describe(char *buf, size_t n);

#endif
