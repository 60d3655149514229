/*
 * virtio_net.h - the virtio network device (virtio 1.x, 5.1), one receive
 * queue (MSI-X interrupts, or polled when they cannot be had) and one
 * transmit queue (completions collected on each loop turn). Frames are copied in and out of
 * driver-owned DMA buffers: the network stack never hands device-visible
 * memory around, and the device never sees the stack's memory.
 */
#ifndef TERN_DEV_VIRTIO_NET_H
#define TERN_DEV_VIRTIO_NET_H

#include "dev/pci.h"

#include <stddef.h>
#include <stdint.h>

enum { VIRTIO_NET_MTU = 1500, VIRTIO_NET_FRAME_MAX = 1514 };

/* Bring up the device at pd; 0 or -1. Only one is driven. */
int virtio_net_init(const struct pci_dev *pd);
int virtio_net_present(void);
void virtio_net_mac(uint8_t mac[6]);
/* 1 if the device reports link up (or cannot report link state). */
int virtio_net_link_up(void);
/* Take one received frame: 1 with *frame and *len valid until
 * virtio_net_rx_release(token), 0 if none, -1 if the device failed. */
int virtio_net_rx(const uint8_t **frame, uint32_t *len, unsigned *token);
/* Give a received buffer back to the device (posted at the next kick). */
void virtio_net_rx_release(unsigned token);
/* A transmit buffer of VIRTIO_NET_FRAME_MAX bytes, or NULL if all are in
 * flight (completed ones are reclaimed first). */
uint8_t *virtio_net_tx_buf(unsigned *token);
/* Send len bytes of the buffer; 0 or -1 (the buffer is then freed). */
int virtio_net_tx_send(unsigned token, uint32_t len);
/* 1 if received frames may be waiting: always when polled; with MSI-X,
 * when an interrupt came since the last call (the flag is taken, so drain
 * the ring completely or call virtio_net_rx_again). */
int virtio_net_rx_take(void);
/* Frames were left in the ring (a budget ran out): look again next turn. */
void virtio_net_rx_again(void);
/* 1 if an interrupt flagged frames not yet taken; for the idle decision,
 * called with interrupts off. */
int virtio_net_rx_flagged(void);
/* "msi-x, N interrupts" or "polled". */
void virtio_net_irq_describe(char *buf, size_t n);
/* Reclaim finished transmissions and tell the device about new receive
 * buffers. Returns the number of transmissions reclaimed, or -1. */
int virtio_net_service(void);

#endif
