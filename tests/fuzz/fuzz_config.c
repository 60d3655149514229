/*
 * fuzz_config.c - libFuzzer target for the configuration parser
 * (src/config/). Arbitrary text, not NUL-terminated (the parser must respect
 * len), with error buffers of several sizes including the documented one.
 * Properties:
 *   - on failure the message is NUL-terminated within err_size, printable
 *     ASCII only, one line, starts with the file name, and the canary bytes
 *     after the buffer are untouched;
 *   - on failure *cfg is untouched; on success the result converts to
 *     broker terms without complaint and re-parsing gives the same result.
 */
#include "config/config.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

enum { CANARY = 16 };

static void check_message(const char *err, size_t err_size, const char *file)
{
    const char *nul = memchr(err, '\0', err_size);
    FUZZ_ASSERT(nul != NULL);
    size_t n = (size_t)(nul - err);
    for (size_t i = 0; i < n; i++)
        FUZZ_ASSERT(err[i] >= 0x20 && err[i] < 0x7f);
    size_t flen = strlen(file);
    size_t want = flen < n ? flen : n;
    FUZZ_ASSERT(memcmp(err, file, want) == 0);
    for (size_t i = 0; i < CANARY; i++)
        FUZZ_ASSERT((uint8_t)err[err_size + i] == 0xa5);
}

/* Field by field: the structs have padding the parser may not copy. */
static bool same_config(const tern_config *a, const tern_config *b)
{
    return a->version == b->version && a->listener_plain.family == b->listener_plain.family &&
           memcmp(a->listener_plain.addr, b->listener_plain.addr, 16) == 0 &&
           a->listener_plain.port == b->listener_plain.port && a->log_level == b->log_level &&
           memcmp(&a->limits, &b->limits, sizeof a->limits) == 0 &&
           a->session_expiry_s == b->session_expiry_s && a->sys_interval_s == b->sys_interval_s &&
           a->allow_anonymous == b->allow_anonymous;
}

static void parse_once(const char *text, size_t len, size_t err_size)
{
    static const char file[] = "fuzz.conf";
    tern_config cfg, before;
    memset(&cfg, 0x5a, sizeof cfg);
    before = cfg;
    char *err = malloc(err_size + CANARY);
    FUZZ_ASSERT(err != NULL);
    memset(err, 0xa5, err_size + CANARY);
    if (tern_config_parse(&cfg, file, text, len, err, err_size)) {
        broker_config bc;
        memset(&bc, 0, sizeof bc);
        tern_config_to_broker(&cfg, &bc);
        tern_config again;
        FUZZ_ASSERT(tern_config_parse(&again, file, text, len, err, err_size));
        FUZZ_ASSERT(same_config(&again, &cfg));
    } else {
        FUZZ_ASSERT(memcmp(&cfg, &before, sizeof cfg) == 0);
        check_message(err, err_size, file);
    }
    free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Copy so ASan sees a read one past `size` if the parser overruns. */
    char *text = malloc(size ? size : 1);
    FUZZ_ASSERT(text != NULL);
    if (size)
        memcpy(text, data, size);
    parse_once(text, size, TERN_CONFIG_ERR_SIZE);
    parse_once(text, size, 1);
    parse_once(text, size, 17);
    free(text);
    return 0;
}
