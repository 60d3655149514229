/*
 * fuzz_bundle.c - libFuzzer target for the unikernel's boot-bundle parser
 * (src/platform/kernel/bundle.c), which reads the image's configuration
 * and certificates at boot. Properties:
 *   - it never reads or writes outside the buffer (ASan);
 *   - on failure the message is NUL-terminated and one line;
 *   - on success there is at least one file, every name is printable,
 *     unique and at most 255 bytes, every body lies inside the buffer, and
 *     writing the files back in the format gives exactly the input (the
 *     format has one spelling per bundle, so nothing is silently skipped).
 */
#include "platform/kernel/bundle.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    struct bundle b;
    char err[160];

    FUZZ_ASSERT(buf != NULL);
    memcpy(buf, data, size);
    if (bundle_parse(buf, size, &b, err, sizeof err) != 0) {
        FUZZ_ASSERT(memchr(err, '\0', sizeof err) != NULL);
        FUZZ_ASSERT(strchr(err, '\n') == NULL);
        free(buf);
        return 0;
    }
    FUZZ_ASSERT(b.count >= 1 && b.count <= BUNDLE_MAX_FILES);
    /* Rebuild the input from what was parsed. */
    uint8_t *again = malloc(size + 1);
    size_t n = 0;
    FUZZ_ASSERT(again != NULL);
    n += (size_t)snprintf((char *)again, size + 1, "tern-bundle %u\n", BUNDLE_VERSION);
    for (unsigned i = 0; i < b.count; i++) {
        const struct bundle_file *f = &b.files[i];
        size_t len = strlen(f->name);
        FUZZ_ASSERT(len >= 1 && len <= BUNDLE_NAME_MAX);
        for (size_t k = 0; k < len; k++)
            FUZZ_ASSERT((unsigned char)f->name[k] >= 0x20 && f->name[k] != 0x7f);
        for (unsigned j = 0; j < i; j++)
            FUZZ_ASSERT(strcmp(b.files[j].name, f->name) != 0);
        FUZZ_ASSERT(f->data >= buf && f->data + f->len <= buf + size);
        char head[300];
        int h = snprintf(head, sizeof head, "file %zu %s\n", f->len, f->name);
        FUZZ_ASSERT(h > 0 && n + (size_t)h + f->len + 1 <= size);
        memcpy(again + n, head, (size_t)h);
        n += (size_t)h;
        memcpy(again + n, f->data, f->len);
        n += f->len;
        again[n++] = '\n';
    }
    FUZZ_ASSERT(n + 4 == size && memcmp(data, again, n) == 0 &&
                memcmp(data + n, "end\n", 4) == 0);
    free(again);
    free(buf);
    return 0;
}
