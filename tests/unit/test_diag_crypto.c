/*
 * test_diag_crypto.c - the report's crypto and handshake sections
 * (src/diag/cryptobench.c): every member is written, with a figure or an
 * explicit null and its reason; the handshake completes and its breakdown
 * parts are each > 0 and add up to at most the median; the figures follow
 * from the clock (a fake clock that advances a fixed step per read makes
 * them exact); a budget of 0 still gives a whole document.
 */
#include <stdbool.h>

#include "test.h"

#include "diag/cryptobench.h"
#include "diag/crypto_ops.h"
#include "platform/posix/diagclock.h"

#define DOC_CAP (64u * 1024u)

static const char *const op_names[] = {
    "ecdsa_p256_sign", "ecdsa_p256_verify", "x25519_keygen", "x25519_shared_secret",
    "ecdh_p256_keygen", "ecdh_p256_shared_secret", "sha256_64_bytes", "sha256",
    "aes128_gcm", "aes256_gcm", "chacha20_poly1305",
};
static const char *const bulk_names[] = {"sha256", "aes128_gcm", "aes256_gcm",
                                         "chacha20_poly1305"};

/* A clock that moves `step` ns at every read of the time, and `step`
 * cycles at every read of the cycle counter. */
typedef struct step_clock {
    uint64_t step, t, c;
} step_clock;

static uint64_t step_ns(void *ctx)
{
    step_clock *sc = ctx;

    sc->t += sc->step;
    return sc->t;
}

static uint64_t step_cycles(void *ctx)
{
    step_clock *sc = ctx;

    sc->c += sc->step;
    return sc->c;
}

/* diag_crypto_report's document, parsed (into one buffer for all tests: a
 * failed CHECK returns without cleaning up); NULL when it is not whole,
 * valid JSON. */
static const char *report(const struct diag_clock *clk, unsigned budget_ms, jr_val *doc)
{
    static char buf[DOC_CAP];
    size_t n = diag_crypto_report(buf, sizeof buf, clk, budget_ms, "unit-test");

    if (n == 0 || jr_parse(buf, n, doc, NULL, 0) != 0)
        return NULL;
    return buf;
}

/* obj.key is a number > 0, or null with obj.key_why a non-empty string. */
static bool figure_or_why(const jr_val *obj, const char *key)
{
    jr_val v, why;
    char why_key[64];
    uint64_t n;
    int64_t f;

    if (jr_get(obj, key, &v) != 0)
        return false;
    if (v.type == JR_NUMBER)
        return (jr_u64(&v, &n) == 0 && n > 0) || (jr_fixed(&v, 3, &f) == 0 && f > 0);
    snprintf(why_key, sizeof why_key, "%s_why", key);
    return v.type == JR_NULL && jr_get(obj, why_key, &why) == 0 && why.type == JR_STRING &&
           why.n > 2;
}

static bool u64_member(const jr_val *obj, const char *key, uint64_t *out)
{
    jr_val v;

    return jr_get(obj, key, &v) == 0 && jr_u64(&v, out) == 0;
}

/* Every operation's object has its figures, or nulls with reasons. */
static bool every_op_present(const jr_val *crypto)
{
    for (unsigned i = 0; i < sizeof op_names / sizeof op_names[0]; i++) {
        jr_val op, impl;
        uint64_t n;

        if (jr_get(crypto, op_names[i], &op) != 0 || op.type != JR_OBJECT ||
            jr_get(&op, "impl", &impl) != 0 || impl.type != JR_STRING ||
            !u64_member(&op, "iterations", &n) || !u64_member(&op, "elapsed_ns", &n) ||
            !figure_or_why(&op, "per_op_ns") || !figure_or_why(&op, "mean_ns") ||
            !figure_or_why(&op, "per_op_cycles")) {
            fprintf(stderr, "  crypto.%s is incomplete\n", op_names[i]);
            return false;
        }
    }
    for (unsigned i = 0; i < sizeof bulk_names / sizeof bulk_names[0]; i++) {
        jr_val op;

        if (jr_get(crypto, bulk_names[i], &op) != 0 || !figure_or_why(&op, "throughput_mib_s")) {
            fprintf(stderr, "  crypto.%s has no throughput\n", bulk_names[i]);
            return false;
        }
    }
    return true;
}

TEST(diag_crypto_writes_every_operation_and_a_completed_handshake_with_its_breakdown)
{
    struct diag_clock clk = posix_diag_clock();
    jr_val doc, crypto, hs, bd, ref;
    uint64_t n, median, kx, sig, ver, rest;
    const char *text = report(&clk, 200, &doc);

    CHECK(text != NULL);
    CHECK(jr_get(&doc, "mode", &ref) == 0 && jr_string_is(&ref, "unit-test"));
    CHECK(u64_member(&doc, "schema", &n) && n == 1);
    CHECK(jr_get(&doc, "crypto", &crypto) == 0 && crypto.type == JR_OBJECT);
    CHECK(every_op_present(&crypto));
    /* On the host every operation is measurable. */
    for (unsigned i = 0; i < sizeof op_names / sizeof op_names[0]; i++) {
        jr_val op;

        CHECK(jr_get(&crypto, op_names[i], &op) == 0);
        CHECK(u64_member(&op, "per_op_ns", &n) && n > 0);
    }
    CHECK(jr_get(&doc, "handshake", &hs) == 0 && hs.type == JR_OBJECT);
    CHECK(u64_member(&hs, "handshakes", &n) && n >= 1);
    CHECK(u64_member(&hs, "server_median_ns", &median) && median > 0);
    CHECK(jr_get(&hs, "version", &ref) == 0 && jr_string_is(&ref, "TLSv1.3"));
    CHECK(jr_get(&hs, "reference_ms", &ref) == 0 && jr_string_is(&ref, "0.24"));
    CHECK(jr_get(&hs, "reference", &ref) == 0 && jr_string_is(&ref, "urMQTT, x86_64, seed"));
    CHECK(jr_get(&hs, "breakdown_method", &ref) == 0 && ref.type == JR_STRING);
    CHECK(jr_get(&hs, "breakdown", &bd) == 0 && bd.type == JR_OBJECT);
    CHECK(u64_member(&bd, "key_exchange_ns", &kx) && kx > 0);
    CHECK(u64_member(&bd, "signature_ns", &sig) && sig > 0);
    CHECK(u64_member(&bd, "certificate_verification_ns", &ver) && ver > 0);
    /* rest is null only when the primitives add up to more than the
     * handshake (a noisy machine), and says so; otherwise it is > 0 and the
     * parts add up to at most the median. */
    CHECK(figure_or_why(&bd, "rest_ns"));
    if (u64_member(&bd, "rest_ns", &rest)) {
        CHECK(rest > 0);
        CHECK(kx + sig + ver + rest <= median);
    } else {
        CHECK(kx + sig + ver > median);
    }
}

TEST(diag_crypto_budget_zero_still_runs_each_measurement_once)
{
    struct diag_clock clk = posix_diag_clock();
    jr_val doc, crypto, hs, op;
    uint64_t n;
    const char *text = report(&clk, 0, &doc);

    CHECK(text != NULL);
    CHECK(jr_get(&doc, "crypto", &crypto) == 0);
    CHECK(every_op_present(&crypto));
    CHECK(jr_get(&crypto, "ecdsa_p256_sign", &op) == 0);
    CHECK(u64_member(&op, "iterations", &n) && n == 1);
    CHECK(jr_get(&crypto, "sha256_64_bytes", &op) == 0);
    CHECK(u64_member(&op, "iterations", &n) && n == 32); /* one batch */
    CHECK(jr_get(&doc, "handshake", &hs) == 0);
    CHECK(u64_member(&hs, "handshakes", &n) && n == 1);
    CHECK(figure_or_why(&hs, "server_median_ns"));
}

TEST(diag_crypto_figures_follow_from_the_clock)
{
    /* Every read moves 1000 ns and 1000 cycles: one sample of one
     * operation (budget 0) is then exactly 1000 ns, a 32-hash batch 31 ns
     * a hash, and 16 KiB in 1000 ns is 15625.0 MiB/s. */
    step_clock sc = {1000, 0, 0};
    struct diag_clock clk = {step_ns, step_cycles, &sc};
    jr_val doc, crypto, op, v, hs;
    uint64_t n;
    int64_t tenths;
    const char *text = report(&clk, 0, &doc);

    CHECK(text != NULL);
    CHECK(jr_get(&doc, "crypto", &crypto) == 0);
    CHECK(jr_get(&crypto, "ecdsa_p256_verify", &op) == 0);
    CHECK(u64_member(&op, "per_op_ns", &n) && n == 1000);
    CHECK(u64_member(&op, "per_op_cycles", &n) && n == 1000);
    CHECK(jr_get(&crypto, "sha256_64_bytes", &op) == 0);
    CHECK(u64_member(&op, "per_op_ns", &n) && n == 1000 / 32);
    CHECK(jr_get(&crypto, "aes256_gcm", &op) == 0);
    CHECK(jr_get(&op, "throughput_mib_s", &v) == 0 && jr_fixed(&v, 1, &tenths) == 0);
    CHECK_EQ(tenths, 156250);
    /* The handshake's server calls each take one step per clock read pair. */
    CHECK(jr_get(&doc, "handshake", &hs) == 0);
    CHECK(u64_member(&hs, "server_median_ns", &n) && n > 0 && n % 1000 == 0);
}

TEST(diag_crypto_without_cycle_counter_says_why)
{
    step_clock sc = {500, 0, 0};
    struct diag_clock clk = {step_ns, NULL, &sc};
    jr_val doc, crypto, op, v;
    const char *text = report(&clk, 0, &doc);

    CHECK(text != NULL);
    CHECK(jr_get(&doc, "crypto", &crypto) == 0);
    CHECK(every_op_present(&crypto));
    CHECK(jr_get(&crypto, "x25519_keygen", &op) == 0);
    CHECK(jr_get(&op, "per_op_cycles", &v) == 0 && v.type == JR_NULL);
    CHECK(jr_get(&op, "per_op_cycles_why", &v) == 0 &&
          jr_string_is(&v, "the platform gave no cycle counter"));
}

TEST(diag_crypto_a_clock_that_does_not_move_gives_nulls_with_reasons)
{
    /* Nothing measurable (every span is 0 ns): every figure null with its
     * reason, the document still whole. */
    step_clock sc = {0, 0, 0};
    struct diag_clock clk = {step_ns, step_cycles, &sc};
    jr_val doc, crypto, op, v, hs;
    const char *text = report(&clk, 0, &doc);

    CHECK(text != NULL);
    CHECK(jr_get(&doc, "crypto", &crypto) == 0);
    CHECK(every_op_present(&crypto));
    CHECK(jr_get(&crypto, "chacha20_poly1305", &op) == 0);
    CHECK(jr_get(&op, "per_op_ns", &v) == 0 && v.type == JR_NULL);
    CHECK(jr_get(&op, "per_op_ns_why", &v) == 0 &&
          jr_string_is(&v, "shorter than the clock's resolution"));
    CHECK(jr_get(&doc, "handshake", &hs) == 0);
    CHECK(figure_or_why(&hs, "server_median_ns"));
    CHECK(jr_get(&hs, "server_median_ns", &v) == 0 && v.type == JR_NULL);
    CHECK(figure_or_why(&hs, "breakdown"));
}
