/*
 * test_config_bridge.c - the bridge.NAME.* keys (src/config/bridge.c):
 * a full bridge, defaults, the topic list's grammar, and every refusal
 * naming its key and line.
 */
#include "test.h"

#include "config/config.h"

static bool parse(const char *text, tern_config *cfg, char *err)
{
    return tern_config_parse(cfg, "t.conf", text, strlen(text), err, TERN_CONFIG_ERR_SIZE);
}

#define HEAD "config_version = 1\n"

TEST(config_bridge_full_keys_and_settings)
{
    const char *text = HEAD "bridge.up1.address = 192.0.2.7:8883\n"
                            "bridge.up1.topics = sensors/# out 1 site/ hq/site/, cmd/+ in 2, "
                            "x both 0 \"\" y/\n"
                            "bridge.up1.client_id = c1\n"
                            "bridge.up1.identity = bridge-up\n"
                            "bridge.up1.keepalive = 30\n"
                            "bridge.up1.reconnect_min = 2\n"
                            "bridge.up1.reconnect_max = 120\n"
                            "bridge.up1.try_private = false\n"
                            "bridge.up1.tls_ca = ca.crt\n"
                            "bridge.up1.tls_cert = c.crt\n"
                            "bridge.up1.tls_key = c.key\n";
    char err[TERN_CONFIG_ERR_SIZE], idbuf[TERN_BRIDGE_TEXT_MAX];
    tern_config cfg;
    bridge_settings s;

    CHECK(parse(text, &cfg, err));
    CHECK_EQ(cfg.nbridges, 1);
    const tern_config_bridge *cb = &cfg.bridges[0];
    CHECK(strcmp(cb->name, "up1") == 0);
    CHECK_EQ(cb->address.port, 8883);
    CHECK_EQ(cb->address.addr[3], 7);
    CHECK_EQ(tern_config_bridge_line(cb, "tls_key"), 12);
    CHECK(strcmp(tern_config_bridge_identity(cb, idbuf, sizeof idbuf), "bridge-up") == 0);
    tern_config_bridge_settings(cb, &s);
    CHECK(strcmp(s.client_id, "c1") == 0);
    CHECK_EQ(s.keepalive_s, 30);
    CHECK(!s.try_private);
    CHECK_EQ(s.backoff_min_ms, 2000);
    CHECK_EQ(s.backoff_max_ms, 120000);
    CHECK_EQ(s.nmaps, 3);
    CHECK(strcmp(s.maps[0].pattern, "sensors/#") == 0);
    CHECK_EQ(s.maps[0].dir, BRIDGE_OUT);
    CHECK_EQ(s.maps[0].qos, 1);
    CHECK(strcmp(s.maps[0].local_prefix, "site/") == 0);
    CHECK(strcmp(s.maps[0].remote_prefix, "hq/site/") == 0);
    CHECK_EQ(s.maps[1].dir, BRIDGE_IN);
    CHECK_EQ(s.maps[1].qos, 2);
    CHECK(s.maps[1].local_prefix[0] == '\0' && s.maps[1].remote_prefix[0] == '\0');
    CHECK_EQ(s.maps[2].dir, BRIDGE_BOTH);
    CHECK(s.maps[2].local_prefix[0] == '\0');
    CHECK(strcmp(s.maps[2].remote_prefix, "y/") == 0);
}

TEST(config_bridge_defaults_name_the_bridge)
{
    char err[TERN_CONFIG_ERR_SIZE], idbuf[TERN_BRIDGE_TEXT_MAX];
    tern_config cfg;
    bridge_settings s;

    CHECK(parse(HEAD "bridge.b.topics = a/# both 1\nbridge.b.address = [::1]:1883\n", &cfg, err));
    CHECK_EQ(cfg.nbridges, 1);
    CHECK(strcmp(tern_config_bridge_identity(&cfg.bridges[0], idbuf, sizeof idbuf),
                 "bridge:b") == 0);
    tern_config_bridge_settings(&cfg.bridges[0], &s);
    CHECK(strcmp(s.client_id, "tern-bridge-b") == 0);
    CHECK_EQ(s.keepalive_s, TERN_BRIDGE_KEEPALIVE_DEFAULT);
    CHECK(s.try_private);
    CHECK_EQ(s.backoff_min_ms, TERN_BRIDGE_RECONNECT_MIN_DEFAULT * 1000u);
    CHECK_EQ(s.backoff_max_ms, TERN_BRIDGE_RECONNECT_MAX_DEFAULT * 1000u);
    CHECK(cfg.bridges[0].tls_ca[0] == '\0');
}

TEST(config_bridge_unknown_key_is_refused_naming_it)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse(HEAD "bridge.b.adress = 127.0.0.1:1\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: unknown key 'bridge.b.adress' (a bridge's keys: address,") == err);
    CHECK(!parse(HEAD "bridge.bad name.address = 127.0.0.1:1\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: bad bridge key 'bridge.bad name.address'") == err);
    CHECK(!parse(HEAD "bridge.noKey = 1\n", &cfg, err));
    CHECK(strstr(err, "bad bridge key 'bridge.noKey'") != NULL);
}

TEST(config_bridge_with_io_threads_is_refused_naming_workers)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse(HEAD "workers = 2\nbridge.up.address = 127.0.0.1:1883\n"
                      "bridge.up.topics = a/# out 1\n", &cfg, err));
    CHECK(strcmp(err, "t.conf:2: workers: bridges run with workers = 1 only (bridge.up is "
                      "configured)") == 0);
    CHECK(parse(HEAD "workers = 1\nbridge.up.address = 127.0.0.1:1883\n"
                     "bridge.up.topics = a/# out 1\n", &cfg, err));
}

TEST(config_bridge_bad_address_is_refused_naming_the_key)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse(HEAD "bridge.b.address = broker.example:1883\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: bridge.b.address: bad value (expected IPV4:PORT") == err);
    CHECK(!parse(HEAD "bridge.b.address = 127.0.0.1:0\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: bridge.b.address: bad value") == err);
    CHECK(!parse(HEAD "bridge.b.address =\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: bridge.b.address: missing value") == err);
}

TEST(config_bridge_bad_topics_are_refused_with_the_item)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse(HEAD "bridge.b.topics = a/# sideways 1\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: bridge.b.topics: bad value (expected a direction") == err);
    CHECK(strstr(err, "(item 1)") != NULL);
    CHECK(!parse(HEAD "bridge.b.topics = a in 1, b out 3\n", &cfg, err));
    CHECK(strstr(err, "QoS 0, 1 or 2") != NULL && strstr(err, "(item 2)") != NULL);
    CHECK(!parse(HEAD "bridge.b.topics = a in 1 lo/+/ re/\n", &cfg, err));
    CHECK(strstr(err, "local prefix without + or #") != NULL);
    CHECK(!parse(HEAD "bridge.b.topics = a/#/b in 1\n", &cfg, err));
    CHECK(strstr(err, "valid topic filter") != NULL);
    CHECK(!parse(HEAD "bridge.b.topics = a in 1 l/ r/ extra\n", &cfg, err));
    CHECK(strstr(err, "at most 5 words") != NULL);
}

TEST(config_bridge_missing_keys_are_refused_naming_them)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse(HEAD "log.level = info\nbridge.b.topics = a in 1\n", &cfg, err));
    CHECK(strstr(err, "t.conf:3: bridge.b.address: missing") == err);
    CHECK(!parse(HEAD "bridge.b.address = 127.0.0.1:1883\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: bridge.b.topics: missing") == err);
    CHECK(!parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n"
                      "bridge.b.tls_ca = ca.crt\nbridge.b.tls_cert = c.crt\n",
                 &cfg, err));
    CHECK(strstr(err, "t.conf:5: bridge.b.tls_key: missing") == err);
    CHECK(!parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n"
                      "bridge.b.tls_cert = c.crt\nbridge.b.tls_key = c.key\n",
                 &cfg, err));
    CHECK(strstr(err, "t.conf:4: bridge.b.tls_ca: missing") == err);
    CHECK(!parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n"
                      "bridge.b.tls_name = hq.example.net\n",
                 &cfg, err));
    CHECK(strstr(err, "t.conf:4: bridge.b.tls_ca: missing (the remote's name is checked") == err);
    CHECK(!parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n"
                      "bridge.b.reconnect_min = 10\nbridge.b.reconnect_max = 5\n",
                 &cfg, err));
    CHECK(strstr(err, "t.conf:5: bridge.b.reconnect_max: below reconnect_min") == err);
}

TEST(config_bridge_duplicates_and_too_many_bridges_are_refused)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse(HEAD "bridge.b.keepalive = 10\nbridge.b.keepalive = 20\n", &cfg, err));
    CHECK(strstr(err, "t.conf:3: duplicate key 'bridge.b.keepalive'") == err);
    CHECK(!parse(HEAD "bridge.b.keepalive = 2\n", &cfg, err));
    CHECK(strstr(err, "bridge.b.keepalive: bad value (expected an integer 5..65535)") != NULL);
    CHECK(!parse(HEAD "bridge.a.keepalive = 10\nbridge.b.keepalive = 10\n"
                      "bridge.c.keepalive = 10\nbridge.d.keepalive = 10\n"
                      "bridge.e.keepalive = 10\n",
                 &cfg, err));
    CHECK(strstr(err, "t.conf:6: 'bridge.e.keepalive': at most 4 bridges") == err);
}

TEST(config_bridge_keys_need_config_version_first)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse("bridge.b.keepalive = 10\nconfig_version = 1\n", &cfg, err));
    CHECK(strstr(err, "t.conf:1: the first setting must be 'config_version = 1'") == err);
}

TEST(config_bridge_protocol_is_3_1_1_by_default_or_5_and_nothing_else)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;
    bridge_settings s;

    CHECK(parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n", &cfg, err));
    tern_config_bridge_settings(&cfg.bridges[0], &s);
    CHECK_EQ(s.protocol, 4);
    CHECK(parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n"
                     "bridge.b.protocol = 5\n", &cfg, err));
    tern_config_bridge_settings(&cfg.bridges[0], &s);
    CHECK_EQ(s.protocol, 5);
    CHECK(parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n"
                     "bridge.b.protocol = 3.1.1\n", &cfg, err));
    tern_config_bridge_settings(&cfg.bridges[0], &s);
    CHECK_EQ(s.protocol, 4);
    CHECK(!parse(HEAD "bridge.b.protocol = 5.0\n", &cfg, err));
    CHECK(strcmp(err, "t.conf:2: bridge.b.protocol: bad value (expected 3.1.1 or 5)") == 0);
    CHECK(!parse(HEAD "bridge.b.protocol = 3\n", &cfg, err));
    CHECK(strstr(err, "t.conf:2: bridge.b.protocol: bad value") == err);
}

TEST(config_bridge_try_private_with_protocol_5_is_refused_naming_it)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(!parse(HEAD "bridge.b.address = 127.0.0.1:1883\nbridge.b.topics = a in 1\n"
                      "bridge.b.protocol = 5\nbridge.b.try_private = true\n", &cfg, err));
    CHECK(strstr(err, "t.conf:5: bridge.b.try_private: only for protocol 3.1.1") == err);
}
