/*
 * espid.c - FAT volume ids for finding the boot disk (espid.h): pure
 * parsers, unit-tested in tests/unit/test_kespid.c.
 */
#include "espid.h"

int espid_parse(const char *text, uint32_t *id)
{
    uint32_t v = 0;
    for (int i = 0; i < 9; i++) {
        char c = text[i];
        if (i == 4) {
            if (c != '-')
                return -1;
            continue;
        }
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return -1;
        v = v << 4 | d;
    }
    if (text[9])
        return -1;
    *id = v;
    return 0;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int espid_fat_volume_id(const uint8_t *s, size_t len, uint32_t *id)
{
    enum { FAT32_SIG = 0x42, FAT32_ID = 0x43, FAT16_SIG = 0x26, FAT16_ID = 0x27 };
    if (len < 512 || s[510] != 0x55 || s[511] != 0xAA)
        return -1;
    unsigned bps = (unsigned)(s[11] | s[12] << 8);
    if (bps < 512 || bps > 4096 || (bps & (bps - 1)))
        return -1;
    /* FAT32: 16-bit sectors-per-FAT zero, the extended record at 0x40. */
    int fat32 = s[22] == 0 && s[23] == 0;
    unsigned sig = fat32 ? FAT32_SIG : FAT16_SIG;
    if (s[sig] != 0x29 && s[sig] != 0x28)
        return -1;
    *id = le32(s + (fat32 ? FAT32_ID : FAT16_ID));
    return 0;
}

