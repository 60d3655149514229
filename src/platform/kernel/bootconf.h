/*
 * bootconf.h - the broker's configuration baked into the image (SPEC A6):
 * the boot module, either a bundle (bundle.h: the configuration and the
 * certificates, keys, CAs, ACL and password file it names) or a lone
 * configuration file, parsed with the daemon's parser (src/config).
 */
#ifndef TERN_BOOTCONF_H
#define TERN_BOOTCONF_H

#include "bootinfo.h"
#include "broker/acl.h"
#include "broker/passwd.h"
#include "config/config.h"
#include "tls/tls.h"

/*
 * Fill cfg from the boot module. Returns 1 when there is something to
 * serve, 0 when there is no configuration (production builds without a
 * module serve nothing; test builds use a built-in plaintext
 * configuration instead, and say so). A module that is refused (a bundle
 * this kernel cannot read, an unknown key, a bad value, a setting this
 * kernel cannot honour yet, a file the configuration names missing from
 * the bundle) is reported on the console and the kernel halts: it never
 * serves with a configuration it did not fully understand, and never
 * reset-loops. The module buffer in bi is parsed in place.
 */
int bootconf_load(struct boot_info *bi, tern_config *cfg);

/* What the configuration's files become. */
struct bootconf_assets {
    tern_tls_server *tls; /* NULL without listener.tls */
    broker_acl *acl;      /* NULL without acl.file */
    broker_passwd *passwd; /* NULL without auth.password_file */
    int64_t cert_not_after; /* the server certificate's notAfter, s since 1970; 0 unknown */
};

/*
 * Build the TLS server context (certificate, key, CAs), the ACL and the
 * password table from the bundle's files, after bootconf_load and once
 * wolfSSL is set up and the RNG seeded. A bad certificate, key, CA bundle,
 * ACL or password file is reported with the reason (for the two text
 * files, "FILE:LINE: why", as the daemon says it) and the kernel halts,
 * like a refused configuration. The private key's bytes are wiped from the
 * bundle once wolfSSL holds its copy.
 */
void bootconf_assets(const tern_config *cfg, struct bootconf_assets *out);

/* For showing the configuration (the operator console's config-show):
 * the configuration's name as messages give it ("tern.conf", "built-in"),
 * and the bytes of file i (confcheck.h's CONF_FILE_*) as the image carried
 * them, or -1 when the configuration names no such file. The private
 * key's bytes are zeros once bootconf_assets has run. */
const char *bootconf_name(void);
int bootconf_file(const tern_config *cfg, unsigned i, const uint8_t **data, size_t *len);

/* A value found unusable after parsing (a disk store.disk names that is
 * not there): "NAME:LINE: key: why" on the console, and halt, like a
 * refused configuration. */
_Noreturn void bootconf_refuse_key(const tern_config *cfg, const char *key, const char *why);

#endif
