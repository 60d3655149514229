/*
 * test_posix_file.c - whole-file reads for the configuration
 * (src/platform/posix/file.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include <stdlib.h>
#include <unistd.h>

#include "platform/posix/file.h"

/* A temporary file holding text; its path in path (caller unlinks). */
static bool temp_file(char *path, const char *text, size_t len)
{
    int fd;
    bool ok;

    strcpy(path, "/tmp/tern-test-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0)
        return false;
    ok = write(fd, text, len) == (ssize_t)len;
    return close(fd) == 0 && ok;
}

TEST(file_read_returns_all_bytes_nul_terminated)
{
    char path[32], err[256], *data = NULL;
    char big[10000];
    size_t len = 0;
    bool ok;

    memset(big, 'q', sizeof big);
    CHECK(temp_file(path, big, sizeof big));
    ok = tern_read_file(path, 1 << 20, &data, &len, err, sizeof err);
    unlink(path);
    CHECK(ok);
    CHECK_EQ(len, sizeof big);
    CHECK_MEM(data, big, sizeof big);
    CHECK_EQ(data[len], '\0');
    free(data);
}

TEST(file_missing_names_the_path_and_the_reason)
{
    char err[256], *data = (char *)1;
    size_t len = 7;

    CHECK(!tern_read_file("/nonexistent/tern.conf", 100, &data, &len, err, sizeof err));
    CHECK(data == NULL);
    CHECK_EQ(len, 0);
    CHECK(strcmp(err, "/nonexistent/tern.conf: No such file or directory") == 0);
    CHECK(!tern_read_file("/tmp", 100, &data, &len, err, sizeof err));
    CHECK(strcmp(err, "/tmp: Is a directory") == 0);
}

TEST(file_larger_than_the_limit_is_refused)
{
    char path[32], err[256], *data = NULL;
    size_t len = 0;
    bool ok, exact;

    CHECK(temp_file(path, "0123456789", 10));
    ok = tern_read_file(path, 9, &data, &len, err, sizeof err);
    exact = tern_read_file(path, 10, &data, &len, err + 128, sizeof err - 128);
    unlink(path);
    CHECK(!ok);
    CHECK(strstr(err, ": larger than 9 bytes") != NULL);
    CHECK(exact);
    CHECK_EQ(len, 10);
    free(data);
}
