/*
 * load.h - what the daemon reads besides its configuration file: the ACL
 * file (acl.file), the password file (auth.password_file) and the TLS
 * certificates and keys (tls.*), turned into
 * the objects the core and the TLS adapter use. The same functions serve
 * the start (an error stops the daemon, exit status 2; --check reports it)
 * and SIGHUP (an error is logged and the running ACL or certificates stay).
 *
 * Relative paths resolve against the configuration file's directory.
 */
#ifndef TERN_LOAD_H
#define TERN_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "broker/acl.h"
#include "broker/passwd.h"
#include "config/config.h"
#include "tls/tls.h"

/* Enough for any message of these functions. */
#define TERN_LOAD_ERR_SIZE 512u

typedef struct tern_assets {
    broker_acl *acl;      /* owned; NULL without acl.file */
    broker_passwd *passwd; /* owned; NULL without auth.password_file */
    tern_tls_server *tls; /* owned reference; NULL without listener.tls */
} tern_assets;

/* Parse acl.file. True with *out NULL when the configuration has none.
 * On failure err holds the parser's "FILE:LINE: message" (or the read
 * error). */
bool tern_load_acl(const tern_config *cfg, const char *config_path, broker_acl **out, char *err,
                   size_t err_size);

/* Parse auth.password_file, as tern_load_acl does acl.file. */
bool tern_load_passwd(const tern_config *cfg, const char *config_path, broker_passwd **out,
                      char *err, size_t err_size);

/* Build the TLS server context from tls.*. True with *out NULL when there is
 * no listener.tls. On failure err says which file and what is wrong. */
bool tern_load_tls(const tern_config *cfg, const char *config_path, tern_tls_server **out,
                   char *err, size_t err_size);

/* Both of the above; on failure nothing is left allocated. */
bool tern_assets_load(const tern_config *cfg, const char *config_path, tern_assets *out,
                      char *err, size_t err_size);
void tern_assets_free(tern_assets *a);

#endif
