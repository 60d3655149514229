/*
 * kdf.c - PBKDF2-HMAC-SHA512 from wolfCrypt for the password file's $7$
 * hashes (tls.h, broker/passwd.h). Here because src/tls/ is where wolfSSL
 * is seen; the core gets it as a function pointer.
 */
#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <limits.h>

#ifndef NO_PWDBASED
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/pwdbased.h>
#endif

bool tern_tls_pbkdf2_sha512(const uint8_t *pw, size_t pw_len, const uint8_t *salt,
                            size_t salt_len, uint32_t iterations, uint8_t *out, size_t out_len)
{
#ifdef NO_PWDBASED
    (void)pw, (void)pw_len, (void)salt, (void)salt_len, (void)iterations, (void)out,
        (void)out_len;
    return false;
#else
    if (pw_len > INT_MAX || salt_len > INT_MAX || iterations > INT_MAX || out_len > INT_MAX)
        return false;
    /* wolfCrypt takes a NULL password only with length 0; MQTT allows an
     * empty one. */
    static const uint8_t empty[1];
    return wc_PBKDF2(out, pw_len ? pw : empty, (int)pw_len, salt, (int)salt_len,
                     (int)iterations, (int)out_len, WC_SHA512) == 0;
#endif
}
