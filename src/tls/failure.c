/*
 * failure.c - why a TLS connection failed, in words an operator can act on,
 * and the error messages of the context constructors.
 *
 * wolfSSL reports hundreds of error codes; a log line needs a handful of
 * categories (no certificate, unknown CA, expired, ...) plus the raw code
 * for whoever digs deeper. Certificate problems are usually known more
 * precisely from the verify callback than from the code the handshake ends
 * with (VERIFY_CERT_ERROR), so the first reason recorded wins.
 */
#include <string.h>

#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/error-ssl.h>
#include <wolfssl/wolfcrypt/error-crypt.h>

tern_tls_failure tls_failure_from_error(int error)
{
    switch (error) {
    case DOMAIN_NAME_MISMATCH:
        return TERN_TLS_FAIL_NAME_MISMATCH;
    case NO_PEER_CERT:
    case NO_PEER_VERIFY:
        return TERN_TLS_FAIL_NO_CERT;
    case ASN_NO_SIGNER_E:
    case ASN_SELF_SIGNED_E:
    case NOT_CA_ERROR:
        return TERN_TLS_FAIL_UNKNOWN_CA;
    case ASN_AFTER_DATE_E:
        return TERN_TLS_FAIL_EXPIRED;
    case ASN_BEFORE_DATE_E:
        return TERN_TLS_FAIL_NOT_YET_VALID;
    case ASN_SIG_CONFIRM_E:
    case ASN_SIG_OID_E:
    case ASN_SIG_HASH_E:
    case ASN_SIG_KEY_E:
    case ASN_PARSE_E:
    case ASN_CRIT_EXT_E:
    case ASN_ALT_NAME_E:
    case ASN_PATHLEN_INV_E:
    case ASN_PATHLEN_SIZE_E:
    case VERIFY_CERT_ERROR:
    case VERIFY_SIGN_ERROR:
    case KEYUSE_SIGNATURE_E:
    case EXTKEYUSE_AUTH_E:
    case MAX_CHAIN_ERROR:
    case UNSUPPORTED_CERTIFICATE:
        return TERN_TLS_FAIL_BAD_CERT;
    case VERSION_ERROR:
    case UNSUPPORTED_PROTO_VERSION:
        return TERN_TLS_FAIL_VERSION;
    case MATCH_SUITE_ERROR:
    case UNSUPPORTED_SUITE:
    case KEY_SHARE_ERROR:
    case ECC_CURVE_ERROR:
        return TERN_TLS_FAIL_NO_SHARED_CIPHER;
    case UNKNOWN_RECORD_TYPE:
    case LENGTH_ERROR:
        return TERN_TLS_FAIL_NOT_TLS;
    case FATAL_ERROR:
        return TERN_TLS_FAIL_PEER_ALERT;
    case MEMORY_E:
    case MEMORY_ERROR:
        return TERN_TLS_FAIL_OUT_OF_MEMORY;
    default:
        return TERN_TLS_FAIL_PROTOCOL;
    }
}

const char *tern_tls_failure_text(tern_tls_failure f)
{
    switch (f) {
    case TERN_TLS_FAIL_NONE:
        return "no failure";
    case TERN_TLS_FAIL_NO_CERT:
        return "no client certificate";
    case TERN_TLS_FAIL_UNKNOWN_CA:
        return "certificate not issued by a trusted CA";
    case TERN_TLS_FAIL_EXPIRED:
        return "certificate expired";
    case TERN_TLS_FAIL_NOT_YET_VALID:
        return "certificate not valid yet";
    case TERN_TLS_FAIL_BAD_CERT:
        return "certificate invalid (signature, usage or encoding)";
    case TERN_TLS_FAIL_NO_IDENTITY:
        return "certificate has no usable identity";
    case TERN_TLS_FAIL_AMBIGUOUS_IDENTITY:
        return "ambiguous identity: the certificate has more than one CN, or more than one "
               "subjectAltName of the tls.identity type";
    case TERN_TLS_FAIL_VERSION:
        return "no TLS version in common";
    case TERN_TLS_FAIL_NO_SHARED_CIPHER:
        return "no cipher suite or key exchange in common";
    case TERN_TLS_FAIL_NOT_TLS:
        return "not TLS";
    case TERN_TLS_FAIL_PEER_ALERT:
        return "peer sent a fatal alert";
    case TERN_TLS_FAIL_PROTOCOL:
        return "TLS protocol error";
    case TERN_TLS_FAIL_OUT_OF_MEMORY:
        return "out of memory";
    case TERN_TLS_FAIL_NAME_MISMATCH:
        return "the server's certificate does not carry the expected name";
    }
    return "unknown failure";
}

const char *tern_tls_alert_text(int code)
{
    switch (code) {
    case TERN_TLS_ALERT_UNEXPECTED_MESSAGE:
        return "unexpected_message";
    case TERN_TLS_ALERT_BAD_RECORD_MAC:
        return "bad_record_mac";
    case TERN_TLS_ALERT_RECORD_OVERFLOW:
        return "record_overflow";
    case TERN_TLS_ALERT_HANDSHAKE_FAILURE:
        return "handshake_failure";
    case TERN_TLS_ALERT_BAD_CERTIFICATE:
        return "bad_certificate";
    case TERN_TLS_ALERT_UNSUPPORTED_CERTIFICATE:
        return "unsupported_certificate";
    case TERN_TLS_ALERT_CERTIFICATE_REVOKED:
        return "certificate_revoked";
    case TERN_TLS_ALERT_CERTIFICATE_EXPIRED:
        return "certificate_expired";
    case TERN_TLS_ALERT_CERTIFICATE_UNKNOWN:
        return "certificate_unknown";
    case TERN_TLS_ALERT_ILLEGAL_PARAMETER:
        return "illegal_parameter";
    case TERN_TLS_ALERT_UNKNOWN_CA:
        return "unknown_ca";
    case TERN_TLS_ALERT_DECODE_ERROR:
        return "decode_error";
    case TERN_TLS_ALERT_DECRYPT_ERROR:
        return "decrypt_error";
    case TERN_TLS_ALERT_PROTOCOL_VERSION:
        return "protocol_version";
    case TERN_TLS_ALERT_INSUFFICIENT_SECURITY:
        return "insufficient_security";
    case TERN_TLS_ALERT_INTERNAL_ERROR:
        return "internal_error";
    case TERN_TLS_ALERT_INAPPROPRIATE_FALLBACK:
        return "inappropriate_fallback";
    case TERN_TLS_ALERT_MISSING_EXTENSION:
        return "missing_extension";
    case TERN_TLS_ALERT_UNRECOGNIZED_NAME:
        return "unrecognized_name";
    case TERN_TLS_ALERT_CERTIFICATE_REQUIRED:
        return "certificate_required";
    case TERN_TLS_ALERT_NO_APPLICATION_PROTOCOL:
        return "no_application_protocol";
    default:
        return "alert";
    }
}

bool tern_tls_alert_refuses_certificate(int code)
{
    return code == TERN_TLS_ALERT_BAD_CERTIFICATE ||
           code == TERN_TLS_ALERT_UNSUPPORTED_CERTIFICATE ||
           code == TERN_TLS_ALERT_CERTIFICATE_EXPIRED ||
           code == TERN_TLS_ALERT_CERTIFICATE_UNKNOWN || code == TERN_TLS_ALERT_UNKNOWN_CA;
}

/* Append s to err at *len, keeping the NUL and never overflowing. */
static void append(char *err, size_t size, size_t *len, const char *s)
{
    while (*s != '\0' && *len + 1 < size)
        err[(*len)++] = *s++;
    err[*len] = '\0';
}

void tls_message(char *err, size_t size, const char *a, const char *b, int code)
{
    char digits[16];
    size_t len = 0, n = 0;
    unsigned v;

    if (err == NULL || size == 0)
        return;
    err[0] = '\0';
    append(err, size, &len, a);
    append(err, size, &len, b);
    if (code == 0)
        return;
    /* " (wolfSSL -NNN)"; wolfSSL's codes are small negative numbers. */
    v = code < 0 ? 0u - (unsigned)code : (unsigned)code;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0 && n < sizeof digits - 2);
    if (code < 0)
        digits[sizeof digits - 1 - n++] = '-';
    append(err, size, &len, " (wolfSSL ");
    for (size_t i = sizeof digits - n; i < sizeof digits; i++) {
        char one[2] = {digits[i], '\0'};

        append(err, size, &len, one);
    }
    append(err, size, &len, ")");
}

/* code in decimal, appended. */
static void append_int(char *buf, size_t size, size_t *len, int code)
{
    char digits[16];
    size_t n = 0;
    unsigned v = code < 0 ? 0u - (unsigned)code : (unsigned)code;

    do {
        digits[sizeof digits - 2 - n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0 && n < sizeof digits - 3);
    if (code < 0)
        digits[sizeof digits - 2 - n++] = '-';
    digits[sizeof digits - 1] = '\0';
    append(buf, size, len, digits + sizeof digits - 1 - n);
}

void tern_tls_describe_failure(const tern_tls_conn *c, char *buf, size_t size)
{
    tern_tls_failure f = tern_tls_failure_of(c);
    int alert = tern_tls_peer_alert(c), code = tern_tls_error_code(c);
    size_t len = 0;

    if (buf == NULL || size == 0)
        return;
    buf[0] = '\0';
    append(buf, size, &len, tern_tls_failure_text(f));
    if (f == TERN_TLS_FAIL_PEER_ALERT && alert >= 0) {
        append(buf, size, &len, " (");
        append(buf, size, &len, tern_tls_alert_text(alert));
        append(buf, size, &len, ")");
        if (tern_tls_alert_refuses_certificate(alert))
            append(buf, size, &len,
                   ": the client does not accept tls.cert (does it trust the CA that issued it, "
                   "and the name it connects to?)");
    } else if (code != 0) {
        append(buf, size, &len, " (");
        append_int(buf, size, &len, code);
        append(buf, size, &len, ")");
    }
}
