/*
 * cryptobench.c - the report's "crypto" and "handshake" sections
 * (cryptobench.h, docs/DIAGNOSTICS.md): shares the time budget out between
 * the measurements (crypto_ops.c, handshake.c) and writes what they found,
 * each figure with the iterations and the elapsed time behind it, and null
 * with a reason for what could not be measured. No floating point (the
 * kernel compiles this): rates are integer arithmetic, written fixed-point.
 */
#include "diag/cryptobench.h"

#include "diag/crypto_ops.h"
#include "diag/handshake.h"
#include "version.h"

#include <stdio.h>
#include <stdlib.h>

/* Of the budget: the handshakes get 2/5, the crypto operations share the
 * rest equally. */
#define HS_SHARE_NUM 2u
#define HS_SHARE_DEN 5u

/* The seed's figure to compare with (SPEC: urMQTT's handshake cost). */
#define REFERENCE_MS "0.24"
#define REFERENCE_WHAT "urMQTT, x86_64, seed"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull

/* Tenths of a MiB/s for bytes in ns (ns > 0), without overflow (kib *
 * 10^10 fits in 64 bits below 1.8e9 KiB). */
static uint64_t tenths_mib_s(uint64_t bytes, uint64_t ns)
{
    uint64_t kib = bytes / 1024u;

    if (kib < 1800000000ull)
        return kib * 10u * NS_PER_S / 1024u / ns;
    return kib / 1024u * 10u * NS_PER_S / ns;
}

/* key: null, and key_why: why. */
static void write_null(jw *w, const char *key, const char *why)
{
    char why_key[48];

    snprintf(why_key, sizeof why_key, "%s_why", key);
    jw_null(w, key);
    jw_str(w, why_key, why);
}

static void write_op(jw *w, diag_op op, const diag_op_result *r, bool have_cycles)
{
    jw_obj(w, diag_op_name(op));
    jw_str(w, "impl", r->impl);
    jw_u64(w, "iterations", r->iterations);
    jw_u64(w, "elapsed_ns", r->elapsed_ns);
    jw_u64(w, "samples", r->samples);
    if (diag_op_is_bulk(op))
        jw_u64(w, "block_bytes", DIAG_BULK_BYTES);
    if (r->iterations == 0 || r->median_ns == 0) {
        const char *why = r->why ? r->why : "shorter than the clock's resolution";

        write_null(w, "per_op_ns", why);
        write_null(w, "mean_ns", why);
        write_null(w, "per_op_cycles", why);
        if (diag_op_is_bulk(op))
            write_null(w, "throughput_mib_s", why);
        jw_end(w);
        return;
    }
    jw_u64(w, "per_op_ns", r->median_ns);
    jw_u64(w, "mean_ns", r->elapsed_ns / r->iterations);
    if (have_cycles) {
        jw_u64(w, "per_op_cycles", r->median_cycles);
    } else {
        write_null(w, "per_op_cycles", "the platform gave no cycle counter");
    }
    if (diag_op_is_bulk(op))
        jw_fixed(w, "throughput_mib_s", (int64_t)tenths_mib_s(DIAG_BULK_BYTES, r->median_ns), 1);
    jw_end(w);
}

static void write_crypto(jw *w, const struct diag_clock *clk, unsigned budget_ms,
                         diag_op_result *ops)
{
    uint64_t share = (uint64_t)budget_ms * NS_PER_MS * (HS_SHARE_DEN - HS_SHARE_NUM) /
                     HS_SHARE_DEN / DIAG_OP_COUNT;

    jw_obj(w, "crypto");
    jw_str(w, "library", diag_crypto_library());
    jw_u64(w, "budget_ms", budget_ms);
    jw_str(w, "method", "each operation run at least once, then until its share of the "
                        "budget is spent or 512 samples are taken (a sample: one operation, "
                        "32 for sha256_64_bytes); per_op = the median sample (robust to a "
                        "shared CPU), mean = elapsed / iterations; bulk operations process "
                        "one block_bytes record each (AEADs: seal with 13 bytes of AAD), "
                        "throughput from per_op");
    if (clk->cycles != NULL)
        jw_str(w, "cycles", "the platform's cycle counter (x86_64: the TSC, reference cycles)");
    for (unsigned i = 0; i < DIAG_OP_COUNT; i++) {
        diag_op_measure((diag_op)i, clk, clk->now_ns(clk->ctx) + share, &ops[i]);
        write_op(w, (diag_op)i, &ops[i], clk->cycles != NULL);
    }
    jw_end(w);
}

/* The breakdown of the median handshake from the primitives' costs. */
static void write_breakdown(jw *w, const diag_hs_result *hs, const diag_op_result *ops)
{
    uint64_t kx = diag_op_ns(&ops[DIAG_OP_X25519_KEYGEN]) +
                  diag_op_ns(&ops[DIAG_OP_X25519_SHARED]);
    uint64_t sig = diag_op_ns(&ops[DIAG_OP_ECDSA_P256_SIGN]);
    uint64_t ver = 2u * diag_op_ns(&ops[DIAG_OP_ECDSA_P256_VERIFY]);
    bool have = diag_op_ns(&ops[DIAG_OP_X25519_KEYGEN]) && diag_op_ns(&ops[DIAG_OP_X25519_SHARED]) &&
                sig && ver;

    jw_str(w, "breakdown_method",
           "estimated from this run's primitive costs (the crypto section), not timed "
           "inside the handshake (the wolfSSL builds have no PK callbacks): key_exchange = "
           "x25519_keygen + x25519_shared_secret (the server's ephemeral X25519 share); "
           "signature = ecdsa_p256_sign (the server's CertificateVerify); "
           "certificate_verification = 2 x ecdsa_p256_verify (the client certificate's "
           "signature by its CA, and the client's CertificateVerify); rest = the median "
           "handshake minus those (certificate parsing, HKDF, transcript hashing, record "
           "protection, the adapter, allocation)");
    jw_obj(w, "breakdown");
    if (!have) {
        const char *why = "a primitive's cost was not measured";

        write_null(w, "key_exchange_ns", why);
        write_null(w, "signature_ns", why);
        write_null(w, "certificate_verification_ns", why);
        write_null(w, "rest_ns", why);
    } else {
        jw_u64(w, "key_exchange_ns", kx);
        jw_u64(w, "signature_ns", sig);
        jw_u64(w, "certificate_verification_ns", ver);
        if (kx + sig + ver <= hs->median_ns) {
            jw_u64(w, "rest_ns", hs->median_ns - kx - sig - ver);
        } else {
            write_null(w, "rest_ns", "the primitives' costs add up to more than the median "
                                     "handshake (noisy run: measure with a larger budget)");
        }
    }
    jw_end(w);
}

/* The handshake's figures when there are none. */
static void write_unmeasured(jw *w, const char *why)
{
    static const char *const keys[] = {
        "server_total_ns", "server_median_ns", "server_median_ms", "server_p90_ns",
        "server_min_ns",   "server_max_ns",    "breakdown",
    };

    for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++)
        write_null(w, keys[i], why);
}

static void write_handshake(jw *w, const struct diag_clock *clk, unsigned budget_ms,
                            const diag_op_result *ops)
{
    uint64_t share = (uint64_t)budget_ms * NS_PER_MS * HS_SHARE_NUM / HS_SHARE_DEN;
    diag_hs_result *hs = malloc(sizeof *hs);

    jw_obj(w, "handshake");
    jw_str(w, "what", "server CPU time of one full mutual-TLS 1.3 handshake: tern's TLS "
                      "adapter on both sides in one process, bytes passed in memory, only "
                      "the server's calls timed (connection set-up and handshake, not the "
                      "free); median and p90 by nearest rank");
    jw_str(w, "certificates", "ECDSA P-256 with SHA-256, made at run time: one CA, a server "
                              "and a client certificate it issued");
    jw_str(w, "group", "X25519 (the client's first key share; src/tls/ctx.c)");
    jw_str(w, "reference_ms", REFERENCE_MS);
    jw_str(w, "reference", REFERENCE_WHAT);
    if (hs == NULL) {
        jw_u64(w, "handshakes", 0);
        write_null(w, "version", "out of memory");
        write_null(w, "cipher", "out of memory");
        write_unmeasured(w, "out of memory");
        jw_end(w);
        return;
    }
    diag_handshake_measure(clk, clk->now_ns(clk->ctx) + share, hs);
    jw_u64(w, "handshakes", hs->count);
    jw_u64(w, "wall_ns", hs->wall_ns);
    if (hs->count == 0 || hs->median_ns == 0) {
        const char *why = hs->why != NULL ? hs->why : "shorter than the clock's resolution";

        if (hs->count > 0) {
            jw_str(w, "version", hs->version);
            jw_str(w, "cipher", hs->cipher);
        } else {
            write_null(w, "version", why);
            write_null(w, "cipher", why);
        }
        write_unmeasured(w, why);
    } else {
        jw_str(w, "version", hs->version);
        jw_str(w, "cipher", hs->cipher);
        if (hs->why != NULL)
            jw_str(w, "stopped_why", hs->why);
        jw_u64(w, "server_total_ns", hs->total_ns);
        jw_u64(w, "server_median_ns", hs->median_ns);
        jw_fixed(w, "server_median_ms", (int64_t)(hs->median_ns / 1000u), 3);
        jw_u64(w, "server_p90_ns", hs->p90_ns);
        jw_u64(w, "server_min_ns", hs->server_ns[0]);
        jw_u64(w, "server_max_ns", hs->server_ns[hs->count - 1]);
        write_breakdown(w, hs, ops);
    }
    jw_end(w);
    free(hs);
}

void diag_crypto_write(jw *w, const struct diag_clock *clk, unsigned budget_ms)
{
    diag_op_result *ops = calloc(DIAG_OP_COUNT, sizeof *ops);

    if (ops == NULL) {
        write_null(w, "crypto", "out of memory");
        write_null(w, "handshake", "out of memory");
        return;
    }
    write_crypto(w, clk, budget_ms, ops);
    write_handshake(w, clk, budget_ms, ops);
    free(ops);
}

size_t diag_crypto_report(char *buf, size_t cap, const struct diag_clock *clk,
                          unsigned budget_ms, const char *mode)
{
    jw w;

    jw_init(&w, buf, cap);
    jw_obj(&w, NULL);
    jw_u64(&w, "schema", 1);
    jw_str(&w, "tern", TERN_VERSION);
    jw_str(&w, "mode", mode);
    diag_crypto_write(&w, clk, budget_ms);
    jw_end(&w);
    return jw_finish(&w);
}
