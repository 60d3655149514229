/*
 * load.c - reading the ACL file and the TLS files named in the
 * configuration, and building what the core and the TLS adapter need from
 * them. Private keys are wiped from memory as soon as wolfSSL has its own
 * copy.
 */
#include "platform/posix/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/posix/file.h"
#include "tls/identity_map.h"

enum {
    ACL_MAX_BYTES = 16 * 1024 * 1024,
    PEM_MAX_BYTES = 1024 * 1024,
};

/* One file named by a key: resolved path, contents (owned by the caller). */
static bool read_named(const char *config_path, const char *key, const char *value,
                       size_t max_len, char **data, size_t *len, char *err, size_t err_size)
{
    char path[TERN_CONFIG_PATH_MAX * 2];

    *data = NULL;
    *len = 0;
    if (!tern_path_resolve(config_path, value, path, sizeof path)) {
        if (snprintf(err, err_size, "%s: %s: path too long", config_path, key) < 0)
            err[0] = '\0';
        return false;
    }
    return tern_read_file(path, max_len, data, len, err, err_size);
}

bool tern_load_acl(const tern_config *cfg, const char *config_path, broker_acl **out, char *err,
                   size_t err_size)
{
    static const broker_allocator plain_malloc = {NULL, NULL, NULL, NULL};
    char path[TERN_CONFIG_PATH_MAX * 2];
    char *text = NULL;
    size_t len = 0;

    *out = NULL;
    if (cfg->acl_file[0] == '\0')
        return true;
    if (!read_named(config_path, "acl.file", cfg->acl_file, ACL_MAX_BYTES, &text, &len, err,
                    err_size))
        return false;
    /* read_named resolved it already; again for the parser's messages. */
    (void)tern_path_resolve(config_path, cfg->acl_file, path, sizeof path);
    *out = broker_acl_parse(&plain_malloc, path, text, len, err, err_size);
    free(text);
    return *out != NULL;
}

bool tern_load_tls(const tern_config *cfg, const char *config_path, tern_tls_server **out,
                   char *err, size_t err_size)
{
    const tern_config_tls *t = &cfg->tls;
    /* Files by key; the private key is at index 1 (wiped after use). */
    const char *keys[4] = {"tls.cert", "tls.key", "tls.client_ca", "tls.operator_ca"};
    const char *values[4] = {t->cert, t->key, t->client_ca, t->operator_ca};
    char *data[4] = {NULL, NULL, NULL, NULL};
    size_t len[4] = {0, 0, 0, 0};
    tern_tls_server_config sc;
    char why[TERN_TLS_ERR_SIZE];
    bool ok = false;

    *out = NULL;
    if (cfg->listener_tls.family == TERN_ADDR_NONE)
        return true;
    for (size_t i = 0; i < 4; i++) {
        if (values[i][0] != '\0' && !read_named(config_path, keys[i], values[i], PEM_MAX_BYTES,
                                                &data[i], &len[i], err, err_size))
            goto done;
    }
    memset(&sc, 0, sizeof sc);
    sc.cert_chain = (tern_tls_bytes){(const uint8_t *)data[0], len[0]};
    sc.key = (tern_tls_bytes){(const uint8_t *)data[1], len[1]};
    sc.client_ca = (tern_tls_bytes){(const uint8_t *)data[2], len[2]};
    sc.operator_ca = (tern_tls_bytes){(const uint8_t *)data[3], len[3]};
    sc.operators = t->operators;
    sc.min_version = t->min_version == TERN_CONFIG_TLS_1_2 ? TERN_TLS_1_2 : TERN_TLS_1_3;
    sc.require_client_cert = t->require_client_cert;
    sc.identity = tern_tls_identity_from_config(t->identity);
    *out = tern_tls_server_create(&sc, why, sizeof why);
    if (*out == NULL) {
        if (snprintf(err, err_size, "%s: TLS: %s", config_path, why) < 0)
            err[0] = '\0';
        goto done;
    }
    ok = true;
done:
    tern_free_secret(data[1], len[1]);
    free(data[0]);
    free(data[2]);
    free(data[3]);
    return ok;
}

bool tern_assets_load(const tern_config *cfg, const char *config_path, tern_assets *out,
                      char *err, size_t err_size)
{
    out->acl = NULL;
    out->tls = NULL;
    if (tern_load_acl(cfg, config_path, &out->acl, err, err_size) &&
        tern_load_tls(cfg, config_path, &out->tls, err, err_size))
        return true;
    tern_assets_free(out);
    return false;
}

void tern_assets_free(tern_assets *a)
{
    if (a->acl != NULL)
        broker_acl_free(a->acl);
    tern_tls_server_release(a->tls);
    a->acl = NULL;
    a->tls = NULL;
}
