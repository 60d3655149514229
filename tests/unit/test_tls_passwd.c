/*
 * test_tls_passwd.c - the password file verified with the daemon's real
 * PBKDF2 (wolfCrypt, tern_tls_pbkdf2_sha512) on lines mosquitto_passwd
 * 2.0.11 wrote: the hash tern computes is Mosquitto's.
 */
#include "broker/passwd.h"
#include "test.h"
#include "tls/tls.h"

#include <string.h>

static const char file[] =
    "alice:$7$101$PCYW1kbeAM23Ccsx$xqy4YFXlxUrx66Qdu7Ek3Hv0h28WSjNSw58XWOKGZ97vL2eu6pzT9oc/3sjak"
    "wq1N9IdvlGpQDh6Hc/f7hRU6w==\n"
    "bob:$7$101$CkJXIILRZnEBhUzU$eMmdbQ5hdkfQhXMnygsyiOtExTZw3jZsjA0aiHFiH/OxMbe7qkDQM6kT/jh6PRXf"
    "p0p6bGdoTTuT3svD0eaWVQ==\n";

static bool check(const broker_passwd *p, const char *user, const char *pw)
{
    return broker_passwd_check(p, tern_tls_pbkdf2_sha512, (const uint8_t *)user, strlen(user),
                               (const uint8_t *)pw, strlen(pw));
}

TEST(tls_passwd_mosquitto_passwd_hashes_verify_with_wolfcrypt_pbkdf2)
{
    char err[256];
    broker_passwd *p = broker_passwd_parse(NULL, "pw", file, sizeof file - 1, err, sizeof err);
    CHECK(p != NULL);
    CHECK(check(p, "alice", "secret"));
    CHECK(check(p, "bob", "b:ob pw"));
    CHECK(!check(p, "alice", "secreT"));
    CHECK(!check(p, "alice", "b:ob pw"));
    CHECK(!check(p, "bob", "secret"));
    CHECK(!check(p, "carol", "secret"));
    CHECK(!check(p, "alice", ""));
    broker_passwd_free(p);
}
