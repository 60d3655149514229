/*
 * passwd.h - user names and passwords from a Mosquitto-format password
 * file (auth.password_file, SPEC C3): the whole public face of
 * src/broker/passwd.c, the parser and the verifier.
 *
 * The format is what `mosquitto_passwd` (2.x, its default sha512-pbkdf2)
 * writes, one user a line, so an existing file works unchanged:
 *
 *     alice:$7$101$PCYW1kbeAM23Ccsx$xqy4...7hRU6w==
 *     # comments and empty lines are skipped
 *
 * `$7$ITERATIONS$SALT$HASH`: PBKDF2-HMAC-SHA512 of the password under the
 * base64-decoded SALT, ITERATIONS rounds, 64 bytes, base64 in HASH.
 * `$6$SALT$HASH` lines (Mosquitto 1.x's one SHA-512 of password and salt)
 * are refused, naming the line: a single hash is cheap to guess against
 * offline, and tern would have to keep a second, weaker verifier; such a
 * user's password is set again with `mosquitto_passwd` (it then writes $7$).
 * Plain-text passwords are refused too.
 *
 * Parsing is I/O-free like the rest of the core: the platform reads the
 * file and hands over its text, at start and on reload (SIGHUP). The
 * verifier needs PBKDF2-HMAC-SHA512, which the core does not implement:
 * the platform hands it over (broker_config.pbkdf2; the daemon's is
 * wolfCrypt's, src/tls/kdf.c).
 */
#ifndef TERN_BROKER_PASSWD_H
#define TERN_BROKER_PASSWD_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct broker_passwd broker_passwd;

/* Bytes of a $7$ derived key (SHA-512's output). */
#define BROKER_PASSWD_KEY_LEN 64u
/* The most PBKDF2 rounds a line may ask for. Every CONNECT with a
 * password runs them on the event loop, so a file cannot make one check
 * take more than a few tens of milliseconds (mosquitto_passwd writes 101). */
#define BROKER_PASSWD_MAX_ITERATIONS 100000u
/* Longest user name and salt (decoded) accepted on a line. */
#define BROKER_PASSWD_MAX_USER 256u
#define BROKER_PASSWD_MAX_SALT 64u

/* Parse password-file text of len bytes (need not be NUL-terminated).
 * `file` names the source in errors. Returns NULL on error with
 * "FILE:LINE: message" in err (cut to err_size), or on allocation failure.
 * The allocator serves the whole life of the table (NULL members = malloc). */
broker_passwd *broker_passwd_parse(const broker_allocator *alloc, const char *file,
                                   const char *text, size_t len, char *err, size_t err_size);
void broker_passwd_free(broker_passwd *p);
/* Users in the table. */
size_t broker_passwd_count(const broker_passwd *p);

/*
 * Does password pw (pw_len bytes) belong to user (user_len bytes)? Runs
 * kdf once whether or not the user exists (an unknown user is checked
 * against a dummy entry with the table's largest round count), compares
 * every entry's name and the derived key without stopping at the first
 * difference, so the time says neither which users exist nor how much of
 * a key matched. False when kdf fails.
 */
bool broker_passwd_check(const broker_passwd *p, broker_pbkdf2_fn kdf, const uint8_t *user,
                         size_t user_len, const uint8_t *pw, size_t pw_len);

/* Install a password table in the broker, replacing (and freeing) the
 * previous one; NULL removes it. The broker owns p from now on. Only
 * later CONNECTs see the new table (connected clients stay). */
void broker_set_passwd(broker *b, broker_passwd *p);

/* a[0..n) == b[0..n), in time that depends on n only. */
bool broker_ct_equal(const uint8_t *a, const uint8_t *b, size_t n);

#endif
