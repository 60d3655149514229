/*
 * file.c - whole-file reads. Reads until EOF instead of trusting st_size,
 * so pipes and /dev/stdin-style paths work too.
 */
#define _DEFAULT_SOURCE /* explicit_bzero */

#include "platform/posix/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHUNK = 4096 };

static void set_err(char *err, size_t err_size, const char *path, const char *why)
{
    if (err_size > 0 && snprintf(err, err_size, "%s: %s", path, why) < 0)
        err[0] = '\0';
}

static void set_too_large(char *err, size_t err_size, const char *path, size_t max_len)
{
    if (err_size > 0 && snprintf(err, err_size, "%s: larger than %zu bytes", path, max_len) < 0)
        err[0] = '\0';
}

bool tern_read_file(const char *path, size_t max_len, char **data, size_t *len, char *err,
                    size_t err_size)
{
    char *buf = NULL; /* owned until handed to *data */
    size_t used = 0, cap = 0;
    bool ok = false;
    int fd;

    *data = NULL;
    *len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, err_size, path, strerror(errno));
        return false;
    }
    for (;;) {
        ssize_t n;

        if (cap - used < 2) {
            size_t ncap = cap + CHUNK;
            char *nbuf;

            if (cap > max_len) {
                set_too_large(err, err_size, path, max_len);
                goto done;
            }
            nbuf = realloc(buf, ncap);
            if (nbuf == NULL) {
                set_err(err, err_size, path, strerror(ENOMEM));
                goto done;
            }
            buf = nbuf;
            cap = ncap;
        }
        n = read(fd, buf + used, cap - used - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            set_err(err, err_size, path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    if (used > max_len) {
        set_too_large(err, err_size, path, max_len);
        goto done;
    }
    buf[used] = '\0';
    *data = buf;
    *len = used;
    buf = NULL;
    ok = true;
done:
    free(buf);
    /* Closing a read-only descriptor cannot lose data: its result does not
     * change the outcome. */
    (void)close(fd);
    return ok;
}

bool tern_path_resolve(const char *base_file, const char *path, char *out, size_t size)
{
    const char *slash = strrchr(base_file, '/');
    int n;

    if (path[0] == '/' || slash == NULL)
        n = snprintf(out, size, "%s", path);
    else
        n = snprintf(out, size, "%.*s/%s", (int)(slash - base_file), base_file, path);
    return n >= 0 && (size_t)n < size;
}

void tern_free_secret(char *data, size_t len)
{
    if (data != NULL)
        explicit_bzero(data, len);
    free(data);
}
