/*
 * file.h - reads a whole (small) file into memory, for the configuration,
 * the ACL and the certificates: their parsers are I/O-free and want the
 * bytes in one buffer. And where a path in the configuration points.
 */
#ifndef TERN_FILE_H
#define TERN_FILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Read all of path. On success *data is a malloc'ed buffer the caller frees
 * (NUL-terminated for convenience, *len excludes the NUL). Files over
 * max_len bytes are refused. On failure *data is NULL and err holds
 * "PATH: reason".
 */
bool tern_read_file(const char *path, size_t max_len, char **data, size_t *len, char *err,
                    size_t err_size);

/*
 * A path from the configuration file `base_file`: absolute paths as they
 * are, relative ones against the configuration file's directory (so a
 * configuration and its certificates can move together). False when the
 * result does not fit in size bytes.
 */
bool tern_path_resolve(const char *base_file, const char *path, char *out, size_t size);

/* Overwrite a buffer that held a secret (a private key) before freeing it;
 * the compiler may not drop the writes. */
void tern_free_secret(char *data, size_t len);

#endif
