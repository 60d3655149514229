/*
 * keys.h - the configuration's table of keys (config.c), for the files of
 * src/config/ that walk every key: the parser and config_show.c. Internal
 * to src/config/ (config.h is its public face).
 */
#ifndef TERN_CONFIG_KEYS_H
#define TERN_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum value_kind {
    KIND_VERSION,
    KIND_UINT,
    KIND_BOOL,
    KIND_LOG_LEVEL,
    KIND_LISTEN,
    KIND_PATH,         /* text up to max bytes (max = field size, NUL included) */
    KIND_LIST,         /* comma-separated non-empty items, same storage rule */
    KIND_IDENTITY,     /* cn | san-dns | san-email | san-uri */
    KIND_TLS_VERSION,  /* 1.3 | 1.2 */
    KIND_STORE_SYNC,   /* full | normal */
    KIND_IPV4_PREFIX,  /* a.b.c.d/N, a host address */
    KIND_IPV4_HOST,    /* a.b.c.d, a host address */
    KIND_DISK,         /* auto | none | virtio-blk | virtio-scsi | BB:DD.F */
} value_kind;

typedef struct key_def {
    const char *name;
    value_kind kind;
    uint32_t min, max; /* KIND_UINT range; KIND_PATH/LIST: max = field size */
    size_t offset;     /* of the field in tern_config */
} key_def;

/* Every key this release knows, config_version first. */
extern const key_def tern_config_keys[];
extern const size_t tern_config_key_count;

/* bridge.c: the bridge.NAME.* keys, which the table above cannot hold (the
 * names are the file's). One setting: false with the message (no
 * "FILE:LINE: " prefix) in msg. */
struct tern_config;
bool tern_config_bridge_key(struct tern_config *cfg, const char *key, size_t klen,
                            const char *val, size_t vlen, size_t line, char *msg, size_t cap);
/* Rules across a bridge's keys, after the whole file: false with the
 * message and its line. */
bool tern_config_bridges_check(const struct tern_config *cfg, char *msg, size_t cap,
                               size_t *line);

#endif
