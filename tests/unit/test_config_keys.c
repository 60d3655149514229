/*
 * test_config_keys.c - the configuration's sections one by one (TLS and the
 * listeners that need it, store, handshake and input limits, telemetry):
 * their values, defaults, bounds and the rules across their keys.
 */
#include "test.h"

#include <stdlib.h>

#include "config/config.h"
#include "test_config.h"

/* A minimal valid TLS listener, for the tests below to add to. */
#define TLS_BASE                                                                    \
    "config_version = 1\n"                                                          \
    "listener.tls = 0.0.0.0:8883\n"                                                 \
    "tls.cert = /etc/tern/server.crt\n"                                             \
    "tls.key = /etc/tern/server.key\n"

TEST(config_tls_keys_are_parsed)
{
    const char *text = "config_version = 1\n"
                       "listener.tls = [::]:8884\n"
                       "tls.cert = pki/server chain.crt\n"
                       "tls.key = pki/server.key\n"
                       "tls.client_ca = /etc/tern/clients.pem\n"
                       "tls.operator_ca = /etc/tern/operators.pem\n"
                       "tls.operators = alice, bob@example.com ,urn:x:y\n"
                       "tls.identity = san-email\n"
                       "tls.min_version = 1.2\n"
                       "tls.require_client_cert = false\n"
                       "tls.handshake_timeout = 3600\n"
                       "acl.file = /etc/tern/acl\n";
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text(text, &cfg, err));
    CHECK_EQ(cfg.listener_tls.family, TERN_ADDR_IPV6);
    CHECK_EQ(cfg.listener_tls.port, 8884);
    CHECK_EQ(cfg.listener_plain.family, TERN_ADDR_NONE);
    CHECK(strcmp(cfg.tls.cert, "pki/server chain.crt") == 0); /* inner blanks kept */
    CHECK(strcmp(cfg.tls.key, "pki/server.key") == 0);
    CHECK(strcmp(cfg.tls.client_ca, "/etc/tern/clients.pem") == 0);
    CHECK(strcmp(cfg.tls.operator_ca, "/etc/tern/operators.pem") == 0);
    CHECK(strcmp(cfg.tls.operators, "alice, bob@example.com ,urn:x:y") == 0);
    CHECK_EQ(cfg.tls.identity, TERN_IDENTITY_SAN_EMAIL);
    CHECK_EQ(cfg.tls.min_version, TERN_CONFIG_TLS_1_2);
    CHECK(!cfg.tls.require_client_cert);
    CHECK_EQ(cfg.tls.handshake_timeout_s, 3600);
    CHECK(strcmp(cfg.acl_file, "/etc/tern/acl") == 0);
}

TEST(config_tls_defaults_are_strict)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\n", &cfg, err));
    CHECK_EQ(cfg.listener_tls.family, TERN_ADDR_NONE); /* a listener is always explicit */
    CHECK_EQ(cfg.tls.identity, TERN_IDENTITY_CN);
    CHECK_EQ(cfg.tls.min_version, TERN_CONFIG_TLS_1_3);
    CHECK(cfg.tls.require_client_cert);
    CHECK_EQ(cfg.tls.handshake_timeout_s, 10);
    CHECK_EQ(cfg.tls.cert[0], '\0');
    CHECK_EQ(cfg.tls.operators[0], '\0');
    CHECK_EQ(cfg.acl_file[0], '\0');
}

TEST(config_tls_identity_and_version_words)
{
    static const struct {
        const char *line;
        tern_config_identity identity;
    } ids[] = {{"tls.identity = cn", TERN_IDENTITY_CN},
               {"tls.identity = san-dns", TERN_IDENTITY_SAN_DNS},
               {"tls.identity = san-email", TERN_IDENTITY_SAN_EMAIL},
               {"tls.identity = san-uri", TERN_IDENTITY_SAN_URI}};
    char text[512], err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        snprintf(text, sizeof text, TLS_BASE "tls.client_ca = ca.pem\n%s\n", ids[i].line);
        CHECK(parse_text(text, &cfg, err));
        CHECK_EQ(cfg.tls.identity, ids[i].identity);
    }
    CHECK(parse_text(TLS_BASE "tls.client_ca = ca.pem\ntls.min_version = 1.3\n", &cfg, err));
    CHECK_EQ(cfg.tls.min_version, TERN_CONFIG_TLS_1_3);
}

TEST(config_tls_listener_needs_certificate_and_key)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\n# tls\nlistener.tls = 0.0.0.0:8883\n"
                  "tls.client_ca = ca.pem\n",
                  err));
    CHECK(strcmp(err, "t.conf:3: listener.tls needs tls.cert") == 0);
    CHECK(rejects("config_version = 1\nlistener.tls = 0.0.0.0:8883\ntls.cert = s.crt\n"
                  "tls.client_ca = ca.pem\n",
                  err));
    CHECK(strcmp(err, "t.conf:2: listener.tls needs tls.key") == 0);
}

/* Issue 16 item 7: a message within max_packet_size must fit a session's
 * queue, or it is acknowledged and never delivered to a QoS 1/2
 * subscriber. The message names both keys, their values and lines. */
TEST(config_packet_size_above_queue_bytes_is_refused_naming_both_keys)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(rejects("config_version = 1\nlimits.max_packet_size = 2000\n"
                  "limits.max_queued_bytes = 1000\n",
                  err));
    CHECK(strcmp(err, "t.conf:2: limits.max_packet_size (2000, line 2) is above "
                      "limits.max_queued_bytes (1000, line 3): a message that large could "
                      "never be queued for a QoS 1/2 subscriber; lower the first or raise the "
                      "second") == 0);
    /* The default packet size counts too. */
    CHECK(rejects("config_version = 1\n\nlimits.max_queued_bytes = 65536\n", err));
    CHECK(strstr(err, "t.conf:3: limits.max_packet_size (1048576, the default) is above "
                      "limits.max_queued_bytes (65536, line 3): ") == err);
    CHECK(rejects("config_version = 1\nlimits.max_packet_size = 268435460\n", err));
    CHECK(strstr(err, "t.conf:2: limits.max_packet_size (268435460, line 2) is above "
                      "limits.max_queued_bytes (16777216, the default): ") == err);
    /* The per-identity queue bound counts too, when it is the lower. */
    CHECK(rejects("config_version = 1\nlimits.max_packet_size = 2000\n"
                  "limits.max_queued_bytes_per_identity = 1000\n",
                  err));
    CHECK(strstr(err, "t.conf:2: limits.max_packet_size (2000, line 2) is above "
                      "limits.max_queued_bytes_per_identity (1000, line 3): ") == err);
    CHECK(rejects("config_version = 1\nlimits.max_sessions_per_identity = 0\n", err));
    CHECK(strstr(err, "limits.max_sessions_per_identity: expected an integer") != NULL);
    /* Equal is fine. */
    CHECK(parse_text("config_version = 1\nlimits.max_packet_size = 65536\n"
                     "limits.max_queued_bytes = 65536\n",
                     &cfg, err));
}

TEST(config_tls_required_client_certificates_need_a_ca)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(rejects(TLS_BASE, err));
    CHECK(strcmp(err, "t.conf:2: listener.tls needs tls.client_ca (the CAs of accepted "
                      "clients) while tls.require_client_cert = true") == 0);
    /* Without required certificates, or with only operators, it is fine. */
    CHECK(parse_text(TLS_BASE "tls.require_client_cert = false\n", &cfg, err));
    CHECK(parse_text(TLS_BASE "tls.operator_ca = ops.pem\n", &cfg, err));
    CHECK(parse_text(TLS_BASE "tls.client_ca = ca.pem\n", &cfg, err));
}

TEST(config_tls_settings_without_a_tls_listener_are_refused)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\nlistener.plain = 127.0.0.1:1883\n"
                  "tls.identity = san-dns\n",
                  err));
    CHECK(strcmp(err, "t.conf:3: tls.identity is set but there is no listener.tls or "
                      "listener.wss to use it") == 0);
}

/* listener.wss runs listener.tls's TLS: the same keys, the same rules,
 * with or without listener.tls beside it. */
TEST(config_wss_listener_shares_the_tls_keys_and_rules)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(rejects("config_version = 1\nlistener.wss = 0.0.0.0:8081\n", err));
    CHECK(strcmp(err, "t.conf:2: listener.wss needs tls.cert") == 0);
    CHECK(rejects("config_version = 1\nlistener.wss = 0.0.0.0:8081\ntls.cert = s.crt\n"
                  "tls.key = s.key\n", err));
    CHECK(strstr(err, "t.conf:2: listener.wss needs tls.client_ca") == err);
    CHECK(parse_text("config_version = 1\nlistener.wss = 0.0.0.0:8081\ntls.cert = s.crt\n"
                     "tls.key = s.key\ntls.client_ca = ca.pem\nlistener.ws = 127.0.0.1:8080\n",
                     &cfg, err));
    CHECK_EQ(cfg.listener_wss.port, 8081);
    CHECK_EQ(cfg.listener_ws.port, 8080);
    CHECK_EQ(cfg.listener_tls.family, TERN_ADDR_NONE);
}

TEST(config_paths_longer_than_the_limit_are_refused)
{
    char text[1024], err[TERN_CONFIG_ERR_SIZE], path[TERN_CONFIG_PATH_MAX + 1];
    tern_config cfg;

    memset(path, 'p', sizeof path - 1);
    path[TERN_CONFIG_PATH_MAX - 1] = '\0'; /* 255 bytes: the longest accepted */
    snprintf(text, sizeof text, "config_version = 1\nacl.file = %s\n", path);
    CHECK(parse_text(text, &cfg, err));
    CHECK_EQ(strlen(cfg.acl_file), TERN_CONFIG_PATH_MAX - 1);
    path[TERN_CONFIG_PATH_MAX - 1] = 'p';
    path[TERN_CONFIG_PATH_MAX] = '\0';
    snprintf(text, sizeof text, "config_version = 1\nacl.file = %s\n", path);
    CHECK(rejects(text, err));
    CHECK(strstr(err, "t.conf:2: acl.file: expected a path of at most 255 bytes, got 'ppp") ==
          err);
}

TEST(config_acl_file_needs_no_tls)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\nlistener.plain = 127.0.0.1:1883\n"
                     "acl.file = acl.conf\n",
                     &cfg, err));
    CHECK(strcmp(cfg.acl_file, "acl.conf") == 0);
}

TEST(config_store_keys_are_parsed)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\n"
                     "store.path = build/tern.db\n"
                     "store.sync = normal\n"
                     "store.backup_interval = 0\n",
                     &cfg, err));
    CHECK(strcmp(cfg.store_path, "build/tern.db") == 0);
    CHECK_EQ(cfg.store_sync, TERN_STORE_SYNC_NORMAL);
    CHECK_EQ(cfg.store_backup_interval_s, 0);
    CHECK(parse_text("config_version = 1\nstore.sync = full\n", &cfg, err));
    CHECK_EQ(cfg.store_sync, TERN_STORE_SYNC_FULL);
}

TEST(config_store_defaults_are_memory_only_durable_hourly)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\n", &cfg, err));
    CHECK_EQ(cfg.store_path[0], '\0'); /* no persistence unless asked */
    CHECK_EQ(cfg.store_sync, TERN_STORE_SYNC_FULL);
    CHECK_EQ(cfg.store_backup_interval_s, 3600);
    CHECK_EQ(cfg.store_cache_kib, TERN_STORE_CACHE_KIB_DEFAULT);
    CHECK_EQ(cfg.store_disk.kind, TERN_DISK_AUTO);
    CHECK_EQ(cfg.store_scrub_rate_kib, TERN_SCRUB_RATE_KIB_DEFAULT);
    CHECK_EQ(cfg.store_scrub_interval_s, TERN_SCRUB_INTERVAL_S_DEFAULT);
}

TEST(config_store_scrub_keys_are_parsed_and_bounded)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\nstore.scrub_rate = 0\nstore.scrub_interval = 1\n",
                     &cfg, err));
    CHECK_EQ(cfg.store_scrub_rate_kib, 0); /* off */
    CHECK_EQ(cfg.store_scrub_interval_s, 1);
    CHECK(rejects("config_version = 1\nstore.scrub_interval = 0\n", err));
    CHECK(strcmp(err, "t.conf:2: store.scrub_interval: expected an integer 1..2592000, "
                      "got '0'") == 0);
    CHECK(rejects("config_version = 1\nstore.scrub_rate = 1048577\n", err));
    CHECK(strstr(err, "store.scrub_rate") != NULL);
}

TEST(config_store_disk_takes_a_word_or_a_pci_address)
{
    static const struct {
        const char *value;
        tern_config_disk want;
    } ok[] = {
        {"auto", {TERN_DISK_AUTO, 0, 0, 0}},
        {"none", {TERN_DISK_NONE, 0, 0, 0}},
        {"virtio-blk", {TERN_DISK_VIRTIO_BLK, 0, 0, 0}},
        {"virtio-scsi", {TERN_DISK_VIRTIO_SCSI, 0, 0, 0}},
        {"00:04.0", {TERN_DISK_PCI, 0, 4, 0}},
        {"ff:1F.7", {TERN_DISK_PCI, 0xff, 0x1f, 7}},
    };
    char err[TERN_CONFIG_ERR_SIZE], text[96];
    tern_config cfg;

    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        snprintf(text, sizeof text, "config_version = 1\nstore.disk = %s\n", ok[i].value);
        CHECK(parse_text(text, &cfg, err));
        CHECK_EQ(cfg.store_disk.kind, ok[i].want.kind);
        CHECK_EQ(cfg.store_disk.bus, ok[i].want.bus);
        CHECK_EQ(cfg.store_disk.dev, ok[i].want.dev);
        CHECK_EQ(cfg.store_disk.fn, ok[i].want.fn);
        CHECK_EQ(tern_config_line(&cfg, "store.disk"), 2u);
    }
}

TEST(config_store_disk_refuses_what_names_no_disk)
{
    static const char *const bad[] = {
        "sda", "AUTO", "virtio", "0:04.0", "00:4.0", "00:04.8", "00:20.0", "00:04.00",
        "0000:00:04.0", "00-04.0", "g0:04.0", "00:04.",
    };
    char err[TERN_CONFIG_ERR_SIZE], text[96];

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "config_version = 1\nstore.disk = %s\n", bad[i]);
        CHECK(rejects(text, err));
        CHECK(strstr(err, "t.conf:2: store.disk: expected auto, none, virtio-blk, virtio-scsi "
                          "or a PCI address BB:DD.F, e.g. 00:04.0, got '") == err);
    }
}

TEST(config_store_cache_size_is_kib_within_its_bounds)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\nstore.cache_size = 16384\n", &cfg, err));
    CHECK_EQ(cfg.store_cache_kib, 16384u);
    CHECK(rejects("config_version = 1\nstore.cache_size = 63\n", err));
    CHECK(strcmp(err, "t.conf:2: store.cache_size: expected an integer 64..1048576, "
                      "got '63'") == 0);
    CHECK(rejects("config_version = 1\nstore.cache_size = 1048577\n", err));
    CHECK(rejects("config_version = 1\nstore.cache_size = 8M\n", err));
}

TEST(config_store_bad_values_are_refused_with_what_is_expected)
{
    char err[TERN_CONFIG_ERR_SIZE];

    CHECK(rejects("config_version = 1\nstore.sync = off\n", err));
    CHECK(strcmp(err, "t.conf:2: store.sync: expected full or normal, got 'off'") == 0);
    CHECK(rejects("config_version = 1\nstore.sync = FULL\n", err));
    CHECK(rejects("config_version = 1\nstore.backup_interval = 604801\n", err));
    CHECK(strcmp(err, "t.conf:2: store.backup_interval: expected an integer 0..604800, "
                      "got '604801'") == 0);
    CHECK(rejects("config_version = 1\nstore.backup_interval = 1h\n", err));
    CHECK(rejects("config_version = 1\nstore.path = a.db\nstore.path = b.db\n", err));
    CHECK(strstr(err, "duplicate key 'store.path'") != NULL);
    CHECK(rejects("config_version = 1\nstore.pth = a.db\n", err));
    CHECK(strstr(err, "did you mean 'store.path'") != NULL);
}

TEST(config_handshake_limits_have_defaults_ranges_and_reach_the_config)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\n", &cfg, err));
    CHECK_EQ(cfg.limits.max_handshakes, 1024);
    CHECK_EQ(cfg.limits.max_handshakes_per_address, 128);
    CHECK(parse_text("config_version = 1\nlimits.max_handshakes = 5\n"
                     "limits.max_handshakes_per_address = 2\n",
                     &cfg, err));
    CHECK_EQ(cfg.limits.max_handshakes, 5);
    CHECK_EQ(cfg.limits.max_handshakes_per_address, 2);
    CHECK(!parse_text("config_version = 1\nlimits.max_handshakes = 0\n", &cfg, err));
    CHECK(strcmp(err, "t.conf:2: limits.max_handshakes: expected an integer 1..1000000, "
                      "got '0'") == 0);
    CHECK(!parse_text("config_version = 1\nlimits.max_handshakes_per_address = 1000001\n", &cfg,
                      err));
    CHECK(strstr(err, "limits.max_handshakes_per_address") != NULL);
}

TEST(config_input_budget_follows_the_largest_packet_unless_set_below_it)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\nlimits.max_packet_size = 1048576\n", &cfg, err));
    CHECK_EQ(cfg.limits.max_input_bytes, 64u << 20);
    /* Left at its default, it grows to hold one packet of the largest size. */
    CHECK(parse_text("config_version = 1\nlimits.max_packet_size = 100000000\n"
                     "limits.max_queued_bytes = 100000000\n"
                     "limits.max_queued_bytes_per_identity = 100000000\n",
                     &cfg, err));
    CHECK_EQ(cfg.limits.max_input_bytes, 100000000u);
    CHECK(parse_text("config_version = 1\nlimits.max_input_bytes = 2000000\n"
                     "limits.max_packet_size = 1000000\n",
                     &cfg, err));
    CHECK_EQ(cfg.limits.max_input_bytes, 2000000u);
    CHECK(!parse_text("config_version = 1\nlimits.max_packet_size = 1000000\n"
                      "limits.max_input_bytes = 999999\n",
                      &cfg, err));
    CHECK(strcmp(err, "t.conf:3: limits.max_input_bytes (999999) is below "
                      "limits.max_packet_size (1000000): a packet of the largest allowed size "
                      "could never arrive") == 0);
}

TEST(config_telemetry_interval_defaults_to_60_and_is_bounded)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\n", &cfg, err));
    CHECK_EQ(cfg.telemetry_interval_s, 60);
    CHECK(parse_text("config_version = 1\ntelemetry.interval = 0\n", &cfg, err));
    CHECK_EQ(cfg.telemetry_interval_s, 0);
    CHECK(parse_text("config_version = 1\ntelemetry.interval = 86400\n", &cfg, err));
    CHECK_EQ(cfg.telemetry_interval_s, 86400);
    CHECK_EQ(tern_config_line(&cfg, "telemetry.interval"), 2u);
    CHECK(!parse_text("config_version = 1\ntelemetry.interval = 86401\n", &cfg, err));
    CHECK(strstr(err, "telemetry.interval"));
    CHECK(!parse_text("config_version = 1\ntelemetry.interval = soon\n", &cfg, err));
}
