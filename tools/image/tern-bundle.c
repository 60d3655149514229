/*
 * tern-bundle.c - the image builder's first half (SPEC F3): a configuration
 * file and every file it names become one boot bundle (format:
 * src/platform/kernel/bundle.h), checked the way the kernel will check it,
 * so an image that would refuse to start is not built.
 *
 *   tern-bundle CONFIG OUTPUT
 *
 * Checks, in order, each stopping with one "WHERE: message" line on stderr
 * and exit status 2: the configuration (the daemon's parser), what the
 * unikernel supports of it (src/platform/kernel/confcheck.c), the ACL, the
 * password file and the TLS files (the daemon's loader: certificates
 * parse, the key matches, CAs load). Paths in the configuration are resolved as the daemon does
 * (relative to the configuration's directory) and stored in the bundle
 * under the name the configuration spells, which is where the kernel looks
 * them up. The output is parsed back before it is kept.
 *
 * The bundle holds the server's private key: it is written readable by its
 * owner only, like the key file itself.
 */
#define _DEFAULT_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "platform/kernel/bundle.h"
#include "platform/kernel/confcheck.h"
#include "platform/posix/file.h"
#include "platform/posix/load.h"

enum {
    CONFIG_MAX = 64 * 1024,
    FILE_MAX = 128 * 1024,
    BUNDLE_MAX = 256 * 1024, /* BOOT_CONFIG_MAX in the kernel's bootinfo.h */
};

struct out {
    char *buf;
    size_t len, cap;
};

static int put(struct out *o, const void *data, size_t n)
{
    if (o->len + n > BUNDLE_MAX)
        return -1;
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 4096;
        while (cap < o->len + n)
            cap *= 2;
        char *nb = realloc(o->buf, cap);
        if (!nb)
            return -1;
        o->buf = nb;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, data, n);
    o->len += n;
    return 0;
}

static int put_file(struct out *o, const char *name, const char *data, size_t len)
{
    char head[BUNDLE_NAME_MAX + 48];
    int n = snprintf(head, sizeof head, "file %zu %s\n", len, name);
    if (n < 0 || (size_t)n >= sizeof head)
        return -1;
    if (put(o, head, (size_t)n) != 0 || put(o, data, len) != 0 || put(o, "\n", 1) != 0)
        return -1;
    return 0;
}

static int write_out(const char *path, const struct out *o)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < o->len) {
        ssize_t n = write(fd, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            unlink(tmp);
            return -1;
        }
        done += (size_t)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int main(int argc, char **argv)
{
    static tern_config cfg;
    char err[TERN_LOAD_ERR_SIZE];
    char *text = NULL;
    size_t len = 0;
    struct out o = {NULL, 0, 0};
    int status = 2;

    if (argc != 3) {
        fprintf(stderr, "usage: tern-bundle CONFIG OUTPUT\n");
        return 2;
    }
    const char *conf_path = argv[1], *name = base_name(conf_path);
    if (!tern_read_file(conf_path, CONFIG_MAX, &text, &len, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (!tern_config_parse(&cfg, name, text, len, err, sizeof err) ||
        conf_check_kernel(&cfg, name, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    /* The daemon's loader checks the ACL and builds the TLS context. */
    tern_assets assets;
    if (!tern_assets_load(&cfg, conf_path, &assets, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    tern_assets_free(&assets);

    if (put(&o, BUNDLE_MAGIC "1\n", sizeof BUNDLE_MAGIC + 1) != 0 ||
        put_file(&o, name, text, len) != 0)
        goto too_large;
    for (unsigned i = 0; i < CONF_FILE_COUNT; i++) {
        const char *v = conf_file_value(&cfg, i);
        char path[TERN_CONFIG_PATH_MAX * 2];
        char *data = NULL;
        size_t dlen = 0;
        int dup = 0;
        if (!v[0])
            continue;
        for (unsigned j = 0; j < i; j++)
            dup |= strcmp(conf_file_value(&cfg, j), v) == 0;
        if (dup)
            continue; /* one file under two keys: stored once */
        if (!tern_path_resolve(conf_path, v, path, sizeof path) ||
            !tern_read_file(path, FILE_MAX, &data, &dlen, err, sizeof err)) {
            fprintf(stderr, "%s: %s: %s\n", name, conf_file_key(i), err);
            goto done;
        }
        int rc = put_file(&o, v, data, dlen);
        tern_free_secret(data, dlen);
        if (rc != 0)
            goto too_large;
    }
    if (put(&o, "end\n", 4) != 0)
        goto too_large;

    /* Read it back as the kernel will. */
    struct bundle check;
    char *copy = malloc(o.len);
    if (!copy) {
        fprintf(stderr, "tern-bundle: out of memory\n");
        goto done;
    }
    memcpy(copy, o.buf, o.len);
    int parsed = bundle_parse((uint8_t *)copy, o.len, &check, err, sizeof err);
    explicit_bzero(copy, o.len);
    free(copy);
    if (parsed != 0) {
        fprintf(stderr, "tern-bundle: internal error: %s\n", err);
        goto done;
    }
    if (write_out(argv[2], &o) != 0) {
        fprintf(stderr, "%s: %s\n", argv[2], strerror(errno));
        goto done;
    }
    status = 0;
    goto done;
too_large:
    fprintf(stderr, "%s: the bundle would exceed %d bytes (the kernel's limit)\n", name,
            BUNDLE_MAX);
done:
    if (o.buf)
        explicit_bzero(o.buf, o.cap);
    free(o.buf);
    free(text);
    return status;
}
