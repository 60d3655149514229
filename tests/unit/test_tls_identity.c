/*
 * test_tls_identity.c - where a client's identity comes from (CN or one
 * subjectAltName type), which certificates have none or an ambiguous one
 * (two CNs, two SANs of the type, an empty CN, a NUL in it: certificates
 * made at run time, below), and the server context's start-up checks: every
 * mistake in the certificate files is caught when the context is built, with
 * a message naming the file's role.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "test.h"

#include "test_tls_pair.h"

/* For making certificates at run time (see reissued() below); the adapter
 * is used through tls.h, except for one certificate no handshake can carry
 * (internal.h: tls_identity_from_der). */
#include "tls/internal.h" /* wolfSSL's options.h before its other headers */

#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/random.h>

static tern_tls_state handshake_with_source(tls_test_pair *p, tern_tls_identity_source src,
                                            const char *cert)
{
    tls_test_server_opts o = {0};

    o.identity = src;
    return tls_test_handshake(p, tls_test_server(&o, NULL, 0),
                              tls_test_client("ca.crt", cert, TERN_TLS_1_3, TERN_TLS_1_3));
}

TEST(tls_identity_from_san_email)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_EMAIL, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "sensor-7@example.com") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_identity_from_san_dns)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_DNS, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "sensor-7.example") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_identity_from_san_uri)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_URI, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "urn:tern:sensor-7") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_identity_from_cn_ignores_sans)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_CN, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "sans") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_without_the_configured_san_is_refused)
{
    tls_test_pair p;

    /* dev-client has a CN but no subjectAltName at all. */
    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_DNS, "dev-client"), TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NO_IDENTITY);
    CHECK(tern_tls_state_of(p.client) == TERN_TLS_FAILED);
    tls_test_pair_close(&p);
}

/* Build a server from opts and expect it refused with `words` in the message. */
static bool refused_with(const tls_test_server_opts *o, const char *words)
{
    char err[TERN_TLS_ERR_SIZE] = "";
    tern_tls_server *s = tls_test_server(o, err, sizeof err);

    if (s != NULL) {
        tern_tls_server_release(s);
        return false;
    }
    if (strstr(err, words) == NULL) {
        fprintf(stderr, "  message was: %s\n", err);
        return false;
    }
    return true;
}

TEST(tls_server_certificate_must_be_p256)
{
    tls_test_server_opts o = {0};

    o.cert = "p384-server.crt";
    o.key = "p384-server.key";
    CHECK(refused_with(&o, "ECDSA P-256"));
}

TEST(tls_server_key_must_match_its_certificate)
{
    tls_test_server_opts o = {0};

    o.key = "dev-client.key";
    CHECK(refused_with(&o, "does not match"));
}

TEST(tls_required_client_certificates_need_a_client_ca)
{
    tls_test_server_opts o = {0};

    o.client_ca = "";
    CHECK(refused_with(&o, "client CA"));
}

TEST(tls_garbage_ca_bundle_is_refused)
{
    tls_test_server_opts o = {0};

    o.client_ca = "make.sh"; /* not PEM at all */
    CHECK(refused_with(&o, "client CA: cannot load"));
}

TEST(tls_operators_list_refuses_an_empty_entry)
{
    tls_test_server_opts o = {0};

    o.operators = "alice,,bob";
    CHECK(refused_with(&o, "empty identity"));
    o.operators = "alice, ";
    CHECK(refused_with(&o, "empty identity"));
}

TEST(tls_operators_list_trims_blanks_around_names)
{
    tls_test_server_opts o = {0};
    tls_test_pair p;

    o.operators = " \tlisted-operator\t ,x";
    CHECK_EQ(tls_test_handshake(&p, tls_test_server(&o, NULL, 0),
                                tls_test_client("ca.crt", "listed-operator", TERN_TLS_1_3,
                                                TERN_TLS_1_3)),
             TERN_TLS_ESTABLISHED);
    CHECK(tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);
}

TEST(tls_failure_texts_are_distinct_and_present)
{
    for (int a = TERN_TLS_FAIL_NONE; a <= TERN_TLS_FAIL_OUT_OF_MEMORY; a++) {
        CHECK(tern_tls_failure_text((tern_tls_failure)a)[0] != '\0');
        for (int b = a + 1; b <= TERN_TLS_FAIL_OUT_OF_MEMORY; b++)
            CHECK(strcmp(tern_tls_failure_text((tern_tls_failure)a),
                         tern_tls_failure_text((tern_tls_failure)b)) != 0);
    }
    CHECK(strcmp(tern_tls_alert_text(48), "unknown_ca") == 0);
    CHECK(strcmp(tern_tls_alert_text(255), "alert") == 0);
}

TEST(tls_certificate_with_two_sans_of_the_type_is_refused_as_ambiguous)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_DNS, "two-dns"), TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_AMBIGUOUS_IDENTITY);
    tls_test_pair_close(&p);
}

/*
 * Certificates with subjects openssl will not write (an empty CN, a NUL in
 * a CN), made here at run time: a copy of a checked-in client certificate
 * (data/tls/NAME.crt, so its key NAME.key still matches) with the subject
 * replaced by exactly the attributes given, signed again with ca.key.
 * Everything else (issuer, validity, extensions) stays as it was.
 */

/* A subject attribute: type is the last arc of 2.5.4.x (3 = CN, 10 = O),
 * the value len bytes as a UTF8String; plus puts it in the same RDN as the
 * previous attribute (a multi-valued RDN: CN=alice+CN=bob). */
typedef struct subject_attr {
    uint8_t type;
    const char *value;
    size_t len;
    bool plus;
} subject_attr;

#define ATTR_CN 3u
#define ATTR_O 10u
#define ATTR(type, text) {(type), (text), sizeof(text) - 1u, false}
#define ATTR_PLUS(type, text) {(type), (text), sizeof(text) - 1u, true}

typedef struct der_out {
    uint8_t b[4096];
    size_t len;
    bool ok;
} der_out;

static void der_put(der_out *d, const void *p, size_t n)
{
    if (!d->ok || n > sizeof d->b - d->len) {
        d->ok = false;
        return;
    }
    memcpy(d->b + d->len, p, n);
    d->len += n;
}

/* Tag, definite length (short or long form) and content. */
static void der_tlv(der_out *d, uint8_t tag, const void *content, size_t n)
{
    uint8_t h[4] = {tag, 0, 0, 0};
    size_t hl;

    if (n < 0x80) {
        h[1] = (uint8_t)n;
        hl = 2;
    } else if (n < 0x100) {
        h[1] = 0x81;
        h[2] = (uint8_t)n;
        hl = 3;
    } else {
        h[1] = 0x82;
        h[2] = (uint8_t)(n >> 8);
        h[3] = (uint8_t)n;
        hl = 4;
    }
    der_put(d, h, hl);
    der_put(d, content, n);
}

/* The element at *pos (before end): its content starts at *start and is
 * *len bytes; *pos moves past it. Only what certificates use here. */
static bool der_elem(const uint8_t *b, size_t end, size_t *pos, size_t *start, size_t *len)
{
    size_t p = *pos, n;

    if (end - p < 2)
        return false;
    n = b[p + 1];
    p += 2;
    if (n & 0x80u) {
        size_t k = n & 0x7fu;

        if (k == 0 || k > 2 || end - p < k)
            return false;
        n = 0;
        while (k-- > 0)
            n = (n << 8) | b[p++];
    }
    if (end - p < n)
        return false;
    *start = p;
    *len = n;
    *pos = p + n;
    return true;
}

static void free_bytes(tern_tls_bytes *b)
{
    free((void *)b->data);
    b->data = NULL;
    b->len = 0;
}

/* Sign tbs (a whole TBSCertificate) with ca.key: the BIT STRING of an
 * ecdsa-with-SHA256 signature, appended to d. */
static bool sign_with_ca(der_out *d, const uint8_t *tbs, size_t tbs_len)
{
    tern_tls_bytes pem = tls_test_file("ca.key");
    uint8_t key_der[512], hash[32], sig[1 + 128];
    word32 idx = 0, sig_len = sizeof sig - 1;
    ecc_key key;
    WC_RNG rng;
    int key_len = -1;
    bool ok = false, key_up = false, rng_up = false;

    if (pem.data != NULL)
        key_len = wc_KeyPemToDer(pem.data, (int)pem.len, key_der, sizeof key_der, NULL);
    free_bytes(&pem);
    if (key_len <= 0 || wc_ecc_init(&key) != 0)
        goto done;
    key_up = true;
    if (wc_EccPrivateKeyDecode(key_der, &idx, &key, (word32)key_len) != 0 ||
        wc_Sha256Hash(tbs, (word32)tbs_len, hash) != 0 || wc_InitRng(&rng) != 0)
        goto done;
    rng_up = true;
    sig[0] = 0; /* no unused bits */
    if (wc_ecc_sign_hash(hash, sizeof hash, sig + 1, &sig_len, &rng, &key) != 0)
        goto done;
    der_tlv(d, 0x03, sig, 1u + sig_len);
    ok = d->ok;
done:
    if (rng_up)
        wc_FreeRng(&rng);
    if (key_up)
        wc_ecc_free(&key);
    return ok;
}

/* PEM of data/tls/<name>.crt with its subject replaced by attrs[0..n),
 * signed by ca.key; data NULL on failure (with a message). */
static tern_tls_bytes reissued(const char *name, const subject_attr *attrs, size_t n)
{
    tern_tls_bytes pem = {NULL, 0}, orig;
    static uint8_t der[4096];
    static der_out rdn, subject, tbs_body, tbs, cert_body, cert;
    size_t pos = 0, start, len, cert_end, tbs_end, child[12][2], children = 0, subject_at;
    char file[128];
    uint8_t *out;
    int der_len = -1, pem_len;

    snprintf(file, sizeof file, "%s.crt", name);
    orig = tls_test_file(file);
    if (orig.data != NULL)
        der_len = wc_CertPemToDer(orig.data, (int)orig.len, der, sizeof der, CERT_TYPE);
    free_bytes(&orig);
    if (der_len <= 0)
        goto fail;
    /* Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature } */
    if (!der_elem(der, (size_t)der_len, &pos, &start, &len))
        goto fail;
    cert_end = start + len;
    pos = start;
    if (!der_elem(der, cert_end, &pos, &start, &len))
        goto fail;
    tbs_end = pos;
    /* The TBSCertificate's elements: [0] version, serial, signature, issuer,
     * validity, subject, subjectPublicKeyInfo, [3] extensions. */
    for (pos = start; pos < tbs_end && children < 12; children++) {
        child[children][0] = pos;
        if (!der_elem(der, tbs_end, &pos, &start, &len))
            goto fail;
        child[children][1] = pos;
    }
    subject_at = der[child[0][0]] == 0xa0 ? 5 : 4;
    if (children <= subject_at)
        goto fail;
    /* The new subject: SEQUENCE OF SET OF SEQUENCE { OID 2.5.4.x, UTF8String } */
    memset(&subject, 0, sizeof subject);
    subject.ok = true;
    for (size_t i = 0; i < n;) {
        memset(&rdn, 0, sizeof rdn);
        rdn.ok = true;
        do {
            const uint8_t oid[5] = {0x06, 0x03, 0x55, 0x04, attrs[i].type};
            der_out atv = {.ok = true};

            der_put(&atv, oid, sizeof oid);
            der_tlv(&atv, 0x0c, attrs[i].value, attrs[i].len);
            der_tlv(&rdn, 0x30, atv.b, atv.len);
            i++;
        } while (i < n && attrs[i].plus);
        der_tlv(&subject, 0x31, rdn.b, rdn.len);
    }
    memset(&tbs_body, 0, sizeof tbs_body);
    tbs_body.ok = true;
    for (size_t c = 0; c < children; c++) {
        if (c == subject_at)
            der_tlv(&tbs_body, 0x30, subject.b, subject.len);
        else
            der_put(&tbs_body, der + child[c][0], child[c][1] - child[c][0]);
    }
    memset(&tbs, 0, sizeof tbs);
    tbs.ok = true;
    der_tlv(&tbs, 0x30, tbs_body.b, tbs_body.len);
    /* The signature algorithm stays (ecdsa-with-SHA256: scripts/pki.sh). */
    pos = tbs_end;
    if (!subject.ok || !tbs.ok || !der_elem(der, cert_end, &pos, &start, &len))
        goto fail;
    memset(&cert_body, 0, sizeof cert_body);
    cert_body.ok = true;
    der_put(&cert_body, tbs.b, tbs.len);
    der_put(&cert_body, der + tbs_end, pos - tbs_end);
    if (!sign_with_ca(&cert_body, tbs.b, tbs.len))
        goto fail;
    memset(&cert, 0, sizeof cert);
    cert.ok = true;
    der_tlv(&cert, 0x30, cert_body.b, cert_body.len);
    if (!cert.ok || (out = malloc(3 * cert.len)) == NULL)
        goto fail;
    pem_len = wc_DerToPem(cert.b, (word32)cert.len, out, (word32)(3 * cert.len), CERT_TYPE);
    if (pem_len <= 0) {
        free(out);
        goto fail;
    }
    pem.data = out;
    pem.len = (size_t)pem_len;
    return pem;
fail:
    fprintf(stderr, "  cannot make a certificate from %s.crt\n", name);
    return pem;
}

/* A TLS 1.3 client presenting cert (PEM) with data/tls/<key_name>.key. */
static tern_tls_client *client_presenting(tern_tls_bytes cert, const char *key_name)
{
    tern_tls_client_config cfg;
    tern_tls_client *cl = NULL;
    char file[128], err[TERN_TLS_ERR_SIZE] = "";

    memset(&cfg, 0, sizeof cfg);
    snprintf(file, sizeof file, "%s.key", key_name);
    cfg.ca = tls_test_file("ca.crt");
    cfg.cert_chain = cert;
    cfg.key = tls_test_file(file);
    cfg.min_version = TERN_TLS_1_3;
    cfg.max_version = TERN_TLS_1_3;
    if (cert.data != NULL && cfg.ca.data != NULL && cfg.key.data != NULL) {
        cl = tern_tls_client_create(&cfg, err, sizeof err);
        if (cl == NULL)
            fprintf(stderr, "  test client: %s\n", err);
    }
    free_bytes(&cfg.ca);
    free_bytes(&cfg.key);
    return cl;
}

/* Handshake of a server taking the identity from src with a client whose
 * certificate is data/tls/<name>.crt with the subject attrs. *made is false
 * when the certificate or the client could not be made (a broken test, not
 * a refusal). */
static tern_tls_state handshake_with_subject(tls_test_pair *p, tern_tls_identity_source src,
                                             const char *name, const subject_attr *attrs,
                                             size_t n, bool *made)
{
    tls_test_server_opts o = {0};
    tern_tls_bytes cert = reissued(name, attrs, n);
    tern_tls_client *cl = client_presenting(cert, name);

    free_bytes(&cert);
    memset(p, 0, sizeof *p);
    *made = cl != NULL;
    if (cl == NULL)
        return TERN_TLS_HANDSHAKING;
    o.identity = src;
    return tls_test_handshake(p, tls_test_server(&o, NULL, 0), cl);
}

#define SUBJECT(...) (const subject_attr[]){__VA_ARGS__}, \
    sizeof((const subject_attr[]){__VA_ARGS__}) / sizeof(subject_attr)

TEST(tls_identity_reissued_certificate_with_one_cn_is_accepted)
{
    tls_test_pair p;
    bool made;

    /* The certificate maker itself: one CN (next to an O) is the identity. */
    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_CN, "dev-client",
                                    SUBJECT(ATTR(ATTR_O, "tern"), ATTR(ATTR_CN, "alice")), &made),
             TERN_TLS_ESTABLISHED);
    CHECK(made);
    CHECK(strcmp(tern_tls_identity(p.server), "alice") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_with_two_cns_is_refused_as_ambiguous)
{
    tls_test_pair p;
    bool made;

    /* wolfSSL keeps the last CN only: this used to be accepted as "bob". */
    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_CN, "dev-client",
                                    SUBJECT(ATTR(ATTR_CN, "alice"), ATTR(ATTR_CN, "bob")), &made),
             TERN_TLS_FAILED);
    CHECK(made);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_AMBIGUOUS_IDENTITY);
    CHECK(tern_tls_identity(p.server) == NULL);
    CHECK(tern_tls_state_of(p.client) == TERN_TLS_FAILED);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_with_the_same_cn_twice_is_refused_as_ambiguous)
{
    tls_test_pair p;
    bool made;

    /* Counted, not compared: two CN attributes are one too many. */
    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_CN, "dev-client",
                                    SUBJECT(ATTR(ATTR_CN, "alice"), ATTR(ATTR_O, "tern"),
                                            ATTR(ATTR_CN, "alice")),
                                    &made),
             TERN_TLS_FAILED);
    CHECK(made);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_AMBIGUOUS_IDENTITY);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_with_two_cns_in_one_rdn_is_refused)
{
    subject_attr both[] = {ATTR(ATTR_CN, "alice"), ATTR_PLUS(ATTR_CN, "bob")};
    tern_tls_bytes pem = reissued("dev-client", both, 2);
    static uint8_t der[4096];
    char *identity = (char *)"unset";
    int len = -1;

    /* CN=alice+CN=bob, a multi-valued RDN. wolfSSL will not even load it as
     * a client certificate, so no handshake can carry it from the test
     * client (openssl's can: tests/integration/test_tls_identity.py); the
     * adapter's identity function gets the bytes directly. wolfSSL's
     * parser calls them invalid today; a parser that took them would meet
     * the CN count. Refused either way. */
    if (pem.data != NULL)
        len = wc_CertPemToDer(pem.data, (int)pem.len, der, sizeof der, CERT_TYPE);
    free_bytes(&pem);
    CHECK(len > 0);
    CHECK(tls_identity_from_der(der, (size_t)len, TERN_TLS_IDENTITY_CN, NULL, &identity, NULL) !=
          TERN_TLS_FAIL_NONE);
    CHECK(identity == NULL);
}

TEST(tls_certificate_with_an_empty_cn_is_refused)
{
    tls_test_pair p;
    bool made;

    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_CN, "dev-client",
                                    SUBJECT(ATTR(ATTR_O, "tern"), ATTR(ATTR_CN, "")), &made),
             TERN_TLS_FAILED);
    CHECK(made);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NO_IDENTITY);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_with_an_empty_and_a_real_cn_is_refused_as_ambiguous)
{
    tls_test_pair p;
    bool made;

    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_CN, "dev-client",
                                    SUBJECT(ATTR(ATTR_CN, ""), ATTR(ATTR_CN, "alice")), &made),
             TERN_TLS_FAILED);
    CHECK(made);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_AMBIGUOUS_IDENTITY);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_with_a_nul_in_its_cn_is_refused)
{
    tls_test_pair p;
    bool made;

    /* "admin\0.evil" must not become "admin". */
    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_CN, "dev-client",
                                    SUBJECT(ATTR(ATTR_CN, "admin\0.evil")), &made),
             TERN_TLS_FAILED);
    CHECK(made);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NO_IDENTITY);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_without_a_cn_is_refused)
{
    tls_test_pair p;
    bool made;

    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_CN, "dev-client",
                                    SUBJECT(ATTR(ATTR_O, "tern")), &made),
             TERN_TLS_FAILED);
    CHECK(made);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NO_IDENTITY);
    tls_test_pair_close(&p);
}

TEST(tls_two_cns_do_not_matter_when_the_identity_is_a_san)
{
    tls_test_pair p;
    bool made;

    /* sans.crt's subjectAltNames, under a two-CN subject: the CN is not
     * the identity, so its count is not looked at. */
    CHECK_EQ(handshake_with_subject(&p, TERN_TLS_IDENTITY_SAN_DNS, "sans",
                                    SUBJECT(ATTR(ATTR_CN, "alice"), ATTR(ATTR_CN, "bob")), &made),
             TERN_TLS_ESTABLISHED);
    CHECK(made);
    CHECK(strcmp(tern_tls_identity(p.server), "sensor-7.example") == 0);
    tls_test_pair_close(&p);
}
