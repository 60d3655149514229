/*
 * hwdev.h - the device half of the hardware report: pci, nics and disks
 * (called by diag_hw_write, diag/hw.c).
 */
#ifndef TERN_DIAG_HWDEV_H
#define TERN_DIAG_HWDEV_H

#include "diag/diag.h"
#include "json/json.h"

void diag_hw_write_devices(jw *w, const struct diag_env *env);

#endif
