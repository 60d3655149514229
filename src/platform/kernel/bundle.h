/*
 * bundle.h - the image's boot bundle (SPEC A6, ADR-026): the configuration
 * and every file it names (certificates, keys, CAs, the ACL, the password
 * file) in one boot module, so GRUB (module2) and QEMU's PVH loader
 * (-initrd, one module) carry the same thing. tools/image/bundle.c writes it.
 *
 * Format, version 1: text headers, raw bodies, nothing implicit.
 *
 *     tern-bundle 1\n
 *     file SIZE NAME\n        SIZE: decimal byte count; NAME: 1..255 bytes,
 *     <SIZE bytes>\n          no control characters; the rest of the line
 *     file SIZE NAME\n
 *     <SIZE bytes>\n
 *     end\n                   nothing may follow
 *
 * The first file is the configuration (its NAME, e.g. "tern.conf", names it
 * in messages); the others are named exactly as the configuration's values
 * spell them (tls.cert = pki/server.crt is the file "pki/server.crt").
 * Portable and I/O-free: host unit tests and the builder use it too.
 */
#ifndef TERN_BUNDLE_H
#define TERN_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#define BUNDLE_VERSION 1u
#define BUNDLE_MAGIC "tern-bundle "
enum { BUNDLE_MAX_FILES = 32, BUNDLE_NAME_MAX = 255 };

struct bundle_file {
    const char *name;    /* NUL-terminated (the parser writes the NUL) */
    uint8_t *data;       /* inside the parsed buffer; writable (keys are wiped) */
    size_t len;
};

struct bundle {
    struct bundle_file files[BUNDLE_MAX_FILES];
    unsigned count;
};

/* Does buf start like a bundle (of any version)? */
int bundle_is(const uint8_t *buf, size_t len);

/* Parse buf in place (each name's newline becomes a NUL). Returns 0, or -1
 * with one line in err (a version this kernel does not read says a newer
 * release is needed). */
int bundle_parse(uint8_t *buf, size_t len, struct bundle *out, char *err, size_t err_size);

/* The file called name, or NULL. */
struct bundle_file *bundle_find(struct bundle *b, const char *name);

#endif
