/*
 * virtio_rng.h - the virtio entropy device (virtio 1.x, 5.4): one request
 * queue; each posted buffer comes back filled with random bytes from the
 * host. Polled.
 */
#ifndef TERN_DEV_VIRTIO_RNG_H
#define TERN_DEV_VIRTIO_RNG_H

#include "dev/pci.h"

#include <stddef.h>

/* Bring up the device at pd; 0 or -1. Only one is driven. */
int virtio_rng_init(const struct pci_dev *pd);
/* 1 if a device is up. */
int virtio_rng_present(void);
/* Read up to n (<= 256) bytes, waiting at most timeout_ms; returns the
 * number of bytes read, or -1 if the device failed. */
int virtio_rng_read(void *buf, size_t n, unsigned timeout_ms);

#endif
