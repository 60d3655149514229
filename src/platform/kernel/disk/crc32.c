/*
 * crc32.c - CRC-32 (IEEE 802.3, reflected) four bits at a time: a
 * 16-entry table is small enough to write out and fast enough for the
 * layout's few kilobytes per boot (GPT arrays, superblocks).
 */
#include "crc32.h"

/* crc of the nibble n shifted through the reflected polynomial 0xEDB88320. */
static const uint32_t nibble[16] = {
    0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu,
    0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
    0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
    0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
};

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ nibble[crc & 15];
        crc = (crc >> 4) ^ nibble[crc & 15];
    }
    return ~crc;
}

uint32_t crc32(const void *buf, size_t len) { return crc32_update(0, buf, len); }
