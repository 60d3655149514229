/*
 * crc32.h - CRC-32 as GPT (UEFI spec, "CRC32") and tern's superblocks use
 * it: the IEEE 802.3 polynomial, reflected, initial value and final XOR
 * 0xFFFFFFFF (crc32("123456789") = 0xCBF43926). Portable and I/O-free.
 */
#ifndef TERN_DISK_CRC32_H
#define TERN_DISK_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* CRC of len bytes. */
uint32_t crc32(const void *buf, size_t len);

/* Continue a CRC over more bytes: crc32_update(crc32(a), b) is the CRC of
 * a followed by b; crc32_update(0, x) == crc32(x). */
uint32_t crc32_update(uint32_t crc, const void *buf, size_t len);

#endif
