/*
 * test_config_net.c - the unikernel's interface keys (net.ipv4,
 * net.gateway): accepted forms, every refusal with its exact message (the
 * key and the line named), and the checks across the two keys.
 */
#include "test.h"

#include "config/config.h"

static bool parse_text(const char *text, tern_config *cfg, char *err)
{
    return tern_config_parse(cfg, "t.conf", text, strlen(text), err, TERN_CONFIG_ERR_SIZE);
}

TEST(config_net_absent_means_dhcp)
{
    char err[TERN_CONFIG_ERR_SIZE];
    tern_config cfg;

    CHECK(parse_text("config_version = 1\n", &cfg, err));
    CHECK(!cfg.net.ipv4.set);
    CHECK(!cfg.net.gateway.set);
}

TEST(config_net_static_address_and_gateway)
{
    static const struct {
        const char *ipv4, *gateway;
        uint8_t addr[4], prefix, gw[4];
    } ok[] = {
        {"10.0.2.15/24", "10.0.2.2", {10, 0, 2, 15}, 24, {10, 0, 2, 2}},
        {"192.0.2.10/24", NULL, {192, 0, 2, 10}, 24, {0}},
        {"198.51.100.7/32", "172.31.1.1", {198, 51, 100, 7}, 32, {172, 31, 1, 1}},
        {"10.0.0.0/31", "10.0.0.1", {10, 0, 0, 0}, 31, {10, 0, 0, 1}},
        {"10.1.2.3/8", "10.255.255.254", {10, 1, 2, 3}, 8, {10, 255, 255, 254}},
        {"100.64.0.1/1", NULL, {100, 64, 0, 1}, 1, {0}},
    };

    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[160], err[TERN_CONFIG_ERR_SIZE];
        tern_config cfg;
        int n = snprintf(text, sizeof text, "config_version = 1\nnet.ipv4 = %s\n", ok[i].ipv4);

        if (ok[i].gateway)
            snprintf(text + n, sizeof text - (size_t)n, "net.gateway = %s\n", ok[i].gateway);
        if (!parse_text(text, &cfg, err))
            fprintf(stderr, "  %s\n", err);
        CHECK(parse_text(text, &cfg, err));
        CHECK(cfg.net.ipv4.set);
        CHECK_MEM(cfg.net.ipv4.addr, ok[i].addr, 4);
        CHECK_EQ(cfg.net.ipv4.prefix, ok[i].prefix);
        CHECK_EQ(cfg.net.gateway.set, ok[i].gateway != NULL);
        if (ok[i].gateway) {
            CHECK_MEM(cfg.net.gateway.addr, ok[i].gw, 4);
            CHECK_EQ(cfg.net.gateway.prefix, 32);
        }
    }
}

/* Syntax errors: the generic "expected ..., got" message. */
TEST(config_net_malformed_values_say_what_is_expected)
{
    static const char *const bad_ipv4[] = {
        "10.0.2.15",    "10.0.2.15/",  "10.0.2.15/0",  "10.0.2.15/33", "10.0.2.15/024",
        "10.0.2.15/+8", "10.0.2/24",   "10.0.2.15 /24", "/24",         "10.0.2.015/24",
        "10.0.2.15/24/8", "dhcp",      "10.0.2.15/2a", "256.0.0.1/8",
    };
    static const char *const bad_gw[] = {"10.0.2.2/24", "10.0.2", "gw", "10.0.2.2:1"};

    for (size_t i = 0; i < sizeof bad_ipv4 / sizeof bad_ipv4[0]; i++) {
        char text[128], err[TERN_CONFIG_ERR_SIZE];
        tern_config cfg;

        snprintf(text, sizeof text, "config_version = 1\nnet.ipv4 = %s\n", bad_ipv4[i]);
        if (parse_text(text, &cfg, err))
            fprintf(stderr, "  accepted: %s\n", bad_ipv4[i]);
        CHECK(!parse_text(text, &cfg, err));
        CHECK(strstr(err, "t.conf:2: net.ipv4: expected an IPv4 address and prefix length, "
                          "e.g. 192.0.2.10/24, got '") == err);
    }
    for (size_t i = 0; i < sizeof bad_gw / sizeof bad_gw[0]; i++) {
        char text[128], err[TERN_CONFIG_ERR_SIZE];
        tern_config cfg;

        snprintf(text, sizeof text, "config_version = 1\nnet.ipv4 = 10.0.2.15/24\n"
                                    "net.gateway = %s\n", bad_gw[i]);
        CHECK(!parse_text(text, &cfg, err));
        CHECK(strstr(err, "t.conf:3: net.gateway: expected an IPv4 address, e.g. 192.0.2.1, "
                          "got '") == err);
    }
}

/* Well formed, but not an address a host can have: the reason is named. */
static const struct net_case {
    const char *text;
    const char *message;
} net_cases[] = {
    {"net.ipv4 = 10.0.2.0/24", "t.conf:2: net.ipv4: '10.0.2.0/24' is the network's own "
                               "address, not a host address"},
    {"net.ipv4 = 10.0.2.255/24", "t.conf:2: net.ipv4: '10.0.2.255/24' is the network's "
                                 "broadcast address"},
    {"net.ipv4 = 127.0.0.1/8", "t.conf:2: net.ipv4: '127.0.0.1/8' is a loopback address"},
    {"net.ipv4 = 0.0.0.0/8", "t.conf:2: net.ipv4: '0.0.0.0/8' is in 0.0.0.0/8 (\"this "
                             "network\"), not a host address"},
    {"net.ipv4 = 224.0.0.5/24", "t.conf:2: net.ipv4: '224.0.0.5/24' is a multicast address"},
    {"net.ipv4 = 255.255.255.255/32", "t.conf:2: net.ipv4: '255.255.255.255/32' is reserved "
                                      "(240.0.0.0/4, or the limited broadcast address)"},
    {"net.ipv4 = 10.0.2.15/24\nnet.gateway = 239.1.1.1",
     "t.conf:3: net.gateway: '239.1.1.1' is a multicast address"},
    {"net.gateway = 10.0.2.2",
     "t.conf:2: net.gateway: set but there is no net.ipv4 (with DHCP the gateway comes from "
     "the DHCP server)"},
    {"net.gateway = 10.0.2.2\nlog.level = info\nnet.ipv4 = 10.0.2.2/24",
     "t.conf:2: net.gateway: 10.0.2.2 is net.ipv4's own address"},
    {"net.ipv4 = 10.0.2.15/24\nnet.gateway = 10.0.3.2",
     "t.conf:3: net.gateway: 10.0.3.2 is outside net.ipv4's network 10.0.2.15/24 (only a /32 "
     "address may have its gateway outside)"},
    {"net.ipv4 = 10.0.2.15/24\nnet.gateway = 10.0.2.255",
     "t.conf:3: net.gateway: 10.0.2.255 is the network's broadcast address"},
    {"net.ipv4 = 10.0.2.15/24\nnet.gateway = 10.0.2.0",
     "t.conf:3: net.gateway: 10.0.2.0 is the network's own address, not a host address"},
    {"net.ipv4 = 10.0.2.15/24\nnet.ipv4 = 10.0.2.16/24", "t.conf:3: duplicate key 'net.ipv4'"},
    {"net.ipv4 =", "t.conf:2: net.ipv4: missing value (expected an IPv4 address and prefix "
                   "length, e.g. 192.0.2.10/24)"},
    {"net.ip4 = 10.0.2.15/24", "t.conf:2: unknown key 'net.ip4' (did you mean 'net.ipv4'?)"},
};

TEST(config_net_unusable_addresses_are_refused_with_the_reason)
{
    for (size_t i = 0; i < sizeof net_cases / sizeof net_cases[0]; i++) {
        char text[256], err[TERN_CONFIG_ERR_SIZE];
        tern_config cfg;

        snprintf(text, sizeof text, "config_version = 1\n%s\n", net_cases[i].text);
        CHECK(!parse_text(text, &cfg, err));
        if (strcmp(err, net_cases[i].message) != 0) {
            fprintf(stderr, "  got:  %s\n  want: %s\n", err, net_cases[i].message);
            CHECK(!"message differs");
        }
    }
}
