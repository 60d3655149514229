/*
 * file.h - reads a whole (small) file into memory, for the configuration:
 * the parser is I/O-free and wants the bytes in one buffer.
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

#endif
