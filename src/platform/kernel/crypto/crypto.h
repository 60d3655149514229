/*
 * crypto.h - wolfSSL inside the kernel: start-up, and what the rest of the
 * kernel may ask of it. The TLS adapter itself (src/tls, tls.h) is the
 * daemon's, unchanged; this is only the kernel's side of the glue.
 */
#ifndef TERN_CRYPTO_H
#define TERN_CRYPTO_H

#include <stddef.h>

struct boot_info;
struct simd_state;

/* Every boot, after the RNG is up: read the date for certificate checks,
 * set wolfSSL up and run the known-answer self-tests (test builds:
 * tern.katfail=NAME on the command line makes that test fail). Says what
 * it found on the console. Returns 0 when the broker may serve. */
int crypto_boot(const struct boot_info *bi, const struct simd_state *simd);

/* Before any other wolfSSL call: route wolfSSL's memory through the kernel
 * heap with accounting, and hide AVX from wolfSSL's CPU dispatch when the
 * kernel could not enable its state. Returns 0, or -1 after saying why. */
int crypto_setup(const struct simd_state *simd);

/* Bytes of kernel heap wolfSSL holds now (sessions, handshakes, contexts). */
size_t crypto_heap_bytes(void);

/* One line for the console: which accelerated paths wolfSSL will take. */
void crypto_describe(char *buf, size_t n);

#endif
