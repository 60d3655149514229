/*
 * hwtext.h - text from firmware and devices made safe for the report: the
 * JSON writer escapes control characters but passes other bytes, and a
 * device's model string or a loader's name need not be UTF-8.
 */
#ifndef TERN_DIAG_HWTEXT_H
#define TERN_DIAG_HWTEXT_H

#include <stddef.h>

/* Copy src into dst[0..cap) (NUL-terminated, cut to fit), every byte
 * outside printable ASCII replaced by '?'. */
void hw_printable(char *dst, size_t cap, const char *src);

#endif
