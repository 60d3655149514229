/*
 * test_config.c - the configuration parser (src/config/): accepted syntax,
 * every rejection and its message, defaults, and the translation into the
 * broker core's settings. The keys of the TLS, store, limits and telemetry
 * sections are test_config_keys.c's.
 */
#include "test.h"

#include <stdlib.h>

#include "config/config.h"
#include "test_config.h"


TEST(config_full_file_sets_every_key)
{
    const char *text = "config_version = 1\n"
                       "listener.plain = 127.0.0.1:1884\n"
                       "log.level = debug\n"
                       "limits.max_connections = 5\n"
                       "limits.max_packet_size = 16\n"
                       "limits.max_inflight = 65535\n"
                       "limits.max_queued = 7\n"
                       "limits.max_queued_bytes = 16\n"
                       "limits.max_out_bytes = 1024\n"
                       "limits.max_inbound_qos2 = 9\n"
                       "limits.connect_timeout = 11\n"
                       "limits.max_retained = 12\n"
                       "limits.max_retained_bytes = 4096\n"
                       "limits.work_budget = 13\n"
                       "limits.publisher_hold = 3600\n"
                       "limits.max_subscriptions = 17\n"
                       "limits.max_topic_levels = 32768\n"
                       "limits.max_topic_length = 65535\n"
                       "limits.max_sessions_per_identity = 18\n"
                       "limits.max_queued_bytes_per_identity = 19\n"
                       "limits.max_keepalive = 20\n"
                       "limits.max_topic_alias = 0\n"
                       "limits.receive_maximum = 21\n"
                       "mqtt.retain_available = false\n"
                       "mqtt.shared_subscriptions = false\n"
                       "session.expiry = 14\n"
                       "sys.interval = 15\n"
                       "auth.allow_anonymous = true\n";
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;
    const uint8_t lo[4] = {127, 0, 0, 1};

    CHECK(parse_text(text, &cfg, err));
    CHECK_EQ(err[0], '\0');
    CHECK_EQ(cfg.version, 1);
    CHECK_EQ(cfg.listener_plain.family, TERN_ADDR_IPV4);
    CHECK_MEM(cfg.listener_plain.addr, lo, 4);
    CHECK_EQ(cfg.listener_plain.port, 1884);
    CHECK_EQ(cfg.log_level, BROKER_LOG_DEBUG);
    CHECK_EQ(cfg.limits.max_connections, 5);
    CHECK_EQ(cfg.limits.max_packet_size, 16);
    CHECK_EQ(cfg.limits.max_inflight, 65535);
    CHECK_EQ(cfg.limits.max_queued, 7);
    CHECK_EQ(cfg.limits.max_queued_bytes, 16);
    CHECK_EQ(cfg.limits.max_out_bytes, 1024);
    CHECK_EQ(cfg.limits.max_inbound_qos2, 9);
    CHECK_EQ(cfg.limits.connect_timeout_s, 11);
    CHECK_EQ(cfg.limits.max_retained, 12);
    CHECK_EQ(cfg.limits.max_retained_bytes, 4096);
    CHECK_EQ(cfg.limits.work_budget, 13);
    CHECK_EQ(cfg.limits.publisher_hold_s, 3600);
    CHECK_EQ(cfg.limits.max_subscriptions, 17);
    CHECK_EQ(cfg.limits.max_topic_levels, 32768);
    CHECK_EQ(cfg.limits.max_topic_length, 65535);
    CHECK_EQ(cfg.limits.max_sessions_per_identity, 18);
    CHECK_EQ(cfg.limits.max_queued_bytes_per_identity, 19);
    CHECK_EQ(cfg.limits.max_keepalive, 20);
    CHECK_EQ(cfg.limits.max_topic_alias, 0);
    CHECK_EQ(cfg.limits.receive_maximum, 21);
    CHECK(!cfg.retain_available);
    CHECK(!cfg.shared_subscriptions);
    CHECK_EQ(cfg.session_expiry_s, 14);
    CHECK_EQ(cfg.sys_interval_s, 15);
    CHECK(cfg.allow_anonymous);
}

TEST(config_version_only_gives_documented_defaults)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\n", &cfg, err));
    CHECK_EQ(cfg.listener_plain.family, TERN_ADDR_NONE);
    CHECK_EQ(cfg.log_level, BROKER_LOG_INFO);
    CHECK_EQ(cfg.limits.max_connections, 100000);
    CHECK_EQ(cfg.limits.max_packet_size, 1048576); /* limits_default.h says why */
    CHECK_EQ(cfg.limits.max_inflight, 1024);
    CHECK_EQ(cfg.limits.max_queued, 1000);
    CHECK_EQ(cfg.limits.max_queued_bytes, 16777216);
    CHECK_EQ(cfg.limits.max_out_bytes, 1048576);
    CHECK_EQ(cfg.limits.max_inbound_qos2, 1024);
    CHECK_EQ(cfg.limits.connect_timeout_s, 10);
    CHECK_EQ(cfg.limits.max_retained, 100000);
    CHECK_EQ(cfg.limits.max_retained_bytes, 256u << 20);
    CHECK_EQ(cfg.limits.work_budget, 256);
    CHECK_EQ(cfg.limits.publisher_hold_s, 2);
    CHECK_EQ(cfg.limits.max_subscriptions, 10000);
    CHECK_EQ(cfg.limits.max_topic_levels, 64);
    CHECK_EQ(cfg.limits.max_topic_length, 4096);
    CHECK_EQ(cfg.limits.max_sessions_per_identity, 100);
    CHECK_EQ(cfg.limits.max_queued_bytes_per_identity, 64u << 20);
    CHECK_EQ(cfg.limits.max_keepalive, 65535);
    CHECK_EQ(cfg.limits.max_topic_alias, 10);
    CHECK_EQ(cfg.limits.receive_maximum, 1024);
    CHECK(cfg.retain_available);
    CHECK(cfg.shared_subscriptions);
    CHECK_EQ(cfg.session_expiry_s, 0);
    CHECK_EQ(cfg.sys_interval_s, 10);
    CHECK(!cfg.allow_anonymous);
}

/* Each key with a value it must refuse, and the exact message expected. */
static const struct bad_case {
    const char *line;
    const char *message;
} bad_cases[] = {
    {"listener.plain = localhost:1883",
     "t.conf:2: listener.plain: expected IPV4:PORT or [IPV6]:PORT, e.g. 127.0.0.1:1883 or "
     "[::1]:1883, got 'localhost:1883'"},
    {"log.level = verbose",
     "t.conf:2: log.level: expected one of error, warn, info, debug, got 'verbose'"},
    {"limits.max_connections = 0",
     "t.conf:2: limits.max_connections: expected an integer 1..4294967295, got '0'"},
    {"limits.max_connections = 4294967296",
     "t.conf:2: limits.max_connections: expected an integer 1..4294967295, got "
     "'4294967296'"},
    {"limits.max_packet_size = 15",
     "t.conf:2: limits.max_packet_size: expected an integer 16..268435460, got '15'"},
    {"limits.max_packet_size = 268435461",
     "t.conf:2: limits.max_packet_size: expected an integer 16..268435460, got "
     "'268435461'"},
    {"limits.max_inflight = abc",
     "t.conf:2: limits.max_inflight: expected an integer 1..65535, got 'abc'"},
    {"limits.max_inflight = 65536",
     "t.conf:2: limits.max_inflight: expected an integer 1..65535, got '65536'"},
    {"limits.max_queued = -1",
     "t.conf:2: limits.max_queued: expected an integer 1..4294967295, got '-1'"},
    {"limits.max_queued_bytes = 1k",
     "t.conf:2: limits.max_queued_bytes: expected an integer 1..4294967295, got '1k'"},
    {"limits.max_out_bytes = 1023",
     "t.conf:2: limits.max_out_bytes: expected an integer 1024..4294967295, got '1023'"},
    {"limits.max_inbound_qos2 = 0",
     "t.conf:2: limits.max_inbound_qos2: expected an integer 1..65535, got '0'"},
    {"limits.connect_timeout = 10s",
     "t.conf:2: limits.connect_timeout: expected an integer 1..86400, got '10s'"},
    {"limits.max_retained = +5",
     "t.conf:2: limits.max_retained: expected an integer 1..4294967295, got '+5'"},
    {"limits.work_budget = 0x10",
     "t.conf:2: limits.work_budget: expected an integer 1..4294967295, got '0x10'"},
    {"limits.publisher_hold = 3601",
     "t.conf:2: limits.publisher_hold: expected an integer 0..3600, got '3601'"},
    {"limits.max_subscriptions = 0",
     "t.conf:2: limits.max_subscriptions: expected an integer 1..4294967295, got '0'"},
    {"limits.max_topic_levels = 0",
     "t.conf:2: limits.max_topic_levels: expected an integer 1..32768, got '0'"},
    {"limits.max_topic_levels = 32769",
     "t.conf:2: limits.max_topic_levels: expected an integer 1..32768, got '32769'"},
    {"limits.max_topic_length = 65536",
     "t.conf:2: limits.max_topic_length: expected an integer 1..65535, got '65536'"},
    {"limits.max_topic_length = 4k",
     "t.conf:2: limits.max_topic_length: expected an integer 1..65535, got '4k'"},
    {"session.expiry = 1.5",
     "t.conf:2: session.expiry: expected an integer 0..4294967295, got '1.5'"},
    {"sys.interval = 86401",
     "t.conf:2: sys.interval: expected an integer 0..86400, got '86401'"},
    {"auth.allow_anonymous = yes",
     "t.conf:2: auth.allow_anonymous: expected true or false, got 'yes'"},
    {"auth.allow_anonymous = True",
     "t.conf:2: auth.allow_anonymous: expected true or false, got 'True'"},
    {"listener.tls = localhost:8883",
     "t.conf:2: listener.tls: expected IPV4:PORT or [IPV6]:PORT, e.g. 127.0.0.1:1883 or "
     "[::1]:1883, got 'localhost:8883'"},
    {"tls.identity = subject",
     "t.conf:2: tls.identity: expected one of cn, san-dns, san-email, san-uri, got 'subject'"},
    {"tls.identity = CN",
     "t.conf:2: tls.identity: expected one of cn, san-dns, san-email, san-uri, got 'CN'"},
    {"tls.min_version = 1.1", "t.conf:2: tls.min_version: expected 1.3 or 1.2, got '1.1'"},
    {"tls.min_version = 13", "t.conf:2: tls.min_version: expected 1.3 or 1.2, got '13'"},
    {"tls.require_client_cert = no",
     "t.conf:2: tls.require_client_cert: expected true or false, got 'no'"},
    {"tls.handshake_timeout = 0",
     "t.conf:2: tls.handshake_timeout: expected an integer 1..3600, got '0'"},
    {"tls.handshake_timeout = 3601",
     "t.conf:2: tls.handshake_timeout: expected an integer 1..3600, got '3601'"},
    {"limits.max_keepalive = 0",
     "t.conf:2: limits.max_keepalive: expected an integer 1..65535, got '0'"},
    {"limits.max_topic_alias = 65536",
     "t.conf:2: limits.max_topic_alias: expected an integer 0..65535, got '65536'"},
    {"limits.receive_maximum = 0",
     "t.conf:2: limits.receive_maximum: expected an integer 1..65535, got '0'"},
    {"mqtt.retain_available = no",
     "t.conf:2: mqtt.retain_available: expected true or false, got 'no'"},
    {"mqtt.shared_subscriptions = 1",
     "t.conf:2: mqtt.shared_subscriptions: expected true or false, got '1'"},
    {"tls.operators = alice,,bob",
     "t.conf:2: tls.operators: expected comma-separated names, none empty, at most 1023 bytes "
     "in all, got 'alice,,bob'"},
    {"tls.operators = alice, ",
     "t.conf:2: tls.operators: expected comma-separated names, none empty, at most 1023 bytes "
     "in all, got 'alice,'"},
};

TEST(config_bad_value_of_each_key_is_rejected_with_key_and_expectation)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        char text[256], err[TERN_CONFIG_ERR_SIZE];

        snprintf(text, sizeof text, "config_version = 1\n%s\n", bad_cases[i].line);
        CHECK(rejects(text, err));
        if (strcmp(err, bad_cases[i].message) != 0) {
            fprintf(stderr, "  got:  %s\n  want: %s\n", err, bad_cases[i].message);
            CHECK(!"message differs");
        }
    }
}

TEST(config_listener_accepts_ipv4_ipv6_and_embedded_ipv4_forms)
{
    static const struct {
        const char *value;
        uint8_t family;
        uint8_t addr[16];
        uint16_t port;
    } ok[] = {
        {"0.0.0.0:1883", TERN_ADDR_IPV4, {0}, 1883},
        {"255.255.255.255:65535", TERN_ADDR_IPV4, {255, 255, 255, 255}, 65535},
        {"127.0.0.1:0", TERN_ADDR_IPV4, {127, 0, 0, 1}, 0},
        {"[::1]:1883", TERN_ADDR_IPV6, {[15] = 1}, 1883},
        {"[::]:8883", TERN_ADDR_IPV6, {0}, 8883},
        {"[fe80::1:2]:1", TERN_ADDR_IPV6, {0xfe, 0x80, [13] = 1, [15] = 2}, 1},
        {"[2001:db8:0:0:0:0:0:FFFF]:1", TERN_ADDR_IPV6,
         {0x20, 0x01, 0x0d, 0xb8, [14] = 0xff, [15] = 0xff}, 1},
        {"[1::]:2", TERN_ADDR_IPV6, {[1] = 1}, 2},
        {"[::ffff:10.1.2.3]:3", TERN_ADDR_IPV6, {[10] = 0xff, [11] = 0xff, 10, 1, 2, 3}, 3},
    };

    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[128], err[TERN_CONFIG_ERR_SIZE];
        tern_config cfg;

        snprintf(text, sizeof text, "config_version = 1\nlistener.plain = %s\n", ok[i].value);
        if (!parse_text(text, &cfg, err))
            fprintf(stderr, "  %s\n", err);
        CHECK(parse_text(text, &cfg, err));
        CHECK_EQ(cfg.listener_plain.family, ok[i].family);
        CHECK_MEM(cfg.listener_plain.addr, ok[i].addr, 16);
        CHECK_EQ(cfg.listener_plain.port, ok[i].port);
    }
}

TEST(config_listener_rejects_malformed_addresses)
{
    static const char *const bad[] = {
        "127.0.0.1",        "127.0.0.1:",        "127.0.0.1:65536",  "127.0.0.1:01883",
        "127.0.0:1883",     "127.0.0.1.1:1883",  "256.0.0.1:1883",   "127.0.0.01:1883",
        ":1883",            "::1:1883",          "[::1]",            "[::1]1883",
        "[::1:1883",        "[1::2::3]:1",       "[1:2:3:4:5:6:7:8:9]:1", "[1:2:3:4:5:6:7]:1",
        "[12345::]:1",      "[:1]:1",            "[1:]:1",           "[::g]:1",
        "[1.2.3.4::]:1",    "[::1%eth0]:1",      "[]:1",             "127.0.0.1:18x3",
        "[1:2:3:4:5:6:7::8]:1",
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128], err[TERN_CONFIG_ERR_SIZE];

        snprintf(text, sizeof text, "config_version = 1\nlistener.plain = %s\n", bad[i]);
        if (!rejects(text, err))
            fprintf(stderr, "  accepted: %s\n", bad[i]);
        CHECK(rejects(text, err));
        CHECK(strstr(err, "t.conf:2: listener.plain: expected") == err);
    }
}

TEST(config_unknown_key_names_file_line_and_key)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\n\n# note\ncluster.peer = 10.0.0.1:8883\n", err));
    CHECK(strcmp(err, "t.conf:4: unknown key 'cluster.peer' "
                      "(a newer release of tern may be needed)") == 0);
}

TEST(config_unknown_key_close_to_a_known_one_suggests_it)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\nlimits.max_inflght = 3\n", err));
    CHECK(strcmp(err, "t.conf:2: unknown key 'limits.max_inflght' "
                      "(did you mean 'limits.max_inflight'?)") == 0);
}

TEST(config_duplicate_key_is_rejected)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\nlog.level = info\nlog.level = debug\n", err));
    CHECK(strcmp(err, "t.conf:3: duplicate key 'log.level'") == 0);
    CHECK(rejects("config_version = 1\nconfig_version = 1\n", err));
    CHECK(strcmp(err, "t.conf:2: duplicate key 'config_version'") == 0);
}

TEST(config_missing_version_is_rejected)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("", err));
    CHECK(strcmp(err, "t.conf:1: missing 'config_version = 1' "
                      "(it must be the first setting)") == 0);
    CHECK(rejects("# only a comment\n\n", err));
    CHECK(strstr(err, "t.conf:1: missing 'config_version = 1'") == err);
}

TEST(config_version_must_be_the_first_setting)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("# c\nlog.level = info\nconfig_version = 1\n", err));
    CHECK(strcmp(err, "t.conf:2: the first setting must be 'config_version = 1', "
                      "got 'log.level'") == 0);
}

TEST(config_version_2_says_a_newer_release_is_needed)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 2\nlimits.future = 1\n", err));
    CHECK(strcmp(err, "t.conf:1: config_version 2 is newer than this release reads (1): "
                      "a newer release of tern is needed") == 0);
}

TEST(config_version_0_or_garbage_expects_1)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 0\n", err));
    CHECK(strcmp(err, "t.conf:1: config_version: expected 1, got '0'") == 0);
    CHECK(rejects("config_version = one\n", err));
    CHECK(strcmp(err, "t.conf:1: config_version: expected 1, got 'one'") == 0);
}

TEST(config_comments_blank_lines_and_whitespace_are_ignored)
{
    const char *text = "\n"
                       "# header comment\n"
                       "   # indented comment\n"
                       "\t config_version\t=\t1   # trailing comment\n"
                       "\n"
                       "log.level=warn#not-a-comment-so-bad\n";
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    /* '#' glued to a value is part of it, so this must fail on line 6. */
    CHECK(!parse_text(text, &cfg, err));
    CHECK(strcmp(err, "t.conf:6: log.level: expected one of error, warn, info, debug, "
                      "got 'warn#not-a-comment-so-bad'") == 0);

    CHECK(parse_text("\n# c\n   # c\n\t config_version\t=\t1   # c\n\n"
                     "log.level=warn #c\n  sys.interval   =   0\t\n",
                     &cfg, err));
    CHECK_EQ(cfg.log_level, BROKER_LOG_WARN);
    CHECK_EQ(cfg.sys_interval_s, 0);
}

TEST(config_crlf_line_endings_are_accepted)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\r\n# c\r\nlimits.max_inflight = 7\r\n"
                     "auth.allow_anonymous = true\r\n",
                     &cfg, err));
    CHECK_EQ(cfg.limits.max_inflight, 7);
    CHECK(cfg.allow_anonymous);
    CHECK(rejects("config_version = 1\r\nlog.level = loud\r\n", err));
    CHECK(strcmp(err, "t.conf:2: log.level: expected one of error, warn, info, debug, "
                      "got 'loud'") == 0);
}

TEST(config_control_character_is_rejected_with_its_line)
{
    char err[TERN_CONFIG_ERR_SIZE];
    const char text[] = "config_version = 1\nlog.level = in\0fo\n";
    tern_config cfg;

    CHECK(!tern_config_parse(&cfg, "t.conf", text, sizeof text - 1, err, sizeof err));
    CHECK(strcmp(err, "t.conf:2: control character (byte 0) in line") == 0);
    CHECK(rejects("config_version = 1\nlog.level = info\rdebug\n", err));
    CHECK(strcmp(err, "t.conf:2: control character (byte 13) in line") == 0);
}

TEST(config_very_long_lines_parse_and_long_values_are_cut_in_messages)
{
    size_t n = 200000;
    char *text = malloc(n + 64);
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;
    bool ok;

    CHECK(text != NULL);
    /* A comment line far longer than any buffer is fine. */
    strcpy(text, "config_version = 1\n#");
    memset(text + strlen(text), 'x', n);
    strcpy(text + 20 + n, "\nlimits.max_queued = 9\n");
    ok = parse_text(text, &cfg, err) && cfg.limits.max_queued == 9;
    /* A long bad value: the message stays bounded and says what it saw. */
    strcpy(text, "config_version = 1\nlimits.max_queued = ");
    memset(text + strlen(text), '7', n);
    text[39 + n] = '\0';
    ok = ok && rejects(text, err);
    free(text);
    CHECK(ok);
    CHECK(strlen(err) < TERN_CONFIG_ERR_SIZE);
    CHECK(strcmp(err, "t.conf:2: limits.max_queued: expected an integer 1..4294967295, "
                      "got '7777777777777777777777777777777777777777...'") == 0);
}

TEST(config_last_line_without_newline_is_parsed)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\nlimits.work_budget = 64", &cfg, err));
    CHECK_EQ(cfg.limits.work_budget, 64);
    CHECK(parse_text("config_version = 1", &cfg, err));
    CHECK(rejects("config_version = 1\nlimits.work_budget = x", err));
    CHECK(strstr(err, "t.conf:2: ") == err);
}

TEST(config_empty_value_is_rejected_with_what_is_expected)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\nlimits.max_inflight =   # none\n", err));
    CHECK(strcmp(err, "t.conf:2: limits.max_inflight: missing value "
                      "(expected an integer 1..65535)") == 0);
    CHECK(rejects("config_version =\n", err));
    CHECK(strcmp(err, "t.conf:1: config_version: missing value (expected 1)") == 0);
}

TEST(config_line_without_equals_or_key_is_rejected)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\nlog.level info\n", err));
    CHECK(strcmp(err, "t.conf:2: expected 'key = value', got 'log.level info'") == 0);
    CHECK(rejects("config_version = 1\n = info\n", err));
    CHECK(strcmp(err, "t.conf:2: missing key before '='") == 0);
}

TEST(config_failed_parse_leaves_the_callers_config_untouched)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg, before;

    memset(&cfg, 0xA5, sizeof cfg);
    before = cfg;
    CHECK(!parse_text("config_version = 1\nlimits.max_inflight = 5\nbogus = 1\n", &cfg, err));
    CHECK_MEM(&cfg, &before, sizeof cfg);
}

TEST(config_error_message_is_cut_to_a_small_buffer_and_terminated)
{
    char err[16];
    tern_config cfg;
    const char *text = "config_version = 1\nbogus = 1\n";

    memset(err, 'z', sizeof err);
    CHECK(!tern_config_parse(&cfg, "t.conf", text, strlen(text), err, sizeof err));
    CHECK(strcmp(err, "t.conf:2: unkno") == 0);
    CHECK(!tern_config_parse(&cfg, "t.conf", text, strlen(text), NULL, 0));
}

TEST(config_utf8_byte_order_mark_is_skipped)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("\xEF\xBB\xBF" "config_version = 1\n", &cfg, err));
}

TEST(config_to_broker_converts_units_and_off_values)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;
    broker_config bc;

    memset(&bc, 0, sizeof bc);
    CHECK(parse_text("config_version = 1\nlimits.connect_timeout = 86400\n"
                     "sys.interval = 0\nsession.expiry = 0\nlog.level = error\n"
                     "auth.allow_anonymous = true\nlimits.max_inflight = 3\n"
                     "limits.publisher_hold = 0\n"
                     "limits.max_subscriptions = 5\nlimits.max_topic_levels = 6\n"
                     "limits.max_topic_length = 7\n"
                     "limits.max_sessions_per_identity = 8\n"
                     "limits.max_queued_bytes_per_identity = 2000000\n",
                     &cfg, err));
    tern_config_to_broker(&cfg, &bc);
    CHECK_EQ(bc.limits.max_sessions_per_identity, 8);
    CHECK_EQ(bc.limits.max_queued_bytes_per_identity, 2000000);
    CHECK_EQ(bc.limits.max_subscriptions, 5);
    CHECK_EQ(bc.limits.max_topic_levels, 6);
    CHECK_EQ(bc.limits.max_topic_length, 7);
    CHECK_EQ(bc.limits.publisher_hold_ms, UINT32_MAX);
    CHECK_EQ(bc.limits.connect_timeout_ms, 86400000u);
    CHECK_EQ(bc.limits.sys_interval_s, UINT32_MAX);
    CHECK_EQ(bc.limits.session_expiry_s, 0);
    CHECK_EQ(bc.limits.max_inflight, 3);
    CHECK_EQ(bc.limits.max_connections, 100000);
    CHECK_EQ(bc.limits.work_budget, 256);
    CHECK_EQ(bc.log_level, BROKER_LOG_ERROR);
    CHECK(bc.allow_anonymous);
    CHECK(!bc.retain_disabled);
    CHECK(!bc.shared_subs_disabled);

    tern_config_defaults(&cfg);
    tern_config_to_broker(&cfg, &bc);
    CHECK_EQ(bc.limits.max_subscriptions, 10000);
    CHECK_EQ(bc.limits.max_topic_levels, 64);
    CHECK_EQ(bc.limits.max_topic_length, 4096);
    CHECK_EQ(bc.limits.sys_interval_s, 10);
    CHECK_EQ(bc.limits.connect_timeout_ms, 10000);
    CHECK_EQ(bc.limits.publisher_hold_ms, 2000);
    CHECK(!bc.allow_anonymous);
    CHECK_EQ(bc.limits.max_keepalive, 65535);
    CHECK_EQ(bc.limits.max_topic_alias, 10);
    CHECK_EQ(bc.limits.receive_maximum, 1024);
}

TEST(config_to_broker_mqtt5_keys_no_topic_aliases_and_switches_off)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;
    broker_config bc;

    memset(&bc, 0, sizeof bc);
    CHECK(parse_text("config_version = 1\nlimits.max_topic_alias = 0\n"
                     "limits.max_keepalive = 60\nlimits.receive_maximum = 7\n"
                     "mqtt.retain_available = false\nmqtt.shared_subscriptions = false\n",
                     &cfg, err));
    tern_config_to_broker(&cfg, &bc);
    CHECK_EQ(bc.limits.max_topic_alias, UINT32_MAX); /* the core's "none": 0 is its default */
    CHECK_EQ(bc.limits.max_keepalive, 60);
    CHECK_EQ(bc.limits.receive_maximum, 7);
    CHECK(bc.retain_disabled);
    CHECK(bc.shared_subs_disabled);
}
