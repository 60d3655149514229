/*
 * test_tls_load.c - the daemon's side of TLS and ACL files
 * (src/platform/posix/load.c, file.c): paths relative to the configuration
 * file, the TLS context built from tls.* keys with messages naming what is
 * wrong, and the ACL file parsed with its FILE:LINE errors.
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include <stdlib.h>
#include <unistd.h>

#include "platform/posix/file.h"
#include "platform/posix/load.h"

TEST(tls_load_paths_resolve_against_the_config_directory)
{
    char out[64];

    CHECK(tern_path_resolve("/etc/tern/tern.conf", "pki/ca.crt", out, sizeof out));
    CHECK(strcmp(out, "/etc/tern/pki/ca.crt") == 0);
    CHECK(tern_path_resolve("config/dev.conf", "../build/pki/ca.crt", out, sizeof out));
    CHECK(strcmp(out, "config/../build/pki/ca.crt") == 0);
    CHECK(tern_path_resolve("tern.conf", "ca.crt", out, sizeof out));
    CHECK(strcmp(out, "ca.crt") == 0);
    CHECK(tern_path_resolve("/tern.conf", "ca.crt", out, sizeof out));
    CHECK(strcmp(out, "/ca.crt") == 0);
    CHECK(tern_path_resolve("config/dev.conf", "/abs/ca.crt", out, sizeof out));
    CHECK(strcmp(out, "/abs/ca.crt") == 0);
    CHECK(!tern_path_resolve("config/dev.conf", "a-name-far-too-long-for-the-buffer-we-give",
                             out, 20));
}

/* A configuration with listener.tls and the unit-test PKI; the config file
 * "lives" in tests/unit/data, so paths are relative to it. */
static void tls_config(tern_config *cfg)
{
    tern_config_defaults(cfg);
    cfg->listener_tls.family = TERN_ADDR_IPV4;
    strcpy(cfg->tls.cert, "tls/server.crt");
    strcpy(cfg->tls.key, "tls/server.key");
    strcpy(cfg->tls.client_ca, "tls/ca.crt");
    strcpy(cfg->tls.operator_ca, "tls/operator-ca.crt");
    strcpy(cfg->tls.operators, "alice, bob");
}

/* Where the (imaginary) configuration file lives: next to data/tls/. */
static const char *data_dir(void)
{
    const char *dir = getenv("TERN_TEST_DATA");

    return dir != NULL ? dir : "tests/unit/data";
}

static const char *config_path(char *buf, size_t size)
{
    snprintf(buf, size, "%s/tern.conf", data_dir());
    return buf;
}

TEST(tls_load_builds_a_server_from_the_tls_keys)
{
    char err[TERN_LOAD_ERR_SIZE], conf[256];
    tern_tls_server *s = NULL;
    tern_config cfg;

    tls_config(&cfg);
    CHECK(tern_load_tls(&cfg, config_path(conf, sizeof conf), &s, err, sizeof err));
    CHECK(s != NULL);
    tern_tls_server_release(s);
    /* No TLS listener: nothing to build, and that is fine. */
    cfg.listener_tls.family = TERN_ADDR_NONE;
    CHECK(tern_load_tls(&cfg, conf, &s, err, sizeof err));
    CHECK(s == NULL);
}

TEST(tls_load_names_the_missing_file_and_the_bad_key)
{
    char err[TERN_LOAD_ERR_SIZE], conf[256], want[640];
    tern_tls_server *s = NULL;
    tern_config cfg;

    config_path(conf, sizeof conf);
    tls_config(&cfg); /* not parsed from a file: no lines to name */
    strcpy(cfg.tls.client_ca, "tls/no-such-ca.crt");
    CHECK(!tern_load_tls(&cfg, conf, &s, err, sizeof err));
    CHECK(s == NULL);
    snprintf(want, sizeof want, "%s: tls.client_ca: %s/tls/no-such-ca.crt: No such file", conf,
             data_dir());
    CHECK(strstr(err, want) == err);
    tls_config(&cfg);
    strcpy(cfg.tls.key, "tls/dev-client.key");
    CHECK(!tern_load_tls(&cfg, conf, &s, err, sizeof err));
    snprintf(want, sizeof want,
             "%s: tls.key: %s/tls/dev-client.key: does not match the server certificate", conf,
             data_dir());
    CHECK(strstr(err, want) == err);
}

/* Issue 16 item 10: certificate and key errors name the key, the line it
 * is set on and the file, like the parser's own messages. */
static bool load_parsed(const char *text, char *err)
{
    char conf[256], perr[TERN_CONFIG_ERR_SIZE];
    tern_tls_server *s = NULL;
    tern_config cfg;

    config_path(conf, sizeof conf);
    if (!tern_config_parse(&cfg, conf, text, strlen(text), perr, sizeof perr)) {
        snprintf(err, TERN_LOAD_ERR_SIZE, "parse: %s", perr);
        return true;
    }
    if (tern_load_tls(&cfg, conf, &s, err, TERN_LOAD_ERR_SIZE)) {
        tern_tls_server_release(s);
        return true;
    }
    return false;
}

TEST(tls_load_errors_name_the_key_its_line_and_the_file)
{
    char err[TERN_LOAD_ERR_SIZE], conf[256], want[640];
    const char *head = "config_version = 1\n"
                       "listener.tls = 127.0.0.1:0\n";
    char text[512];

    config_path(conf, sizeof conf);
    snprintf(text, sizeof text,
             "%stls.cert = tls/server.crt\n# the client's key by mistake\n"
             "tls.key = tls/dev-client.key\ntls.client_ca = tls/ca.crt\n",
             head);
    CHECK(!load_parsed(text, err));
    snprintf(want, sizeof want,
             "%s:5: tls.key: %s/tls/dev-client.key: does not match the server certificate",
             conf, data_dir());
    CHECK(strstr(err, want) == err);

    snprintf(text, sizeof text,
             "%stls.key = tls/server.key\ntls.cert = tls/server.key\ntls.client_ca = tls/ca.crt\n",
             head);
    CHECK(!load_parsed(text, err));
    snprintf(want, sizeof want, "%s:4: tls.cert: %s/tls/server.key: no PEM certificate found",
             conf, data_dir());
    CHECK(strstr(err, want) == err);

    snprintf(text, sizeof text,
             "%stls.cert = tls/p384-server.crt\ntls.key = tls/p384-server.key\n"
             "tls.client_ca = tls/ca.crt\n",
             head);
    CHECK(!load_parsed(text, err));
    snprintf(want, sizeof want,
             "%s:3: tls.cert: %s/tls/p384-server.crt: must have an ECDSA P-256 key", conf,
             data_dir());
    CHECK(strstr(err, want) == err);

    snprintf(text, sizeof text,
             "%stls.cert = tls/server.crt\ntls.key = tls/server.key\n"
             "tls.client_ca = tls/missing.crt\n",
             head);
    CHECK(!load_parsed(text, err));
    snprintf(want, sizeof want, "%s:5: tls.client_ca: %s/tls/missing.crt: No such file", conf,
             data_dir());
    CHECK(strstr(err, want) == err);

    snprintf(text, sizeof text,
             "%stls.cert = tls/server.crt\ntls.key = tls/server.key\n"
             "tls.client_ca = tls/ca.crt\ntls.operator_ca = tls/server.key\n",
             head);
    CHECK(!load_parsed(text, err));
    snprintf(want, sizeof want, "%s:6: tls.operator_ca: %s/tls/server.key: ", conf, data_dir());
    CHECK(strstr(err, want) == err);
}

/* A temporary ACL file holding text; its path in path (caller unlinks). */
static bool temp_acl(char *path, const char *text)
{
    int fd;
    bool ok;

    strcpy(path, "/tmp/tern-acl-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0)
        return false;
    ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    return close(fd) == 0 && ok;
}

TEST(tls_load_acl_parses_the_file_or_reports_file_and_line)
{
    char path[32], err[TERN_LOAD_ERR_SIZE], want[64];
    broker_acl *acl = NULL;
    tern_config cfg;
    bool ok;

    tern_config_defaults(&cfg);
    CHECK(tern_load_acl(&cfg, "t.conf", &acl, err, sizeof err)); /* no acl.file */
    CHECK(acl == NULL);
    CHECK(temp_acl(path, "user alice\ntopic readwrite a/#\n"));
    strcpy(cfg.acl_file, path);
    ok = tern_load_acl(&cfg, "t.conf", &acl, err, sizeof err);
    unlink(path);
    CHECK(ok && acl != NULL);
    broker_acl_free(acl);
    CHECK(temp_acl(path, "topic read a/#\nbogus line\n"));
    strcpy(cfg.acl_file, path);
    ok = tern_load_acl(&cfg, "t.conf", &acl, err, sizeof err);
    unlink(path);
    CHECK(!ok && acl == NULL);
    snprintf(want, sizeof want, "%s:2: ", path);
    CHECK(strstr(err, want) == err);
}
