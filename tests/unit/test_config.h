/*
 * test_config.h - what the config parser's test files (test_config.c,
 * test_config_keys.c) share: parsing a text as the file "t.conf".
 */
#ifndef TERN_TEST_CONFIG_H
#define TERN_TEST_CONFIG_H

#include <stdbool.h>
#include <string.h>

#include "config/config.h"

static inline bool parse_text(const char *text, tern_config *cfg, char *err)
{
    return tern_config_parse(cfg, "t.conf", text, strlen(text), err, TERN_CONFIG_ERR_SIZE);
}

/* Parse a file that must be rejected; err receives the message. */
static inline bool rejects(const char *text, char *err)
{
    tern_config cfg;

    return !parse_text(text, &cfg, err);
}

#endif
