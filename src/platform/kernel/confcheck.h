/*
 * confcheck.h - what the unikernel can do of a configuration the daemon's
 * parser accepted. Portable: the boot (bootconf.c) and the image builder
 * (tools/image/bundle.c) refuse the same things, so an image that would
 * not start is not built.
 */
#ifndef TERN_CONFCHECK_H
#define TERN_CONFCHECK_H

#include <stddef.h>

#include "config/config.h"

/* The files a configuration names, by key, in one order for everyone. */
enum { CONF_FILE_TLS_CERT, CONF_FILE_TLS_KEY, CONF_FILE_TLS_CLIENT_CA,
       CONF_FILE_TLS_OPERATOR_CA, CONF_FILE_ACL, CONF_FILE_PASSWD, CONF_FILE_COUNT };
/* Key name and value ("" when not set) of file i. */
const char *conf_file_key(unsigned i);
const char *conf_file_value(const tern_config *cfg, unsigned i);

/* 0 when the kernel can serve cfg; -1 with "NAME: why" in err. */
int conf_check_kernel(const tern_config *cfg, const char *name, char *err, size_t err_size);

#endif
