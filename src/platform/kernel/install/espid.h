/*
 * espid.h - the FAT volume id that names a tern disk's EFI system partition
 * (bootdisk.h): the text GRUB and mtools print and tern.esp= carries, and
 * the field in a FAT boot sector (read off a disk: untrusted input).
 */
#ifndef TERN_INSTALL_ESPID_H
#define TERN_INSTALL_ESPID_H

#include <stddef.h>
#include <stdint.h>

/* "1234-ABCD" (either case) into *id; 0, or -1 for anything else. */
int espid_parse(const char *text, uint32_t *id);
/* A FAT boot sector's volume id (FAT32's extended boot record, or
 * FAT12/16's); 0, or -1 when the sector is not a FAT boot sector. */
int espid_fat_volume_id(const uint8_t *sector, size_t len, uint32_t *id);

#endif
