/*
 * bootconf.h - the broker's configuration baked into the image (SPEC A6):
 * the first boot module, parsed with the daemon's parser (src/config).
 */
#ifndef TERN_BOOTCONF_H
#define TERN_BOOTCONF_H

#include "bootinfo.h"
#include "config/config.h"

/*
 * Fill cfg from the boot module. Returns 1 when there is something to
 * serve, 0 when there is no configuration (production builds without a
 * module serve nothing; test builds use a built-in plaintext
 * configuration instead, and say so). A module that is refused (unknown
 * key, bad value, a setting this kernel cannot honour yet) is reported on
 * the console and the kernel halts: it never serves with a configuration
 * it did not fully understand, and never reset-loops.
 */
int bootconf_load(const struct boot_info *bi, tern_config *cfg);

#endif
