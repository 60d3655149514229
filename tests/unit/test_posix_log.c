/*
 * test_posix_log.c - the daemon's log lines (src/platform/posix/log.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include <unistd.h>

#include "platform/posix/log.h"

/* 2026-11-29T22:30:01.123Z */
static const int64_t T = 1795991401123;

TEST(log_line_has_utc_millisecond_timestamp_level_and_message)
{
    char buf[TERN_LOG_LINE_MAX];
    size_t n = tern_log_format(buf, sizeof buf, T, BROKER_LOG_INFO, "hello world");

    CHECK(strcmp(buf, "2026-11-29T22:30:01.123Z INFO hello world\n") == 0);
    CHECK_EQ(n, strlen(buf));
    tern_log_format(buf, sizeof buf, 5, BROKER_LOG_WARN, "x");
    CHECK(strcmp(buf, "1970-01-01T00:00:00.005Z WARN x\n") == 0);
    tern_log_format(buf, sizeof buf, T, BROKER_LOG_ERROR, "");
    CHECK(strcmp(buf, "2026-11-29T22:30:01.123Z ERROR \n") == 0);
    tern_log_format(buf, sizeof buf, T, BROKER_LOG_DEBUG, "d");
    CHECK(strcmp(buf, "2026-11-29T22:30:01.123Z DEBUG d\n") == 0);
}

TEST(log_control_characters_cannot_forge_extra_lines)
{
    char buf[TERN_LOG_LINE_MAX];

    tern_log_format(buf, sizeof buf, T, BROKER_LOG_INFO, "client a\nFAKE\r\x1b[1m\x7f ok");
    CHECK(strcmp(buf, "2026-11-29T22:30:01.123Z INFO client a?FAKE??[1m? ok\n") == 0);
}

TEST(log_long_message_is_cut_but_keeps_its_newline)
{
    char msg[3000], buf[64];
    size_t n;

    memset(msg, 'm', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    n = tern_log_format(buf, sizeof buf, T, BROKER_LOG_INFO, msg);
    CHECK_EQ(n, sizeof buf - 1);
    CHECK_EQ(buf[n - 1], '\n');
    CHECK_EQ(buf[n], '\0');
}

TEST(log_drops_messages_above_the_configured_level)
{
    int fds[2];
    tern_log lg;
    char got[256];
    ssize_t n;

    CHECK(pipe(fds) == 0);
    tern_log_init(&lg, BROKER_LOG_WARN, fds[1]);
    tern_logf(&lg, BROKER_LOG_INFO, "hidden %d", 1);
    tern_log_broker(&lg, BROKER_LOG_DEBUG, "hidden too");
    tern_logf(&lg, BROKER_LOG_WARN, "shown %d", 2);
    tern_log_broker(&lg, BROKER_LOG_ERROR, "from core");
    close(fds[1]);
    n = read(fds[0], got, sizeof got - 1);
    close(fds[0]);
    CHECK(n > 0);
    got[n] = '\0';
    CHECK(strstr(got, "hidden") == NULL);
    CHECK(strstr(got, "Z WARN shown 2\n") != NULL);
    CHECK(strstr(got, "Z ERROR from core\n") != NULL);
}
