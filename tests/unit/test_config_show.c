/*
 * test_config_show.c - the configuration as JSON for the console's
 * config-show (src/config/config_show.c): every key of the table shown by
 * its name, values as the file writes them, paths as written (never what
 * the files hold), unset listeners and addresses null.
 */
#include "test.h"

#include "config/config.h"
#include "config/config_show.h"
#include "config/keys.h"
#include "json/json.h"

static char out[16384];

/* Parse text, show it as {"config": {...}}, parse that back. */
static bool show(const char *text, jr_val *cfg)
{
    static tern_config c;
    char err[TERN_CONFIG_ERR_SIZE];
    if (!tern_config_parse(&c, "t.conf", text, strlen(text), err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return false;
    }
    jw w;
    jw_init(&w, out, sizeof out);
    jw_obj(&w, NULL);
    jw_obj(&w, "config");
    tern_config_show(&c, &w);
    jw_end(&w);
    jw_end(&w);
    size_t n = jw_finish(&w);
    jr_val doc;
    return n > 0 && jr_parse(out, n, &doc, NULL, 0) == 0 && jr_get(&doc, "config", cfg) == 0;
}

static bool member_is(const jr_val *cfg, const char *key, const char *want)
{
    jr_val v;
    return jr_get(cfg, key, &v) == 0 && jr_string_is(&v, want);
}

TEST(config_show_writes_every_key_with_its_file_value)
{
    jr_val cfg, v;
    CHECK(show("config_version = 1\n"
               "listener.plain = 127.0.0.1:1884\n"
               "listener.tls = [::1]:8883\n"
               "tls.cert = /etc/tern/server.crt\n"
               "tls.key = keys/server.key\n"
               "tls.client_ca = ca.crt\n"
               "tls.operators = alice, bob\n"
               "tls.identity = san-dns\n"
               "tls.min_version = 1.2\n"
               "log.level = warn\n"
               "store.sync = normal\n"
               "store.disk = 00:1f.7\n"
               "net.ipv4 = 10.0.2.15/24\n",
               &cfg));
    for (size_t i = 0; i < tern_config_key_count; i++)
        CHECK(jr_get(&cfg, tern_config_keys[i].name, &v) == 0);
    CHECK(member_is(&cfg, "listener.plain", "127.0.0.1:1884"));
    CHECK(member_is(&cfg, "listener.tls", "[0000:0000:0000:0000:0000:0000:0000:0001]:8883"));
    CHECK(member_is(&cfg, "tls.key", "keys/server.key"));
    CHECK(member_is(&cfg, "tls.operators", "alice, bob")); /* as written */
    CHECK(member_is(&cfg, "tls.identity", "san-dns"));
    CHECK(member_is(&cfg, "tls.min_version", "1.2"));
    CHECK(member_is(&cfg, "log.level", "warn"));
    CHECK(member_is(&cfg, "store.sync", "normal"));
    CHECK(member_is(&cfg, "store.disk", "00:1f.7"));
    CHECK(member_is(&cfg, "net.ipv4", "10.0.2.15/24"));
    CHECK(jr_get(&cfg, "net.gateway", &v) == 0 && v.type == JR_NULL);
    uint64_t x = 0;
    CHECK(jr_get(&cfg, "config_version", &v) == 0 && jr_u64(&v, &x) == 0);
    CHECK_EQ(x, 1);
}

TEST(config_show_leaves_unset_listeners_null)
{
    jr_val cfg, v;
    CHECK(show("config_version = 1\nlistener.plain = 127.0.0.1:1883\n", &cfg));
    CHECK(jr_get(&cfg, "listener.tls", &v) == 0 && v.type == JR_NULL);
    CHECK(member_is(&cfg, "tls.key", ""));
}
