/*
 * kat.h - crypto known-answer self-tests run at every boot (SPEC B5),
 * through the code TLS uses: wolfCrypt's SHA-256, AES-GCM,
 * ChaCha20-Poly1305, X25519, P-256 ECDH, ECDSA P-256 and PBKDF2-SHA512
 * (password files), and the kernel's own SHA-256 and HMAC_DRBG that feed
 * every random byte (kat.c). The broker does not serve when one fails
 * (boot.c).
 */
#ifndef TERN_CRYPTO_KAT_H
#define TERN_CRYPTO_KAT_H

/* Called once per test: why is NULL when it passed. */
typedef void (*kat_report_fn)(void *ctx, const char *name, const char *why);

/* Run every test in order. corrupt: NULL, or the name of a test whose
 * expected answer is altered first (it must then fail). Returns the
 * number of tests that failed. */
int kat_run_all(const char *corrupt, kat_report_fn report, void *ctx);

/* The boot's run: one console line, naming each failure. corrupt as
 * above (test builds: tern.katfail=NAME). Returns 0 when all passed. */
int kat_boot(const char *corrupt);

#endif
