/*
 * install_int.h - what the installer's files (install.c: the flow and the
 * operator's answer; target.c: choosing and surveying the disk; write.c:
 * writing and verifying) share. Not part of install.h's public face.
 */
#ifndef TERN_INSTALL_INSTALL_INT_H
#define TERN_INSTALL_INSTALL_INT_H

#include "config/config.h"
#include "disk/blkdisk.h"
#include "disk/gpt.h"
#include "install/payload.h"

#include <stdint.h>

enum {
    INSTALL_MIB = 1 << 20,
    INSTALL_CHUNK = KDISK_IO_BYTES, /* bytes per read or write */
};

/* Said on the console, then the kernel halts (never resets). */
_Noreturn void install_halt(void);
/* A refusal: nothing has been written. */
_Noreturn __attribute__((format(printf, 1, 2))) void install_refuse(const char *fmt, ...);
/* A failure after the first write: the disk is incomplete. */
_Noreturn void install_failed(const char *what, const char *why);

/* target.c: the disk to install onto (refuses when there is none, or
 * several with none named); what p is ("tern data", "EFI system", ...);
 * show what bd holds, 1 when it is empty (zeros in the first data_end
 * bytes and the last MiB, no partition table). Reads only. */
struct blk_dev *install_choose_target(const tern_config *cfg);
const char *install_part_kind(const struct gpt_part *p);
int install_survey(struct blkdisk *bd, uint64_t data_end);

/* write.c: GPT, boot parts, format, flush, then read back and verify
 * every part; install_failed on any error. */
void install_write_disk(struct blk_dev *d, struct blkdisk *bd, const struct payload *pl);

#endif
