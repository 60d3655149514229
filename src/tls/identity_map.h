/*
 * identity_map.h - the configuration's `tls.identity` choice as the TLS
 * adapter's identity source. One mapping for both platforms (the daemon's
 * loader and the kernel's boot configuration), so a new identity kind is
 * added in one place.
 */
#ifndef TERN_TLS_IDENTITY_MAP_H
#define TERN_TLS_IDENTITY_MAP_H

#include "config/config.h"
#include "tls/tls.h"

static inline tern_tls_identity_source tern_tls_identity_from_config(tern_config_identity id)
{
    switch (id) {
    case TERN_IDENTITY_SAN_DNS:
        return TERN_TLS_IDENTITY_SAN_DNS;
    case TERN_IDENTITY_SAN_EMAIL:
        return TERN_TLS_IDENTITY_SAN_EMAIL;
    case TERN_IDENTITY_SAN_URI:
        return TERN_TLS_IDENTITY_SAN_URI;
    case TERN_IDENTITY_CN:
        break;
    }
    return TERN_TLS_IDENTITY_CN;
}

#endif
