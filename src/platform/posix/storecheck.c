/*
 * storecheck.c - `ternd --check` and store.path (storecheck.h): what the
 * file system says about the path, then store_check() for the file itself.
 * Its own file because it links SQLite, which the other users of load.c
 * (the image builder's tern-bundle) do without.
 */
#define _GNU_SOURCE

#include "platform/posix/storecheck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/posix/file.h"
#include "store/store.h"

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

/* A missing or empty database beside a backup that passes the check is a
 * restore the daemon will finish (store_open: found_empty), not a new
 * store. The first such backup's path into bak, or false. Read-only. */
static bool restorable_backup(const char *path, char *bak, size_t bak_size)
{
    static const char *const suffixes[] = {".bak-a", ".bak-b"};
    char why[STORE_ERR_SIZE];
    store_check_info info;
    struct stat st;

    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if ((size_t)snprintf(bak, bak_size, "%s%s", path, suffixes[i]) >= bak_size)
            return false;
        if (stat(bak, &st) == 0 && S_ISREG(st.st_mode) && lock_holder(bak) == 0 &&
            store_check(bak, NULL, &info, why, sizeof why) == STORE_OK && !info.empty)
            return true;
    }
    return false;
}

static void say_restore(const char *config_path, const char *path, char *note,
                        size_t note_size)
{
    char bak[4096 + 8];

    if (restorable_backup(path, bak, sizeof bak))
        (void)say(note, note_size, "%s: store.path: %s is %s but a backup passes its check "
                  "(%s); the daemon will restore the newest valid backup", config_path, path,
                  access(path, F_OK) == 0 ? "empty" : "missing", bak);
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
        if (errno == ENOENT) {
            if (!check_new_store(config_path, path, note, note_size, err, err_size))
                return false;
            say_restore(config_path, path, note, note_size);
            return true;
        }
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
    if (info.empty) {
        (void)say(note, note_size, "%s: store.path: %s is empty; the daemon will create the "
                  "schema in it", config_path, path);
        say_restore(config_path, path, note, note_size);
    } else if (info.schema_found < STORE_SCHEMA_VERSION)
        (void)say(note, note_size, "%s: store.path: %s: tern database, schema version %u; the "
                  "daemon will migrate it to version %u", config_path, path, info.schema_found,
                  STORE_SCHEMA_VERSION);
    else
        (void)say(note, note_size, "%s: store.path: %s: tern database, schema version %u, "
                  "passes its check", config_path, path, info.schema_found);
    return true;
}
