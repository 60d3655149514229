/*
 * config_show.h - the running configuration as JSON (config_show.c), for
 * the operator console's config-show (docs/CONSOLE.md) on every platform.
 */
#ifndef TERN_CONFIG_SHOW_H
#define TERN_CONFIG_SHOW_H

#include "config/config.h"
#include "json/json.h"

/* Write every key of cfg as a member of the open object in w, named as in
 * the file ("tls.key": its value). Paths are shown as written, never what
 * the files hold: the configuration itself holds no secret (key material
 * lives in the files tls.key and the CA keys name). A listener or address
 * that is not set is null. */
void tern_config_show(const tern_config *cfg, jw *w);

#endif
