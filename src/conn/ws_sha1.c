/*
 * ws_sha1.c - SHA-1 for the WebSocket accept key (RFC 6455 4.2.2), from
 * wolfCrypt. Apart from ws.c so that builds without wolfSSL (the
 * simulator, the fuzzers) link the layer; they have no WebSocket
 * listeners.
 */
#include "conn/ws.h"

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/sha.h>

bool conn_ws_sha1(const uint8_t *data, size_t n, uint8_t out[20])
{
    wc_Sha sha;
    bool ok;

    if (n > UINT32_MAX || wc_InitSha(&sha) != 0)
        return false;
    ok = wc_ShaUpdate(&sha, data, (word32)n) == 0 && wc_ShaFinal(&sha, out) == 0;
    wc_ShaFree(&sha);
    return ok;
}
