/*
 * kconsole.h - the unikernel's half of the operator console (SPEC C6,
 * docs/CONSOLE.md): the platform ops of src/broker/console.h for the
 * kernel - config-show from the baked configuration, backup-now and
 * scrub-now through the store thread, diag, and the kernel's log level.
 * Every op answers at once and never waits for the disk: the main loop
 * runs the broker, so work on the store is only asked for here and done
 * by the store thread; its outcome shows on $SYS.
 */
#ifndef TERN_KSERVE_KCONSOLE_H
#define TERN_KSERVE_KCONSOLE_H

#include "broker/broker.h"
#include "config/config.h"

struct kserver;

/* Install the kernel's ops on b. cfg is copied (the baked configuration
 * as parsed); srv is the kernel's one server, read at each request for its
 * store and log level. */
void kconsole_install(broker *b, const tern_config *cfg, struct kserver *srv);

#endif
