/*
 * load.c - reading the ACL file and the TLS files named in the
 * configuration, and building what the core and the TLS adapter need from
 * them. Private keys are wiped from memory as soon as wolfSSL has its own
 * copy. For --check, also a look at the store file without opening it for
 * writing (tern_check_store).
 */
#define _GNU_SOURCE

#include "platform/posix/load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/posix/file.h"
#include "store/store.h"
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

/* ---- --check: the store ------------------------------------------------- */

static bool say(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Format into buf (cut short when it does not fit); returns false, so a
 * failure can be reported and returned in one statement. */
static bool say(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (size == 0)
        return false;
    va_start(ap, fmt);
    if (vsnprintf(buf, size, fmt, ap) < 0)
        buf[0] = '\0';
    va_end(ap);
    return false;
}

/* The process holding a write lock on the file, 0 when none. A running
 * daemon holds one for as long as it has the database open (the store's
 * exclusive locking mode). F_GETLK only asks; it takes no lock. */
static pid_t lock_holder(const char *path)
{
    struct flock fl;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    if (fd < 0)
        return 0;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_RDLCK; /* what conflicts with a reader: a writer's lock */
    fl.l_whence = SEEK_SET;
    fl.l_start = 0;
    fl.l_len = 0; /* the whole file */
    if (fcntl(fd, F_GETLK, &fl) != 0)
        fl.l_type = F_UNLCK;
    (void)close(fd);
    return fl.l_type == F_UNLCK ? 0 : fl.l_pid;
}

/* store.path does not exist: the daemon creates the file, so its directory
 * must exist and take new files. */
static bool check_new_store(const char *config_path, const char *path, char *note,
                            size_t note_size, char *err, size_t err_size)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    struct stat st;

    if (slash == NULL)
        (void)snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        (void)snprintf(dir, sizeof dir, "/");
    else
        (void)snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (stat(dir, &st) != 0)
        return say(err, err_size, "%s: store.path: %s: directory %s: %s (the daemon creates "
                   "the database file, not its directory)", config_path, path, dir,
                   strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return say(err, err_size, "%s: store.path: %s: %s is not a directory", config_path,
                   path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return say(err, err_size, "%s: store.path: %s: cannot create it in %s: %s", config_path,
                   path, dir, strerror(errno));
    (void)say(note, note_size, "%s: store.path: %s does not exist yet; the daemon will create "
              "it", config_path, path);
    return true;
}

bool tern_check_store(const tern_config *cfg, const char *config_path, char *note,
                      size_t note_size, char *err, size_t err_size)
{
    char path[4096], why[STORE_ERR_SIZE];
    store_check_info info;
    struct stat st;
    pid_t holder;

    if (note_size > 0)
        note[0] = '\0';
    if (cfg->store_path[0] == '\0')
        return true;
    if (!tern_path_resolve(config_path, cfg->store_path, path, sizeof path))
        return say(err, err_size, "%s: store.path: path too long", config_path);
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return check_new_store(config_path, path, note, note_size, err, err_size);
        return say(err, err_size, "%s: store.path: %s: %s", config_path, path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode))
        return say(err, err_size, "%s: store.path: %s is a directory, not a database file",
                   config_path, path);
    if (!S_ISREG(st.st_mode))
        return say(err, err_size, "%s: store.path: %s is not a regular file", config_path, path);
    if (access(path, R_OK | W_OK) != 0)
        return say(err, err_size, "%s: store.path: %s: %s (the daemon reads and writes it)",
                   config_path, path, strerror(errno));
    holder = lock_holder(path);
    if (holder != 0) {
        (void)say(note, note_size, "%s: store.path: %s is in use by process %ld (a running "
                  "ternd?); not checked further", config_path, path, (long)holder);
        return true;
    }
    if (store_check(path, NULL, &info, why, sizeof why) != STORE_OK)
        return say(err, err_size, "%s: store.path: %s", config_path, why);
    if (info.empty)
        (void)say(note, note_size, "%s: store.path: %s is empty; the daemon will create the "
                  "schema in it", config_path, path);
    else if (info.schema_found < STORE_SCHEMA_VERSION)
        (void)say(note, note_size, "%s: store.path: %s: tern database, schema version %u; the "
                  "daemon will migrate it to version %u", config_path, path, info.schema_found,
                  STORE_SCHEMA_VERSION);
    else
        (void)say(note, note_size, "%s: store.path: %s: tern database, schema version %u, "
                  "passes its check", config_path, path, info.schema_found);
    return true;
}
