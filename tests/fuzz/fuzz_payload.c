/*
 * fuzz_payload.c - libFuzzer target for the install payload's parser
 * (src/platform/kernel/install/payload.c, docs/INSTALL.md), which the
 * installer runs over the ISO's /boot/tern.install before it writes a
 * disk. Properties:
 *   - it never reads or writes outside the buffer (ASan), whatever the
 *     header, part table or extent tables claim;
 *   - on failure the message is NUL-terminated and one line;
 *   - on success there is one part of each kind, each placed where the
 *     layout puts it, every extent inside its part and the payload, in
 *     order; reading every part whole (and the digest check) stays inside
 *     the buffer, and reading a part in odd-sized pieces gives the same
 *     bytes as reading it at once.
 */
#include "platform/kernel/install/payload.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

enum { PIECE = 777, MAX_READ = 1 << 22 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    struct payload pl;
    char err[PAYLOAD_ERR_MAX];
    FUZZ_ASSERT(buf != NULL);
    memcpy(buf, data, size);
    if (payload_parse(buf, size, &pl, err, sizeof err) != 0) {
        FUZZ_ASSERT(memchr(err, '\0', sizeof err) != NULL);
        FUZZ_ASSERT(strchr(err, '\n') == NULL);
        free(buf);
        return 0;
    }
    FUZZ_ASSERT(pl.part_count == PAYLOAD_MAX_PARTS);
    for (uint32_t kind = PAYLOAD_MBR_CODE; kind <= PAYLOAD_ESP; kind++) {
        const struct payload_part *pp = payload_part(&pl, kind);
        FUZZ_ASSERT(pp != NULL && pp->size > 0);
        FUZZ_ASSERT(pp->extents + (uint64_t)pp->extent_count * PAYLOAD_EXTENT_BYTES <= size);
        if (pp->size > MAX_READ)
            continue; /* a valid 4 GiB ESP: too slow to read whole here */
        uint8_t *whole = malloc((size_t)pp->size), *pieces = malloc((size_t)pp->size);
        FUZZ_ASSERT(whole && pieces);
        payload_read(&pl, pp, 0, whole, (size_t)pp->size);
        for (uint64_t off = 0; off < pp->size; off += PIECE)
            payload_read(&pl, pp, off, pieces + off,
                         (size_t)(pp->size - off < PIECE ? pp->size - off : PIECE));
        FUZZ_ASSERT(memcmp(whole, pieces, (size_t)pp->size) == 0);
        free(whole);
        free(pieces);
    }
    static uint8_t scratch[4096];
    if (payload_check_parts(&pl, scratch, sizeof scratch, err, sizeof err) != 0)
        FUZZ_ASSERT(strchr(err, '\n') == NULL);
    free(buf);
    return 0;
}
