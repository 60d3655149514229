/*
 * bootconf.c - reads the boot module the loader passed (GRUB "module2", or
 * QEMU's -initrd for a direct PVH boot): a bundle (bundle.h) holding the
 * configuration first and then every file it names, or, for tests and
 * plaintext-only set-ups, a lone configuration file. The configuration is
 * parsed with the same strict parser as the Linux daemon; what this kernel
 * cannot honour yet is refused (confcheck.c), and so is a configuration
 * whose certificate, key, CA, ACL or password file is not in the bundle,
 * or fails to load. A refusal prints the reason on the console and halts
 * (no reset loop): the kernel never serves with a configuration it did not
 * fully understand.
 */
#include "bootconf.h"

#include "arch/x86_64/cpu.h"
#include "bundle.h"
#include "config/certdate.h"
#include "confcheck.h"
#include "console.h"
#include "mm/kmalloc.h"
#include "rng/sha256.h"
#include "tls/identity_map.h"
#include "wallclock.h"

#include <stdio.h>
#include <string.h>

#ifdef TERN_TEST_HOOKS
/* Test builds serve plaintext to anyone when booted without a module, so
 * `qemu -kernel tern-test.elf` is a broker at once. Never in production. */
static const char builtin_test_config[] =
    "config_version = 1\n"
    "listener.plain = 0.0.0.0:1883\n"
    "auth.allow_anonymous = true\n"
    "sys.public = true\n";
#endif

/* The bundle's files (when the module is one) and the configuration's
 * name for messages; boot-time state, written once. */
static struct bundle bundle;
static int have_bundle;
static char config_name[BUNDLE_NAME_MAX + 1];

static _Noreturn void refuse(const char *why)
{
    /* Written in pieces: the parser's message may fill kprintf's line. */
    console_write("tern: config: ", 14);
    console_write(why, strlen(why));
    console_write("\n", 1);
    kprintf("tern: config refused: not serving; halted\n");
    cpu_halt_forever();
}

/* Every file the configuration names must be in the bundle. */
static void check_files(const tern_config *cfg)
{
    char msg[TERN_CONFIG_ERR_SIZE + 64];
    for (unsigned i = 0; i < CONF_FILE_COUNT; i++) {
        const char *v = conf_file_value(cfg, i);
        if (!v[0])
            continue;
        if (!have_bundle) {
            snprintf(msg, sizeof msg,
                     "%s: %s names a file, but the boot module is a lone configuration; "
                     "build the image with tools/image/tern-build-image",
                     config_name, conf_file_key(i));
            refuse(msg);
        }
        if (!bundle_find(&bundle, v)) {
            snprintf(msg, sizeof msg, "%s: %s: '%s' is not in the image's bundle", config_name,
                     conf_file_key(i), v);
            refuse(msg);
        }
    }
}

static int parse(const char *text, size_t len, tern_config *cfg)
{
    char err[TERN_CONFIG_ERR_SIZE];
    if (!tern_config_parse(cfg, config_name, text, len, err, sizeof err))
        refuse(err);
    if (conf_check_kernel(cfg, config_name, err, sizeof err) != 0)
        refuse(err);
    check_files(cfg);
    return 1;
}

int bootconf_load(struct boot_info *bi, tern_config *cfg)
{
    char msg[TERN_CONFIG_ERR_SIZE];
    switch (bi->config_state) {
    case BOOT_CONFIG_OK:
        break;
    case BOOT_CONFIG_TOO_LARGE:
        snprintf(msg, sizeof msg, "boot module %s is %llu bytes, more than the %u this kernel reads",
                 bi->config_name[0] ? bi->config_name : "(unnamed)",
                 (unsigned long long)bi->config_size, (unsigned)BOOT_CONFIG_MAX);
        refuse(msg);
    case BOOT_CONFIG_BAD:
        refuse("the boot module lies outside readable memory");
    default:
#ifdef TERN_TEST_HOOKS
        kprintf("tern: config: no boot module; test build: built-in plaintext configuration "
                "(port 1883, anonymous)\n");
        snprintf(config_name, sizeof config_name, "built-in");
        return parse(builtin_test_config, sizeof builtin_test_config - 1, cfg);
#else
        kprintf("tern: config: no boot module: the broker is not started\n");
        return 0;
#endif
    }
    uint8_t *mod = (uint8_t *)bi->config;
    if (bundle_is(mod, bi->config_len)) {
        if (bundle_parse(mod, bi->config_len, &bundle, msg, sizeof msg) != 0)
            refuse(msg);
        have_bundle = 1;
        const struct bundle_file *conf = &bundle.files[0];
        snprintf(config_name, sizeof config_name, "%s", conf->name);
        kprintf("tern: config: bundle with %u files from boot module (%u bytes); "
                "configuration %s\n",
                bundle.count, bi->config_len, config_name);
        return parse((const char *)conf->data, conf->len, cfg);
    }
    snprintf(config_name, sizeof config_name, "%s",
             bi->config_name[0] ? bi->config_name : "tern.conf");
    kprintf("tern: config: %s from boot module (%u bytes)\n", config_name, bi->config_len);
    return parse(bi->config, bi->config_len, cfg);
}

static tern_tls_bytes file_bytes(const tern_config *cfg, unsigned i)
{
    const char *v = conf_file_value(cfg, i);
    struct bundle_file *f = v[0] && have_bundle ? bundle_find(&bundle, v) : NULL;
    return f ? (tern_tls_bytes){f->data, f->len} : (tern_tls_bytes){NULL, 0};
}

void bootconf_assets(const tern_config *cfg, struct bootconf_assets *out)
{
    char msg[TERN_CONFIG_ERR_SIZE + TERN_TLS_ERR_SIZE];
    out->tls = NULL;
    out->acl = NULL;
    out->passwd = NULL;
    out->cert_not_after = 0;
    if (cfg->acl_file[0]) {
        tern_tls_bytes acl = file_bytes(cfg, CONF_FILE_ACL);
        char err[TERN_CONFIG_ERR_SIZE];
        out->acl = broker_acl_parse(&(broker_allocator){NULL, NULL, NULL, NULL}, cfg->acl_file,
                                    (const char *)acl.data, acl.len, err, sizeof err);
        if (!out->acl)
            refuse(err);
        kprintf("tern: config: ACL %s loaded\n", cfg->acl_file);
    }
    if (cfg->password_file[0]) {
        /* The image's copy stays: it is in RAM for the kernel's life
         * anyway (the table holds the same hashes), and config-show
         * reports its SHA-256 so an operator can tell which file the
         * image carries. */
        tern_tls_bytes pw = file_bytes(cfg, CONF_FILE_PASSWD);
        char err[TERN_CONFIG_ERR_SIZE];
        out->passwd = broker_passwd_parse(&(broker_allocator){NULL, NULL, NULL, NULL},
                                          cfg->password_file, (const char *)pw.data, pw.len,
                                          err, sizeof err);
        if (!out->passwd)
            refuse(err);
        kprintf("tern: config: password file %s loaded (%zu users)\n", cfg->password_file,
                broker_passwd_count(out->passwd));
    }
    /* listener.wss runs the same TLS as listener.tls (same certificates,
     * same identity rules): either one needs the context. */
    bool tls = cfg->listener_tls.family != TERN_ADDR_NONE;
    if (!tls && cfg->listener_wss.family == TERN_ADDR_NONE)
        return;
    if (!wallclock_valid()) {
        /* Without a date no certificate can be checked (ADR-025). */
        wallclock_describe(msg, sizeof msg);
        char why[sizeof msg + 96];
        snprintf(why, sizeof why, "%s: %s: %s; certificates cannot be checked", config_name,
                 tls ? "listener.tls" : "listener.wss", msg);
        refuse(why);
    }
    tern_tls_server_config sc;
    memset(&sc, 0, sizeof sc);
    sc.cert_chain = file_bytes(cfg, CONF_FILE_TLS_CERT);
    sc.key = file_bytes(cfg, CONF_FILE_TLS_KEY);
    sc.client_ca = file_bytes(cfg, CONF_FILE_TLS_CLIENT_CA);
    sc.operator_ca = file_bytes(cfg, CONF_FILE_TLS_OPERATOR_CA);
    sc.operators = cfg->tls.operators;
    sc.min_version = cfg->tls.min_version == TERN_CONFIG_TLS_1_2 ? TERN_TLS_1_2 : TERN_TLS_1_3;
    sc.require_client_cert = cfg->tls.require_client_cert;
    sc.identity = tern_tls_identity_from_config(cfg->tls.identity);
    char why[TERN_TLS_ERR_SIZE];
    tern_tls_server_input failed = TERN_TLS_INPUT_NONE;
    sc.failed = &failed;
    out->tls = tern_tls_server_create(&sc, why, sizeof why);
    /* Its expiry, for the telemetry journal's warnings (store/ktele.h). */
    uint8_t *scratch = out->tls ? kmalloc(CERTDATE_SCRATCH) : NULL;
    if (scratch && certdate_not_after(sc.cert_chain.data, sc.cert_chain.len, scratch,
                                      CERTDATE_SCRATCH, &out->cert_not_after) != 0)
        out->cert_not_after = 0;
    kfree(scratch);
    /* wolfSSL holds its own copy now (or nothing): the image's copy goes. */
    if (sc.key.data)
        secure_zero((void *)sc.key.data, sc.key.len);
    if (!out->tls) {
        /* Name the key, its line and the file, as the parser would:
         * "tern.conf:7: tls.key: server.key: does not match ...". */
        static const tern_tls_server_input inputs[] = {
            [CONF_FILE_TLS_CERT] = TERN_TLS_INPUT_CERT,
            [CONF_FILE_TLS_KEY] = TERN_TLS_INPUT_KEY,
            [CONF_FILE_TLS_CLIENT_CA] = TERN_TLS_INPUT_CLIENT_CA,
            [CONF_FILE_TLS_OPERATOR_CA] = TERN_TLS_INPUT_OPERATOR_CA,
        };
        unsigned f = 0;
        while (f < sizeof inputs / sizeof inputs[0] && inputs[f] != failed)
            f++;
        if (f < sizeof inputs / sizeof inputs[0])
            snprintf(msg, sizeof msg, "%s:%zu: %s: %s: %s", config_name,
                     tern_config_line(cfg, conf_file_key(f)), conf_file_key(f),
                     conf_file_value(cfg, f), why);
        else if (failed == TERN_TLS_INPUT_OPERATORS)
            snprintf(msg, sizeof msg, "%s:%zu: tls.operators: %s", config_name,
                     tern_config_line(cfg, "tls.operators"), why);
        else
            snprintf(msg, sizeof msg, "%s: TLS: %s", config_name, why);
        refuse(msg);
    }
}

const char *bootconf_name(void)
{
    return config_name;
}

int bootconf_file(const tern_config *cfg, unsigned i, const uint8_t **data, size_t *len)
{
    tern_tls_bytes b = file_bytes(cfg, i);
    if (b.data == NULL)
        return -1;
    *data = b.data;
    *len = b.len;
    return 0;
}

_Noreturn void bootconf_refuse_key(const tern_config *cfg, const char *key, const char *why)
{
    char msg[TERN_CONFIG_ERR_SIZE];
    snprintf(msg, sizeof msg, "%s:%zu: %s: %s", config_name, tern_config_line(cfg, key), key,
             why);
    refuse(msg);
}
