/*
 * test_config_time.c - the SNTP keys (time.sntp_servers, time.max_step,
 * time.resync_interval): defaults, private addresses with and without a
 * port, and refusals with the reason: public, CGNAT, loopback, bad syntax,
 * port 0, a server listed twice, too many servers, out-of-range numbers.
 */
#include "test.h"

#include "config/config.h"

static bool parse_text(const char *text, tern_config *cfg, char *err)
{
    return tern_config_parse(cfg, "t.conf", text, strlen(text), err, TERN_CONFIG_ERR_SIZE);
}

TEST(config_time_defaults_no_servers)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;
    tern_sntp_server s[TERN_TIME_SERVERS_MAX];

    CHECK(parse_text("config_version = 1\n", &cfg, err));
    CHECK_EQ(tern_config_sntp_servers(&cfg, s, TERN_TIME_SERVERS_MAX), 0);
    CHECK_EQ(cfg.time.max_step_s, TERN_TIME_MAX_STEP_S_DEFAULT);
    CHECK_EQ(cfg.time.resync_interval_s, TERN_TIME_RESYNC_S_DEFAULT);
}

TEST(config_time_private_servers_with_optional_port)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;
    tern_sntp_server s[TERN_TIME_SERVERS_MAX];

    CHECK(parse_text("config_version = 1\n"
                     "time.sntp_servers = 10.0.2.2:12301, 172.16.0.1,192.168.255.254:123 , "
                     "172.31.255.1\n"
                     "time.max_step = 60\ntime.resync_interval = 16\n",
                     &cfg, err));
    CHECK_EQ(tern_config_sntp_servers(&cfg, s, TERN_TIME_SERVERS_MAX), 4);
    static const uint8_t a0[4] = {10, 0, 2, 2}, a2[4] = {192, 168, 255, 254},
                         a3[4] = {172, 31, 255, 1};
    CHECK_MEM(s[0].addr, a0, 4);
    CHECK_EQ(s[0].port, 12301);
    CHECK_EQ(s[1].port, 123);
    CHECK_MEM(s[2].addr, a2, 4);
    CHECK_MEM(s[3].addr, a3, 4);
    CHECK_EQ(cfg.time.max_step_s, 60);
    CHECK_EQ(cfg.time.resync_interval_s, 16);
    /* max bounds the output. */
    CHECK_EQ(tern_config_sntp_servers(&cfg, s, 2), 2);
}

TEST(config_time_public_and_bad_servers_are_refused_with_the_reason)
{
    static const struct {
        const char *value, *msg;
    } bad[] = {
        {"8.8.8.8", "t.conf:2: time.sntp_servers: '8.8.8.8' is not a private address"},
        {"10.0.0.1, 1.1.1.1", "'1.1.1.1' is not a private address"},
        {"100.64.0.1", "'100.64.0.1' is not a private address"},
        {"127.0.0.1", "is not a private address"},
        {"172.32.0.1", "is not a private address"},
        {"172.15.255.255", "is not a private address"},
        {"192.169.0.1", "is not a private address"},
        {"10.0.0.1:0", "is not an IPv4 address with an optional :PORT"},
        {"10.0.0.1:65536", "is not an IPv4 address with an optional :PORT"},
        {"10.0.0.1:", "is not an IPv4 address with an optional :PORT"},
        {"10.0.0", "is not an IPv4 address with an optional :PORT"},
        {"ntp.example", "is not an IPv4 address with an optional :PORT"},
        {"10.0.0.01", "is not an IPv4 address with an optional :PORT"},
        {"10.0.0.1:123, 10.0.0.2, 10.0.0.1", "'10.0.0.1' is listed twice"},
        {"10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5,10.0.0.6,10.0.0.7,10.0.0.8,10.0.0.9",
         "time.sntp_servers: more than 8 servers"},
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[200], err[TERN_CONFIG_ERR_SIZE];
        tern_config cfg;

        snprintf(text, sizeof text, "config_version = 1\ntime.sntp_servers = %s\n",
                 bad[i].value);
        CHECK(!parse_text(text, &cfg, err));
        if (strstr(err, bad[i].msg) == NULL)
            fprintf(stderr, "  got: %s\n", err);
        CHECK(strstr(err, bad[i].msg) != NULL);
    }
}

TEST(config_time_numbers_out_of_range_are_refused)
{
    static const char *const bad[] = {"time.max_step = 0\n", "time.max_step = 31536001\n",
                                      "time.resync_interval = 15\n",
                                      "time.resync_interval = 86401\n"};

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[120], err[TERN_CONFIG_ERR_SIZE];
        tern_config cfg;

        snprintf(text, sizeof text, "config_version = 1\n%s", bad[i]);
        CHECK(!parse_text(text, &cfg, err));
        CHECK(strstr(err, bad[i][5] == 'm' ? "time.max_step" : "time.resync_interval") != NULL);
    }
}
