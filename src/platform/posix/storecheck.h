/*
 * storecheck.h - for `ternd --check`: a look at store.path that opens
 * nothing for writing and creates nothing (the daemon itself opens the
 * store in storeq.c).
 */
#ifndef TERN_STORECHECK_H
#define TERN_STORECHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/*
 * For --check: would the daemon open store.path as it is? Opens nothing for
 * writing and creates nothing: a missing file needs an existing, writable
 * directory (the daemon creates the file); an existing one must be a
 * readable and writable regular file that store_check() accepts (read-only:
 * an empty file or a tern database of a schema this release reads that
 * passes PRAGMA quick_check). A file a running daemon holds is not opened.
 * True when there is no store.path or it would do, with a line for the user
 * in note ("" when none); false with one "CONFIG: store.path: PATH: cause"
 * line in err.
 */
bool tern_check_store(const tern_config *cfg, const char *config_path, char *note,
                      size_t note_size, char *err, size_t err_size);

#endif
