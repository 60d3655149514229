/*
 * bootdisk.h - which disk the machine booted from (SPEC A3): the disk's
 * grub.cfg (made by mkboot.sh) passes the ESP's FAT volume id as
 * tern.esp=XXXX-XXXX; the disk whose EFI system partition carries that id
 * is the boot disk, and the boot log says so, so an operator sees where
 * the running kernel and its configuration came from.
 */
#ifndef TERN_INSTALL_BOOTDISK_H
#define TERN_INSTALL_BOOTDISK_H

#include "bootinfo.h"

struct blk_dev;

/* Look for the boot disk when the command line has tern.esp= and say on
 * the console which it is (or that none matched). Reads only; after the
 * disks are registered. */
void bootdisk_find(const struct boot_info *bi);
/* The disk found, or NULL (no tern.esp=, or no disk matched). */
const struct blk_dev *bootdisk(void);

#endif
