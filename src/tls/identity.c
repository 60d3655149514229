/*
 * identity.c - who a client certificate names, and which names are
 * operators (SPEC C3).
 *
 * The identity is the subject CN by default, or the subjectAltName of a
 * configured type (DNS, email, URI); a certificate with none, or with two of
 * that type, has no identity. It becomes the client's MQTT user
 * name for access decisions (ACL %u) and appears in logs, so it must be text
 * the rest of the broker can trust: valid UTF-8 by MQTT's rules (no U+0000,
 * no surrogates), no control characters, at most TERN_TLS_IDENTITY_MAX
 * bytes. A certificate whose field breaks these rules is refused rather
 * than cleaned up: two different certificates must never map to the same
 * identity.
 */
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/wolfcrypt/asn.h>
#include <wolfssl/wolfcrypt/asn_public.h>

#include "mqtt/mqtt.h"

static bool identity_text_ok(const char *s, size_t len)
{
    if (len == 0 || len > TERN_TLS_IDENTITY_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (ch < 0x20 || ch == 0x7f)
            return false; /* includes NUL: "admin\0.evil" must not pass as "admin" */
    }
    return mqtt_utf8_valid((const uint8_t *)s, len);
}

static int san_type(tern_tls_identity_source src)
{
    switch (src) {
    case TERN_TLS_IDENTITY_SAN_DNS:
        return ASN_DNS_TYPE;
    case TERN_TLS_IDENTITY_SAN_EMAIL:
        return ASN_RFC822_TYPE;
    case TERN_TLS_IDENTITY_SAN_URI:
        return ASN_URI_TYPE;
    case TERN_TLS_IDENTITY_CN:
        break;
    }
    return -1;
}

tern_tls_failure tls_identity_from_der(const uint8_t *der, size_t len,
                                       tern_tls_identity_source src, char **out)
{
    /* DecodedCert is over a kilobyte: on the heap, for small kernel stacks. */
    DecodedCert *dc = NULL;
    tern_tls_failure result = TERN_TLS_FAIL_NO_IDENTITY;
    const char *name = NULL;
    size_t name_len = 0;

    *out = NULL;
    if (len > UINT32_MAX)
        return TERN_TLS_FAIL_BAD_CERT;
    dc = malloc(sizeof *dc);
    if (dc == NULL)
        return TERN_TLS_FAIL_OUT_OF_MEMORY;
    /* The handshake verified this certificate already; this only reads it. */
    wc_InitDecodedCert(dc, der, (word32)len, NULL);
    if (wc_ParseCert(dc, CERT_TYPE, NO_VERIFY, NULL) != 0) {
        result = TERN_TLS_FAIL_BAD_CERT;
        goto done;
    }
    if (src == TERN_TLS_IDENTITY_CN) {
        if (dc->subjectCN != NULL && dc->subjectCNLen > 0) {
            name = dc->subjectCN;
            name_len = (size_t)dc->subjectCNLen;
        }
    } else {
        /* Exactly one SAN of the type: with two, which one is "the"
         * identity would depend on wolfSSL's list order (it is not the
         * certificate's), so such a certificate is refused. Email SANs
         * (rfc822Name) sit on a list of their own in this build; both lists
         * are searched so another build's layout works too. */
        const DNS_entry *lists[2] = {dc->altNames, dc->altEmailNames};
        size_t found = 0;

        for (size_t l = 0; l < 2; l++) {
            for (const DNS_entry *e = lists[l]; e != NULL; e = e->next) {
                if (e->type == san_type(src) && e->name != NULL && e->len > 0 &&
                    found++ == 0) {
                    name = e->name;
                    name_len = (size_t)e->len;
                }
            }
        }
        if (found > 1)
            name = NULL;
    }
    if (name == NULL || !identity_text_ok(name, name_len))
        goto done;
    *out = malloc(name_len + 1);
    if (*out == NULL) {
        result = TERN_TLS_FAIL_OUT_OF_MEMORY;
        goto done;
    }
    memcpy(*out, name, name_len);
    (*out)[name_len] = '\0';
    result = TERN_TLS_FAIL_NONE;
done:
    wc_FreeDecodedCert(dc);
    free(dc);
    return result;
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

bool tls_operators_set(tern_tls_server *s, const char *list, char *err, size_t err_size)
{
    size_t list_len, used = 0;
    const char *p;
    bool ok = false;

    s->operators = NULL;
    s->operators_len = 0;
    if (list == NULL || list[0] == '\0')
        return true;
    list_len = strlen(list);
    /* Each item is at most as long as the list; one NUL per item replaces
     * its comma (the last gets one extra byte). */
    s->operators = malloc(list_len + 1);
    if (s->operators == NULL) {
        tls_message(err, err_size, "operators: ", "out of memory", 0);
        return false;
    }
    p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        const char *a = p, *b = end != NULL ? end : p + strlen(p);

        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        if (!identity_text_ok(a, (size_t)(b - a))) {
            tls_message(err, err_size, "operators: ",
                        a == b ? "empty identity in the list"
                               : "an identity is too long or not printable UTF-8",
                        0);
            goto done;
        }
        memcpy(s->operators + used, a, (size_t)(b - a));
        used += (size_t)(b - a);
        s->operators[used++] = '\0';
        if (end == NULL)
            break;
        p = end + 1;
    }
    s->operators_len = used;
    ok = true;
done:
    if (!ok) {
        free(s->operators);
        s->operators = NULL;
    }
    return ok;
}

bool tls_operator_listed(const tern_tls_server *s, const char *identity)
{
    size_t pos = 0;

    if (identity == NULL)
        return false;
    while (pos < s->operators_len) {
        const char *item = s->operators + pos;

        if (strcmp(item, identity) == 0)
            return true;
        pos += strlen(item) + 1;
    }
    return false;
}
