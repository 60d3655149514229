/*
 * identity.c - who a client certificate names, and which names are
 * operators (SPEC C3).
 *
 * The identity is the subject CN by default, or the subjectAltName of a
 * configured type (DNS, email, URI); a certificate with none has no
 * identity, one with two CNs or two of that type an ambiguous one, and
 * either is refused. It becomes the client's MQTT user
 * name for access decisions (ACL %u) and appears in logs, so it must be text
 * the rest of the broker can trust: valid UTF-8 by MQTT's rules (no U+0000,
 * no surrogates), no control characters, at most TERN_TLS_IDENTITY_MAX
 * bytes. A certificate whose field breaks these rules is refused rather
 * than cleaned up: two different certificates must never map to the same
 * identity.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/wolfcrypt/asn.h>
#include <wolfssl/wolfcrypt/asn_public.h>

/* subject_cn() reads DecodedCert.subjectRaw, which wolfSSL keeps unless
 * name constraints are ignored (both tern builds keep them). */
#if defined(IGNORE_NAME_CONSTRAINTS) && !defined(WOLFSSL_CERT_EXT)
#error "wolfSSL without DecodedCert.subjectRaw: the CN identity cannot be checked"
#endif

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

/* DER element at *pos of buf (end bytes): one tag byte (low tag numbers:
 * all a Name holds) and a definite length; its content starts at *start and
 * is *len bytes, and *pos moves past it. False when it does not fit. */
static bool der_elem(const uint8_t *buf, size_t end, size_t *pos, uint8_t *tag,
                     size_t *start, size_t *len)
{
    size_t p = *pos, n;

    if (p > end || end - p < 2 || (buf[p] & 0x1fu) == 0x1fu)
        return false;
    *tag = buf[p];
    n = buf[p + 1];
    p += 2;
    if (n & 0x80u) {
        size_t k = n & 0x7fu;

        if (k == 0 || k > sizeof(uint32_t) || end - p < k)
            return false; /* indefinite (BER) or absurd */
        n = 0;
        while (k-- > 0)
            n = (n << 8) | buf[p++];
    }
    if (end - p < n)
        return false;
    *start = p;
    *len = n;
    *pos = p + n;
    return true;
}

/*
 * The CN attributes (2.5.4.3) of a subject Name: the content of its
 * SEQUENCE, a SEQUENCE OF RDN, each a SET OF AttributeTypeAndValue
 * (SEQUENCE { type OID, value }). Counts them all, in every RDN,
 * multi-valued ones too; the value of the last one found goes to *value,
 * *value_len (the string's content, whatever its string type). -1 when the
 * bytes are not such a Name.
 *
 * Why walk the DER here: wolfSSL's DecodedCert keeps only the last CN of the
 * subject (subjectCN is overwritten for each), so "CN=alice, CN=bob" reads
 * as bob there, and its API for a name's entries (wolfSSL_X509_NAME_*) needs
 * OPENSSL_EXTRA, which neither the daemon's wolfSSL build nor the kernel's
 * has. The subject's bytes (subjectRaw) are all it gives; wolfSSL has parsed
 * them already, so this only counts.
 */
static int subject_cn_count(const uint8_t *name, size_t name_len, const uint8_t **value,
                            size_t *value_len)
{
    static const uint8_t cn_oid[3] = {0x55, 0x04, 0x03};
    size_t pos = 0;
    int count = 0;

    while (pos < name_len) {
        size_t set_start, set_len, set_pos;
        uint8_t tag;

        if (!der_elem(name, name_len, &pos, &tag, &set_start, &set_len) || tag != 0x31)
            return -1; /* not a SET: not an RDN */
        set_pos = set_start;
        while (set_pos < set_start + set_len) {
            size_t atv_start, atv_len, atv_pos, oid_start, oid_len, v_start, v_len;
            size_t atv_end;

            if (!der_elem(name, set_start + set_len, &set_pos, &tag, &atv_start, &atv_len) ||
                tag != 0x30)
                return -1;
            atv_pos = atv_start;
            atv_end = atv_start + atv_len;
            if (!der_elem(name, atv_end, &atv_pos, &tag, &oid_start, &oid_len) || tag != 0x06 ||
                !der_elem(name, atv_end, &atv_pos, &tag, &v_start, &v_len))
                return -1;
            if (oid_len == sizeof cn_oid && memcmp(name + oid_start, cn_oid, oid_len) == 0) {
                if (count == INT_MAX)
                    return -1;
                count++;
                *value = name + v_start;
                *value_len = v_len;
            }
        }
    }
    return count;
}

/* The subject's one CN, as wolfSSL decoded it: TERN_TLS_FAIL_NONE with it
 * in *name, *name_len (checked as text by the caller); NO_IDENTITY when the
 * subject has no CN or an empty one; AMBIGUOUS_IDENTITY when it has more
 * than one CN attribute, whatever their values (two equal ones too: "exactly
 * one" leaves nothing to argue about); BAD_CERT when its bytes are not a
 * Name. */
static tern_tls_failure subject_cn(const DecodedCert *dc, const char **name, size_t *name_len)
{
    const uint8_t *value = NULL;
    size_t value_len = 0;
    int n;

    *name = NULL;
    *name_len = 0;
    if (dc->subjectRaw == NULL || dc->subjectRawLen < 0)
        return TERN_TLS_FAIL_BAD_CERT;
    n = subject_cn_count(dc->subjectRaw, (size_t)dc->subjectRawLen, &value, &value_len);
    if (n < 0)
        return TERN_TLS_FAIL_BAD_CERT;
    if (n > 1)
        return TERN_TLS_FAIL_AMBIGUOUS_IDENTITY;
    if (n == 0 || value_len == 0)
        return TERN_TLS_FAIL_NO_IDENTITY;
    /* The one CN this walk found must be the one wolfSSL kept: if they
     * ever disagree about what a CN is, refuse rather than guess. */
    if (dc->subjectCN == NULL || dc->subjectCNLen < 0 ||
        (size_t)dc->subjectCNLen != value_len || memcmp(dc->subjectCN, value, value_len) != 0)
        return TERN_TLS_FAIL_NO_IDENTITY;
    *name = dc->subjectCN;
    *name_len = value_len;
    return TERN_TLS_FAIL_NONE;
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

_Static_assert(KEYID_SIZE <= TLS_NAME_HASH, "TLS_NAME_HASH is shorter than wolfSSL's KEYID_SIZE");

tern_tls_failure tls_identity_from_der(const uint8_t *der, size_t len,
                                       tern_tls_identity_source src,
                                       const tern_tls_allocator *a, char **out,
                                       uint8_t issuer_hash[TLS_NAME_HASH])
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
    if (issuer_hash != NULL) {
        memset(issuer_hash, 0, TLS_NAME_HASH);
        memcpy(issuer_hash, dc->issuerHash, KEYID_SIZE);
    }
    if (src == TERN_TLS_IDENTITY_CN) {
        tern_tls_failure f = subject_cn(dc, &name, &name_len);

        if (f != TERN_TLS_FAIL_NONE) {
            result = f;
            goto done;
        }
    } else {
        /* Exactly one SAN of the type: with two, which one is "the"
         * identity would depend on wolfSSL's list order (it is not the
         * certificate's), so such a certificate is refused. Email SANs
         * (rfc822Name) sit on a list of their own in this build; both lists
         * are searched so another build's layout works too. The subject's
         * CNs are not the identity here, so how many there are does not
         * matter (CN=alice, CN=bob with one DNS SAN is that SAN). */
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
        if (found > 1) {
            result = TERN_TLS_FAIL_AMBIGUOUS_IDENTITY;
            goto done;
        }
    }
    if (name == NULL || !identity_text_ok(name, name_len))
        goto done;
    *out = tls_mem_zalloc(a, name_len + 1);
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

bool tls_operators_set(tern_tls_server *s, const char *list, const char *prefix, char *err,
                       size_t err_size)
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
        tls_message(err, err_size, prefix, "out of memory", 0);
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
            tls_message(err, err_size, prefix,
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
