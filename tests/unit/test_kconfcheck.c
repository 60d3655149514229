/*
 * test_kconfcheck.c - what the unikernel refuses of a configuration the
 * daemon accepts (confcheck.c, shared by the boot and the image builder),
 * and the list of files a configuration names.
 */
#include "test.h"

#include "config/config.h"
#include "platform/kernel/confcheck.c"

static int check(const char *text, char *err, size_t err_size)
{
    tern_config cfg;
    if (!tern_config_parse(&cfg, "t.conf", text, strlen(text), err, err_size))
        return -2;
    return conf_check_kernel(&cfg, "t.conf", err, err_size);
}

TEST(kconfcheck_accepts_tls_and_plain)
{
    char err[256];
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\n"
                   "auth.allow_anonymous = true\n", err, sizeof err), 0);
    CHECK_EQ(check("config_version = 1\nlistener.tls = 0.0.0.0:8883\ntls.cert = a\n"
                   "tls.key = b\ntls.client_ca = c\nacl.file = d\n", err, sizeof err), 0);
}

TEST(kconfcheck_accepts_a_password_file)
{
    char err[256];
    CHECK_EQ(check("config_version = 1\nlistener.tls = 0.0.0.0:8883\ntls.cert = a\n"
                   "tls.key = b\ntls.client_ca = c\nauth.password_file = pw\n", err, sizeof err),
             0);
}

TEST(kconfcheck_refuses_bridge_keys_naming_the_key_and_line)
{
    char err[256];
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\n"
                   "bridge.hq.topics = a/# out 1\nbridge.hq.address = 10.0.0.9:1883\n",
                   err, sizeof err),
             -1);
    CHECK(strncmp(err, "t.conf:4: bridge.hq.address: the unikernel does not run bridges yet", 67) ==
          0);
}

TEST(kconfcheck_refuses_what_the_kernel_cannot_do)
{
    char err[256];
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\n"
                   "store.path = x.db\n", err, sizeof err), -1);
    CHECK(strcmp(err, "t.conf:3: store.path: the unikernel keeps its store on a disk "
                      "partition, not in a file: remove store.path and choose the disk with "
                      "store.disk") == 0);
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\nworkers = 1\n", err,
                   sizeof err), -1);
    CHECK(strcmp(err, "t.conf:3: workers: a key of the Linux daemon's threads; the unikernel "
                      "gives its CPUs their roles at boot (ADR-057): remove workers") == 0);
    CHECK_EQ(check("config_version = 1\nlistener.plain = [::]:1883\n", err, sizeof err), -1);
    CHECK(strstr(err, "IPv4 only") != NULL);
    CHECK_EQ(check("config_version = 1\nlistener.tls = [::1]:8883\ntls.cert = a\n"
                   "tls.key = b\ntls.client_ca = c\n", err, sizeof err), -1);
    CHECK(strstr(err, "listener.tls") != NULL);
}

TEST(kconfcheck_accepts_websocket_listeners)
{
    char err[256];
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\n"
                   "listener.ws = 0.0.0.0:8080\n", err, sizeof err), 0);
    /* listener.wss alone: the kernel serves it with the TLS keys. */
    CHECK_EQ(check("config_version = 1\nlistener.wss = 0.0.0.0:8081\ntls.cert = a\n"
                   "tls.key = b\ntls.client_ca = c\n", err, sizeof err), 0);
    CHECK_EQ(check("config_version = 1\nlistener.ws = 0.0.0.0:8080\n", err, sizeof err), 0);
}

TEST(kconfcheck_refuses_an_ipv6_websocket_listener_by_its_key)
{
    char err[256];
    CHECK_EQ(check("config_version = 1\nlistener.ws = [::]:8080\n", err, sizeof err), -1);
    CHECK(strcmp(err, "t.conf: listener.ws: the unikernel has IPv4 only") == 0);
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\n"
                   "listener.wss = [::1]:8081\ntls.cert = a\ntls.key = b\n"
                   "tls.client_ca = c\n", err, sizeof err), -1);
    CHECK(strcmp(err, "t.conf: listener.wss: the unikernel has IPv4 only") == 0);
}

TEST(kconfcheck_accepts_the_kernels_store_keys)
{
    char err[256];
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\n"
                   "store.disk = 00:05.0\nstore.cache_size = 8192\nstore.sync = full\n"
                   "store.backup_interval = 600\n", err, sizeof err), 0);
    CHECK_EQ(check("config_version = 1\nlistener.plain = 0.0.0.0:1883\nstore.disk = none\n",
                   err, sizeof err), 0);
}

TEST(kconfcheck_lists_the_named_files)
{
    tern_config cfg;
    char err[256];
    static const char text[] = "config_version = 1\nlistener.tls = 0.0.0.0:8883\n"
                               "tls.cert = pki/s.crt\ntls.key = pki/s.key\n"
                               "tls.client_ca = pki/ca.crt\nacl.file = my acl\n"
                               "auth.password_file = users.pw\n";
    CHECK(tern_config_parse(&cfg, "t.conf", text, sizeof text - 1, err, sizeof err));
    CHECK(strcmp(conf_file_value(&cfg, CONF_FILE_TLS_CERT), "pki/s.crt") == 0);
    CHECK(strcmp(conf_file_value(&cfg, CONF_FILE_TLS_KEY), "pki/s.key") == 0);
    CHECK(strcmp(conf_file_value(&cfg, CONF_FILE_TLS_CLIENT_CA), "pki/ca.crt") == 0);
    CHECK(strcmp(conf_file_value(&cfg, CONF_FILE_TLS_OPERATOR_CA), "") == 0);
    CHECK(strcmp(conf_file_value(&cfg, CONF_FILE_ACL), "my acl") == 0);
    CHECK(strcmp(conf_file_key(CONF_FILE_ACL), "acl.file") == 0);
    /* The password file travels in the bundle like the ACL. */
    CHECK(strcmp(conf_file_value(&cfg, CONF_FILE_PASSWD), "users.pw") == 0);
    CHECK(strcmp(conf_file_key(CONF_FILE_PASSWD), "auth.password_file") == 0);
    CHECK(strcmp(conf_file_key(CONF_FILE_COUNT), "") == 0);
}
