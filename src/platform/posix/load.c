/*
 * load.c - reading the ACL file, the password file and the TLS files named in the
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
    PASSWD_MAX_BYTES = 16 * 1024 * 1024,
    PEM_MAX_BYTES = 1024 * 1024,
};

/* Messages about a key's value start "CONFIG:LINE: KEY: " like the
 * parser's own (the line where the key was set), or "CONFIG: KEY: " when
 * the key was not set in a file. */
static void key_message(char *err, size_t err_size, const tern_config *cfg,
                        const char *config_path, const char *key, const char *text)
{
    size_t line = tern_config_line(cfg, key);
    int n = line != 0 ? snprintf(err, err_size, "%s:%zu: %s: %s", config_path, line, key, text)
                      : snprintf(err, err_size, "%s: %s: %s", config_path, key, text);
    if (n < 0 && err_size > 0)
        err[0] = '\0';
}

/* One file named by a key: resolved path, contents (owned by the caller).
 * A failure names the key, its line and the file. */
static bool read_named(const tern_config *cfg, const char *config_path, const char *key,
                       const char *value, size_t max_len, char **data, size_t *len, char *err,
                       size_t err_size)
{
    char path[TERN_CONFIG_PATH_MAX * 2];
    char why[TERN_LOAD_ERR_SIZE];

    *data = NULL;
    *len = 0;
    if (!tern_path_resolve(config_path, value, path, sizeof path)) {
        key_message(err, err_size, cfg, config_path, key, "path too long");
        return false;
    }
    if (tern_read_file(path, max_len, data, len, why, sizeof why))
        return true;
    key_message(err, err_size, cfg, config_path, key, why); /* why: "PATH: reason" */
    return false;
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
    if (!read_named(cfg, config_path, "acl.file", cfg->acl_file, ACL_MAX_BYTES, &text, &len, err,
                    err_size))
        return false;
    /* read_named resolved it already; again for the parser's messages. */
    (void)tern_path_resolve(config_path, cfg->acl_file, path, sizeof path);
    *out = broker_acl_parse(&plain_malloc, path, text, len, err, err_size);
    free(text);
    return *out != NULL;
}

bool tern_load_passwd(const tern_config *cfg, const char *config_path, broker_passwd **out,
                      char *err, size_t err_size)
{
    static const broker_allocator plain_malloc = {NULL, NULL, NULL, NULL};
    char path[TERN_CONFIG_PATH_MAX * 2];
    char *text = NULL;
    size_t len = 0;

    *out = NULL;
    if (cfg->password_file[0] == '\0')
        return true;
    if (!read_named(cfg, config_path, "auth.password_file", cfg->password_file, PASSWD_MAX_BYTES,
                    &text, &len, err, err_size))
        return false;
    (void)tern_path_resolve(config_path, cfg->password_file, path, sizeof path);
    *out = broker_passwd_parse(&plain_malloc, path, text, len, err, err_size);
    /* The file's hashes are secrets of a kind: no copy left behind. */
    memset(text, 0, len);
    free(text);
    return *out != NULL;
}

bool tern_load_tls(const tern_config *cfg, const char *config_path, tern_tls_server **out,
                   char *err, size_t err_size)
{
    const tern_config_tls *t = &cfg->tls;
    /* Files by key; the private key is at index 1 (wiped after use). */
    const char *keys[4] = {"tls.cert", "tls.key", "tls.client_ca", "tls.operator_ca"};
    static const tern_tls_server_input inputs[4] = {TERN_TLS_INPUT_CERT, TERN_TLS_INPUT_KEY,
                                                    TERN_TLS_INPUT_CLIENT_CA,
                                                    TERN_TLS_INPUT_OPERATOR_CA};
    const char *values[4] = {t->cert, t->key, t->client_ca, t->operator_ca};
    char *data[4] = {NULL, NULL, NULL, NULL};
    size_t len[4] = {0, 0, 0, 0};
    tern_tls_server_config sc;
    char why[TERN_TLS_ERR_SIZE];
    tern_tls_server_input failed = TERN_TLS_INPUT_NONE;
    bool ok = false;

    *out = NULL;
    if (cfg->listener_tls.family == TERN_ADDR_NONE && cfg->listener_wss.family == TERN_ADDR_NONE)
        return true;
    for (size_t i = 0; i < 4; i++) {
        if (values[i][0] != '\0' && !read_named(cfg, config_path, keys[i], values[i],
                                                PEM_MAX_BYTES, &data[i], &len[i], err, err_size))
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
    sc.failed = &failed;
    *out = tern_tls_server_create(&sc, why, sizeof why);
    if (*out == NULL) {
        /* Name the key (and its line) and the file the problem is in:
         * "tern.conf:7: tls.key: /etc/tern/server.key: does not match the
         * server certificate". */
        char text[TERN_LOAD_ERR_SIZE], path[TERN_CONFIG_PATH_MAX * 2];
        size_t k = 0;

        while (k < 4 && inputs[k] != failed)
            k++;
        if (k < 4 && values[k][0] != '\0' &&
            tern_path_resolve(config_path, values[k], path, sizeof path)) {
            if (snprintf(text, sizeof text, "%s: %s", path, why) < 0)
                text[0] = '\0';
            key_message(err, err_size, cfg, config_path, keys[k], text);
        } else if (k < 4) {
            key_message(err, err_size, cfg, config_path, keys[k], why);
        } else if (failed == TERN_TLS_INPUT_OPERATORS) {
            key_message(err, err_size, cfg, config_path, "tls.operators", why);
        } else if (snprintf(err, err_size, "%s: TLS: %s", config_path, why) < 0) {
            err[0] = '\0';
        }
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
    out->passwd = NULL;
    out->tls = NULL;
    if (tern_load_acl(cfg, config_path, &out->acl, err, err_size) &&
        tern_load_passwd(cfg, config_path, &out->passwd, err, err_size) &&
        tern_load_tls(cfg, config_path, &out->tls, err, err_size))
        return true;
    tern_assets_free(out);
    return false;
}

void tern_assets_free(tern_assets *a)
{
    if (a->acl != NULL)
        broker_acl_free(a->acl);
    broker_passwd_free(a->passwd);
    tern_tls_server_release(a->tls);
    a->acl = NULL;
    a->passwd = NULL;
    a->tls = NULL;
}
