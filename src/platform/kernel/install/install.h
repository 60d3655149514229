/*
 * install.h - install mode (SPEC A1; the ISO's "Install to this machine's
 * disk" entry, tern.mode=install): write this machine's disk so it boots
 * tern by itself (docs/INSTALL.md says every step and refusal).
 */
#ifndef TERN_INSTALL_INSTALL_H
#define TERN_INSTALL_INSTALL_H

#include "bootinfo.h"
#include "config/config.h"

enum {
    INSTALL_COUNTDOWN_S = 30,   /* an empty disk: seconds to abort with any key */
    INSTALL_MIN_MIB = 160,      /* 2 MiB + ESP 64 MiB + a data partition of 64 MiB + GPTs */
};

/* Find the target disk, show it and what will be written, ask (countdown
 * or WIPE), write, read back and verify, and power off through ACPI.
 * Never returns: every refusal and failure is said on the console and
 * halts (never resets). Devices, entropy and the ACPI tables must be up. */
_Noreturn void install_run(const struct boot_info *bi, const tern_config *cfg);

#endif
