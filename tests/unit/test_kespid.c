/*
 * test_kespid.c - the boot disk's FAT volume id (install/espid.c): the
 * text form tern.esp= carries, and the id in FAT32 and FAT16 boot sectors;
 * sectors that are not FAT boot sectors (no signature, bad sector size, no
 * extended boot record, cut short) refused.
 */
#include "test.h"

#include "platform/kernel/install/espid.c"

TEST(kespid_text_form)
{
    uint32_t id = 0;
    CHECK_EQ(espid_parse("1234-ABCD", &id), 0);
    CHECK_EQ(id, 0x1234ABCDu);
    CHECK_EQ(espid_parse("dead-beef", &id), 0);
    CHECK_EQ(id, 0xDEADBEEFu);
    CHECK_EQ(espid_parse("1234ABCD", &id), -1);
    CHECK_EQ(espid_parse("1234-ABCDE", &id), -1);
    CHECK_EQ(espid_parse("1234-ABC", &id), -1);
    CHECK_EQ(espid_parse("12G4-ABCD", &id), -1);
    CHECK_EQ(espid_parse("", &id), -1);
}

static void sector(uint8_t *s, int fat32)
{
    memset(s, 0, 512);
    s[11] = 0x00, s[12] = 0x02;              /* 512 bytes per sector */
    s[510] = 0x55, s[511] = 0xAA;
    if (fat32) {
        s[0x42] = 0x29;
        s[0x43] = 0xCD, s[0x44] = 0xAB, s[0x45] = 0x34, s[0x46] = 0x12;
    } else {
        s[22] = 0x20;                        /* sectors per FAT: FAT12/16 */
        s[0x26] = 0x29;
        s[0x27] = 0x78, s[0x28] = 0x56, s[0x29] = 0x34, s[0x2A] = 0x12;
    }
}

TEST(kespid_fat32_and_fat16_boot_sectors)
{
    uint8_t s[512];
    uint32_t id = 0;
    sector(s, 1);
    CHECK_EQ(espid_fat_volume_id(s, sizeof s, &id), 0);
    CHECK_EQ(id, 0x1234ABCDu);
    sector(s, 0);
    CHECK_EQ(espid_fat_volume_id(s, sizeof s, &id), 0);
    CHECK_EQ(id, 0x12345678u);
}

TEST(kespid_not_a_fat_boot_sector_refused)
{
    uint8_t s[512];
    uint32_t id;
    sector(s, 1);
    CHECK_EQ(espid_fat_volume_id(s, 511, &id), -1);  /* cut short */
    s[511] = 0;
    CHECK_EQ(espid_fat_volume_id(s, sizeof s, &id), -1);
    sector(s, 1);
    s[12] = 0x03;                                      /* 768 bytes per sector */
    CHECK_EQ(espid_fat_volume_id(s, sizeof s, &id), -1);
    sector(s, 1);
    s[0x42] = 0;                                       /* no extended boot record */
    CHECK_EQ(espid_fat_volume_id(s, sizeof s, &id), -1);
}
