/*
 * test_certdate.c - notAfter of a PEM certificate (config/certdate.c):
 * UTCTime and GeneralizedTime certificates made with openssl (their
 * dates as `openssl x509 -enddate` printed them), text around the PEM
 * block, and refusals: no block, bad base64, truncated or damaged DER,
 * a scratch buffer too small. Every truncation and byte flip is parsed
 * without reading outside the input (ASan).
 */
#include "test.h"

#include "config/certdate.h"

#include <stdlib.h>

/* openssl req -x509 -newkey ec -days 400: notAfter=Jan  6 00:37:34 2028 GMT */
static const char utc_cert[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBhjCCASugAwIBAgIUFAUI9bnRf8z8ll54yAKgKDIBp4owCgYIKoZIzj0EAwIw\n"
    "GDEWMBQGA1UEAwwNY2VydGRhdGUtdGVzdDAeFw0yNjEyMDIwMDM3MzRaFw0yODAx\n"
    "MDYwMDM3MzRaMBgxFjAUBgNVBAMMDWNlcnRkYXRlLXRlc3QwWTATBgcqhkjOPQIB\n"
    "BggqhkjOPQMBBwNCAASCDCHfnIdlbF2HjIrNbTJNYpkgEbu04WQGMys9O7AgmIz3\n"
    "siR/Sex5CBNONtrevSqnlMyp6vy25GS8V2gQg19jo1MwUTAdBgNVHQ4EFgQUQv9b\n"
    "710/jYZF1HzfbnuB9YK3x48wHwYDVR0jBBgwFoAUQv9b710/jYZF1HzfbnuB9YK3\n"
    "x48wDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEA0wMIx1keqX+H\n"
    "5Y/A147RGJbwfvvdw/Xia7SwaRAni8gCIQCgJ8G0Ckob0rkkB5cFeeIYDJGzLxza\n"
    "L5e63vylde+jhw==\n"
    "-----END CERTIFICATE-----\n";
/* -days 10500: notAfter=Sep  1 00:37:35 2055 GMT (GeneralizedTime) */
static const char gen_cert[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBhjCCAS2gAwIBAgIUQ6a+Yl37Glm7YczTDFTrYO6OlRQwCgYIKoZIzj0EAwIw\n"
    "GDEWMBQGA1UEAwwNY2VydGRhdGUtdGVzdDAgFw0yNjEyMDIwMDM3MzVaGA8yMDU1\n"
    "MDkwMTAwMzczNVowGDEWMBQGA1UEAwwNY2VydGRhdGUtdGVzdDBZMBMGByqGSM49\n"
    "AgEGCCqGSM49AwEHA0IABHOtxwLDc0kEUCzGPuh41JbD9rHcJYJME1F0QON0zVqq\n"
    "G6elVJ2UvgJQdu/HQykQOgkkee2UHGz9YFBC3ZqgmnajUzBRMB0GA1UdDgQWBBRD\n"
    "lCMCl+OdxorKdSiG0+fqTp/zETAfBgNVHSMEGDAWgBRDlCMCl+OdxorKdSiG0+fq\n"
    "Tp/zETAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIEyy796lL3QY\n"
    "X/gsipw3tncoqPrCvcjTQMg6xf+kiuhyAiA4TrGidzjgC1P16ng58M0sHQXJjffM\n"
    "lCTJDjfO+BUkPA==\n"
    "-----END CERTIFICATE-----\n";

static uint8_t scratch[CERTDATE_SCRATCH];

static int parse(const char *pem, size_t n, int64_t *t)
{
    return certdate_not_after((const uint8_t *)pem, n, scratch, sizeof scratch, t);
}

TEST(certdate_reads_utctime_and_generalizedtime)
{
    int64_t t = 0;
    CHECK_EQ(parse(utc_cert, strlen(utc_cert), &t), 0);
    CHECK_EQ(t, 1830731854);
    CHECK_EQ(parse(gen_cert, strlen(gen_cert), &t), 0);
    CHECK_EQ(t, 2703371855);
    /* text before and a second certificate after: the first one counts */
    char both[2048];
    snprintf(both, sizeof both, "subject=CN = x\n%s%s", utc_cert, gen_cert);
    CHECK_EQ(parse(both, strlen(both), &t), 0);
    CHECK_EQ(t, 1830731854);
}

TEST(certdate_refuses_what_is_not_a_certificate)
{
    int64_t t;
    CHECK_EQ(parse("", 0, &t), -1);
    CHECK_EQ(parse("-----BEGIN CERTIFICATE-----\nQUJD\n", 32, &t), -1); /* no end */
    const char *junk = "-----BEGIN CERTIFICATE-----\nQUJD*EFG\n-----END CERTIFICATE-----\n";
    CHECK_EQ(parse(junk, strlen(junk), &t), -1);
    const char *notder = "-----BEGIN CERTIFICATE-----\nQUJDREVGR0g=\n-----END CERTIFICATE-----\n";
    CHECK_EQ(parse(notder, strlen(notder), &t), -1);
    CHECK_EQ(certdate_not_after((const uint8_t *)utc_cert, strlen(utc_cert), scratch, 100, &t), -1);
}

TEST(certdate_survives_every_truncation_and_flip)
{
    const size_t n = strlen(utc_cert);
    char *buf = malloc(n);
    int64_t t;
    for (size_t cut = 0; cut < n; cut++) {
        memcpy(buf, utc_cert, cut);
        (void)parse(buf, cut, &t);
    }
    unsigned ok = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(buf, utc_cert, n);
        buf[i] ^= 0x01;
        if (parse(buf, n, &t) == 0)
            ok++;
    }
    free(buf);
    CHECK(ok < n); /* some flips break it; none reads out of bounds */
}
