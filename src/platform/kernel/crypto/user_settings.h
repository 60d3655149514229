/*
 * user_settings.h - wolfSSL's configuration for the unikernel, read by every
 * wolfSSL source (C and assembly) compiled with -DWOLFSSL_USER_SETTINGS.
 *
 * wolfSSL is compiled freestanding from the Debian source tree (make deps:
 * build/deps/wolfssl/src) into the kernel. The hosted daemon's build is
 * configured in deps/wolfssl.sh; this file keeps the kernel's TLS the same
 * where it matters to clients (TLS 1.3 and 1.2, the same suites, groups and
 * identity handling: src/tls/ runs unchanged on both) and drops what the
 * kernel does not need, so less code sits in the trusted base:
 *
 *   kept     TLS 1.3 + 1.2 server and client, ECDHE with X25519 and P-256,
 *            ECDSA P-256 certificates, AES-GCM (AES-NI), ChaCha20-Poly1305,
 *            SHA-256/384/512 (SHA-1 only for certificate key identifiers),
 *            HKDF, PBKDF2 (password files), the fast P-256 code (SP,
 *            x86_64 assembly) and the Intel assembly with run-time CPUID
 *            dispatch; certificate generation
 *            (the diagnostics' handshake measurement makes its own
 *            certificates: src/diag/handshake_pki.c)
 *   dropped  RSA, DH, DSA, MD5, P-384 and other curves, SHA-3, PSK,
 *            PKCS#12, session cache, file system, sockets, threads, error
 *            strings
 *
 * Platform hooks: random bytes come from the kernel's HMAC_DRBG
 * (crypto/random.c, CUSTOM_RAND_GENERATE_BLOCK: wolfSSL keeps no DRBG of
 * its own); the time for certificate validity is the kernel's wall clock
 * (time(), libc/time.c; docs/DECISIONS.md ADR-025); memory comes from the
 * kernel heap through malloc (crypto/tlsheap.c counts it).
 *
 * Assembly sources include this file too: C declarations stay inside
 * #ifndef __ASSEMBLER__.
 */
#ifndef TERN_KERNEL_WOLFSSL_USER_SETTINGS_H
#define TERN_KERNEL_WOLFSSL_USER_SETTINGS_H

/* ---- platform ------------------------------------------------------- */
#define SINGLE_THREADED
#define NO_FILESYSTEM
#define NO_WRITEV
#define NO_MAIN_DRIVER
#define NO_DEV_RANDOM
#define NO_STDIO_FILESYSTEM
#define WOLFSSL_NO_SOCK
#define WOLFSSL_USER_IO
#define NO_ERROR_STRINGS
#define WOLFSSL_SMALL_STACK   /* big temporaries on the heap: 64 KiB kernel stacks */
#define WOLFSSL_IGNORE_FILE_WARN
#define HAVE___UINT128_T 1
#ifndef WOLFSSL_X86_64_BUILD /* also on the assembler command line */
#define WOLFSSL_X86_64_BUILD
#endif
#define WOLFSSL_GENERAL_ALIGNMENT 16
#define WOLFSSL_USE_ALIGN

/* Time: seconds since the epoch from the kernel's wall clock; wolfSSL's
 * own gmtime turns it into a date. */
#define USER_TIME
#define HAVE_TIME_T_TYPE
#define HAVE_TM_TYPE
#define XTIME(t) time(t)

/* Randomness: the kernel DRBG, nothing of wolfSSL's own. */
#define CUSTOM_RAND_GENERATE_BLOCK tern_crypto_random_block
#ifndef __ASSEMBLER__
#include <time.h>
int tern_crypto_random_block(unsigned char *out, unsigned int size);
#endif

/* ---- protocol -------------------------------------------------------- */
#define WOLFSSL_TLS13
#define HAVE_TLS_EXTENSIONS
#define HAVE_SUPPORTED_CURVES
#define HAVE_EXTENDED_MASTER
#define HAVE_ENCRYPT_THEN_MAC
#define HAVE_SERVER_RENEGOTIATION_INFO
#define HAVE_SNI
#define HAVE_ALPN
#define HAVE_HKDF
#define NO_OLD_TLS
#define NO_PSK
#define NO_SESSION_CACHE
#define WOLFSSL_ALT_NAMES
#define WOLFSSL_ALWAYS_VERIFY_CB
/* TLS 1.3 traffic secrets handed to src/tls/, which runs the record layer
 * itself after the handshake and frees the WOLFSSL object. */
#define HAVE_SECRET_CALLBACK
/* Every ECDSA verification of a handshake handed to src/tls/sigcache.c,
 * which remembers client certificate signatures that verified. */
#define HAVE_PK_CALLBACKS
#define WOLFSSL_ASN_TEMPLATE
/* Certificates made at run time for the diagnostics' handshake measurement
 * (src/diag/handshake_pki.c; never used to serve): +15 KB of kernel text
 * (asn.c +13.4 KB, coding.c's Base64 encoder +1.6 KB, wolfSSL 5.7.2). */
#define WOLFSSL_CERT_GEN

/* ---- algorithms ------------------------------------------------------ */
#define HAVE_ECC
#define ECC_USER_CURVES       /* P-256 only */
#define ECC_TIMING_RESISTANT
#define TFM_TIMING_RESISTANT
#define ECC_SHAMIR
#define HAVE_CURVE25519
#define HAVE_AESGCM
#define GCM_TABLE_4BIT
#define HAVE_CHACHA
#define HAVE_POLY1305
#define WOLFSSL_SHA384
#define WOLFSSL_SHA512
#define NO_RSA
#define NO_DH
#define NO_DSA
#define NO_MD4
#define NO_MD5
#define NO_RC4
#define NO_DES3
/* PBKDF2 (pwdbased.c) for the password file's $7$ hashes (auth.password_file,
 * src/tls/kdf.c); no PKCS#12. +7.1 KB of kernel text (wolfSSL 5.7.2):
 * pwdbased.c 1.8 KB (PBKDF2, and PBKDF1, which PKCS#8 support, on by
 * default, switches on whatever NO_PBKDF1 says), and asn.c +4.5 KB and
 * wc_encrypt.c +0.8 KB of encrypted PKCS#8 key support that comes on with
 * PBKDF2 and that nothing calls (the kernel loads no encrypted keys).
 * NO_PKCS8 would drop those, but it gates other PKCS#8 code too, and which
 * of that the server key's loading needs has not been checked. */
#define NO_PKCS12
#define WOLFSSL_NO_SHAKE128
#define WOLFSSL_NO_SHAKE256

/* The fast P-256 implementation with x86_64 assembly; nothing else of SP. */
#define WOLFSSL_SP_MATH_ALL
#define WOLFSSL_HAVE_SP_ECC
#define WOLFSSL_SP_X86_64
#define WOLFSSL_SP_X86_64_ASM
#define WOLFSSL_SP_ASM
#define WOLFSSL_SP_NO_2048
#define WOLFSSL_SP_NO_3072
#define SP_INT_BITS 256

/* Intel assembly (AES-NI, AVX/AVX2 SHA-2, ChaCha, Poly1305, X25519), each
 * chosen at run time from CPUID. The kernel enables SSE and the AVX state
 * (arch/x86_64/simd.c) and hides AVX from wolfSSL when it cannot. */
#define WOLFSSL_AESNI
#define USE_INTEL_SPEEDUP

#endif
